"""Conversions between Python values and ClassAd expressions, under the names callers use.

``to_expr`` turns what a caller assigns into an ``Expr``; ``value_node`` gives a value's literal node;
``constant_value`` is the inverse used by ``ClassAd.__getitem__``.  They live beside the classes they
build (``_classad``, ``_nodes``); this module only gathers them.
"""

from __future__ import annotations

__all__ = ["constant_value", "to_expr", "value_node"]

from ._classad import constant_value, to_expr
from ._nodes import value_node
