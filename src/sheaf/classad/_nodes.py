"""The syntax tree's values: node tuples of constants, and Python values turned into nodes.

``const_of`` is the value of a node that is a constant (``NOT_CONSTANT`` otherwise); ``value_node``
turns a Python value into its literal node.  Negative numbers are literals, as the lexer reads
``-5``, so that ``parse(unparse(e)) == e`` holds for assigned values too.  An ad is recognised by
what it holds (``_ex`` and ``_names``), so this module needs no ad class.
"""

from __future__ import annotations

__all__ = ["NOT_CONSTANT", "Node", "const_of", "value_node"]

import datetime
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ._values import ERROR, UNDEFINED, AbsTime, RelTime, text_of_bytes

Node = tuple[Any, ...]
NOT_CONSTANT: Final = object()
_CONSTANT_KINDS: Final = {"int": None, "real": None, "str": None, "bool": None}


def const_of(node: Node) -> Any:
    """The value of a constant leaf (``NOT_CONSTANT`` for anything else)."""
    kind = node[0]
    if kind in _CONSTANT_KINDS:
        return node[1]
    if kind == "undef":
        return UNDEFINED
    if kind == "error":
        return ERROR
    if kind == "abstime":
        return AbsTime(node[2], node[3])
    if kind == "reltime":
        # HTCondor quirk: a relTime("...") literal is a *real* number of seconds (isReal is true,
        # getSeconds is ERROR); only its spelling remembers it was a time.
        return float(node[2])
    if kind == "un" and node[1] == "-" and node[2][0] in ("int", "real") and node[2][1] != (1 << 63):
        return -node[2][1]  # what a negative number assigned from Python becomes
    return NOT_CONSTANT


def _number(kind: str, value: Any) -> Node:
    return (kind, value)  # negative numbers are literals too (the lexer reads "-5" as one token)


def value_node(value: Any) -> Node:
    """The literal node of a Python value (TypeError for what no ClassAd value corresponds to)."""
    if value is None or value is UNDEFINED:
        return ("undef",)
    if value is ERROR:
        return ("error",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < 1 << 63:
            raise OverflowError(f"{value} is outside a ClassAd integer's 64 bits")
        return _number("int", value)
    if isinstance(value, float):
        return _real_node(value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes):  # as classad2 takes them: a string of those bytes
        return ("str", text_of_bytes(value))
    if isinstance(value, datetime.datetime):
        # the instant in whole seconds (a naive datetime is local time), offset 0: what classad2 makes
        return ("abstime", "absTime", value.replace(microsecond=0).timestamp(), 0)
    if isinstance(value, AbsTime):
        return ("abstime", "absTime", value.secs, value.offset)
    if isinstance(value, RelTime):
        return ("call", "relTime", (_number("real", float(value.secs)),))
    if hasattr(value, "_ex") and hasattr(value, "_names"):  # a ClassAd: its expressions, unevaluated
        return ("ad", tuple((value._names[k], e.node) for k, e in value._ex.items()))
    if isinstance(value, Mapping):  # as classad2 makes one: an empty name is left out
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"a nested ad's names are strings, not {value!r}")
        return ("ad", tuple((k, value_node(v)) for k, v in value.items() if k))
    if isinstance(value, Iterable):  # any other iterable is a list (a bytearray one of its bytes)
        return ("list", tuple(value_node(v) for v in value))
    raise TypeError(f"no ClassAd value corresponds to {type(value).__name__} {value!r}")


def _real_node(value: float) -> Node:
    if math.isnan(value):
        return ("call", "real", (("str", "NaN"),))
    if math.isinf(value):
        return ("call", "real", (("str", "INF" if value > 0 else "-INF"),))
    return _number("real", value)
