"""HTCondor's value conversions (``convertValueTo{String,Integer,Real}Value``), used by the
conversion functions and by every built-in that accepts "anything that converts".

To string: booleans ``true``/``false``, reals as ``%.15E`` (``0.0`` for zero), lists and ads in the
compact unparsed form (``{ 1,2 }``, ``[ a = 1; b = 2 ]``), times in their text form.  To integer and
real: strings are read like C ``strtod`` (longest numeric prefix, leading blanks, hex, ``inf``,
``nan``; nothing numeric is ``ERROR``), reals truncate toward zero, and anything out of the 64-bit
range becomes the most negative integer (what the cast does on x86).  Relative times convert to whole
seconds.  UNDEFINED stays UNDEFINED; lists, ads and ERROR are ERROR.
"""

from __future__ import annotations

__all__ = ["c_int", "strtod", "to_int", "to_real", "to_string"]

import math
import re
from typing import Any, Final

from ._nodes import value_node
from ._timetext import format_abstime, format_reltime
from ._unparse import unparse_compact
from ._values import ERROR, UNDEFINED, AbsTime, RelTime, c_int32

Value = Any
_INT_MIN: Final = -(1 << 63)
_STRTOD: Final = re.compile(
    r"\s*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.IGNORECASE | re.ASCII)  # C's digits


def strtod(text: str) -> float | None:
    """The number at the start of ``text`` as C's strtod reads it, or None."""
    m = _STRTOD.match(text)
    if m is None:
        return None
    number = m.group(1)
    if "x" in number.lower() and "n" not in number.lower():
        sign = -1.0 if number.startswith("-") else 1.0
        body = number.lstrip("+-")
        if "p" not in body.lower():
            body += "p0"
        return sign * float.fromhex(body)
    return float(number)


def c_int(value: float) -> int:
    """C's ``(long long)`` cast of a double on x86: truncation, out of range -> INT64_MIN."""
    if math.isnan(value) or value in (math.inf, -math.inf):
        return _INT_MIN
    result = int(value)
    return result if -(1 << 63) <= result < (1 << 63) else _INT_MIN


def to_string(value: Value) -> Value:
    kind = type(value)
    if kind is str or value is UNDEFINED or value is ERROR:
        return value
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is AbsTime:
        return format_abstime(value.secs, value.offset)
    if kind is RelTime:  # through a 64-bit time_t first, as HTCondor's string() takes it
        return format_reltime(float(c_int(value.secs)))
    node = getattr(value, "node", None)  # a list literal prints its source, as HTCondor does
    return unparse_compact(node if node is not None else value_node(value))


def to_int(value: Value) -> Value:
    kind = type(value)
    if kind is int:
        return value
    if kind is bool:
        return int(value)
    if kind is float:
        return c_int(value)
    if kind is str:
        number = strtod(value)
        return ERROR if number is None else c_int(number)
    if kind is AbsTime:
        return int(value.secs)
    if kind is RelTime:
        return c_int32(value.secs)
    return UNDEFINED if value is UNDEFINED else ERROR


def to_real(value: Value) -> Value:
    kind = type(value)
    if kind is float:
        return value
    if kind is int or kind is bool:
        return float(value)
    if kind is str:
        number = strtod(value)
        return ERROR if number is None else number
    if kind is AbsTime:
        return float(value.secs)
    if kind is RelTime:
        return float(c_int32(value.secs))
    return UNDEFINED if value is UNDEFINED else ERROR
