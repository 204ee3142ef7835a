"""Conversions between Python values and ClassAd literal nodes.

``to_expr`` turns what a caller assigns into an ``Expr``; negative numbers are literals, as the lexer
reads ``-5``, so that ``parse(unparse(e)) == e`` holds for assigned values too.  ``constant_value`` is
the inverse for ``ClassAd.__getitem__``: a node that is a constant (possibly a list or ad of constants)
comes back as a Python value.
"""

from __future__ import annotations

__all__ = ["constant_value", "to_expr", "value_node"]

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._expr import NOT_CONSTANT, Expr
from ._values import ERROR, UNDEFINED, AbsTime, RelTime

if TYPE_CHECKING:
    from ._classad import ClassAd

Node = tuple[Any, ...]


def to_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    return Expr(value_node(value))


def _number(kind: str, value: Any) -> Node:
    return (kind, value)  # negative numbers are literals too (the lexer reads "-5" as one token)


def value_node(value: Any) -> Node:
    """The literal node of a Python value (TypeError for what no ClassAd value corresponds to)."""
    from ._classad import ClassAd
    if value is None or value is UNDEFINED:
        return ("undef",)
    if value is ERROR:
        return ("error",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return _number("int", value)
    if isinstance(value, float):
        if math.isnan(value):
            return ("call", "real", (("str", "NaN"),))
        if math.isinf(value):
            node: Node = ("call", "real", (("str", "INF"),))
            return node if value > 0 else ("un", "-", node)
        return _number("real", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, AbsTime):
        return ("abstime", "absTime", value.secs, value.offset)
    if isinstance(value, RelTime):
        return ("call", "relTime", (_number("real", float(value.secs)),))
    if isinstance(value, ClassAd):
        return ("ad", tuple((value._names[k], e.node) for k, e in value._ex.items()))
    if isinstance(value, Mapping):
        return ("ad", tuple((str(k), value_node(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(value_node(v) for v in value))
    raise TypeError(f"no ClassAd value corresponds to {type(value).__name__} {value!r}")


def constant_value(node: Node, scope: ClassAd | None) -> Any:
    """The value of a constant node, or NOT_CONSTANT."""
    from ._classad import ClassAd
    kind = node[0]
    if kind in ("int", "real", "str", "bool"):
        return node[1]
    if kind == "undef":
        return UNDEFINED
    if kind == "abstime":
        return AbsTime(node[2], node[3])
    if kind == "reltime":
        return float(node[2])
    if kind == "error":
        return ERROR
    if kind == "list":
        items = [constant_value(item, scope) for item in node[1]]
        return NOT_CONSTANT if any(item is NOT_CONSTANT for item in items) else items
    if kind == "ad":
        ad = ClassAd._from_node(node)
        ad._parent = scope
        return ad
    if kind == "un" and node[1] == "-" and node[2][0] in ("int", "real"):
        return -node[2][1]
    return NOT_CONSTANT
