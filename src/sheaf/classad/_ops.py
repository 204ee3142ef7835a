"""Operator semantics, one small function per operator, as HTCondor's ``operators.cpp`` defines them.

Strictness: every operator except ``&&``, ``||``, ``?:``, elvis, ``is`` and ``isnt`` is strict --
``ERROR`` in, ``ERROR`` out, then ``UNDEFINED`` in, ``UNDEFINED`` out (error wins).  The helpers here
receive values that are neither; ``_eval`` checks strictness before calling them.

Coercions (measured against the official library): booleans count as integers in arithmetic and
comparison (``true + 1`` is 2, ``true == 1`` is true) but not in unary minus/plus nor in bit
operators; integers and reals promote to real; a real result that overflows to infinity is ``ERROR``
(``1e308 * 10``; oddly not negative infinity, ``-1.0/0.0`` is ``-inf``), while ``0.0/0`` is NaN;
integer ``/`` and ``%`` truncate toward zero like C, by zero they are ``ERROR``; ``%`` on reals is
``ERROR``; shift counts are taken modulo 64 (right shifts of negative numbers follow the official
library's own rules, see ``bitwise``).  Strings compare without regard to ASCII case for
``== != < <= > >=``; ``is``/``isnt`` compare exactly and by type.
Times: absolute +/- relative, relative +/- relative, absolute - absolute, relative * / number (a
relative time over zero is an infinite one, or NaN for zero over zero: C's double division).
"""

from __future__ import annotations

__all__ = ["BINARY", "UNARY", "ascii_lower", "identical"]

import functools
import math
from collections.abc import Callable
from typing import Any, Final

from ._values import ERROR, AbsTime, ListValue, RelTime, SelectedList, SharedListValue, c_int32, wrap

Value = Any
_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 63) - 1
_MASK: Final = (1 << 64) - 1
_NUMERIC: Final = (int, float, bool)


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as C's ``tolower`` in HTCondor's ``strcasecmp``."""
    if text.isascii():
        return text.lower()
    return "".join(c.lower() if c.isascii() else c for c in text)


def _real(value: float) -> Value:
    return ERROR if value == math.inf else value  # only +inf: the official library lets -inf through


def _time_arith(op: str, a: Value, b: Value) -> Value:
    ta, tb = type(a), type(b)
    if op == "+":
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs + c_int32(b.secs), a.offset)
        if ta is RelTime and tb is AbsTime:
            return AbsTime(c_int32(a.secs) + b.secs, b.offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(a.secs + b.secs)
    elif op == "-":
        if ta is AbsTime and tb is AbsTime:
            return RelTime(a.secs - b.secs)
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs - c_int32(b.secs), a.offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(a.secs - b.secs)
    elif op == "*":
        if ta is RelTime and tb in _NUMERIC and tb is not bool:
            return RelTime(a.secs * b)
        if tb is RelTime and ta in _NUMERIC and ta is not bool:
            return RelTime(a * b.secs)
    elif op == "/" and ta is RelTime and tb in _NUMERIC and tb is not bool:
        return RelTime(_ieee_divide(a.secs, b))  # a time over zero is infinite, as in HTCondor
    return ERROR


def _int_div(a: int, b: int) -> Value:
    if b == 0:
        return ERROR
    if a == _INT_MIN and b == -1:
        return _INT_MAX
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a: int, b: int) -> Value:
    if b == 0:
        return ERROR
    if b == -1:
        return 0
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _ieee_divide(a: float, b: float) -> float:
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _real_div(a: float, b: float) -> Value:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return ERROR if (a > 0) == (math.copysign(1.0, b) > 0) else -math.inf
    return _real(a / b)


def arith(op: str, a: Value, b: Value) -> Value:
    """``+ - * / %`` on two values that are neither UNDEFINED nor ERROR."""
    ta, tb = type(a), type(b)
    if ta not in _NUMERIC or tb not in _NUMERIC:
        return _time_arith(op, a, b)
    if ta is not float and tb is not float:
        a, b = int(a), int(b)
        if op == "+":
            return wrap(a + b)
        if op == "-":
            return wrap(a - b)
        if op == "*":
            return wrap(a * b)
        return _int_div(a, b) if op == "/" else _int_mod(a, b)
    a, b = float(a), float(b)
    if op == "+":
        return _real(a + b)
    if op == "-":
        return _real(a - b)
    if op == "*":
        return _real(a * b)
    return _real_div(a, b) if op == "/" else ERROR


def _order_key(a: Value, b: Value) -> tuple[Value, Value] | None:
    ta, tb = type(a), type(b)
    if ta in _NUMERIC and tb in _NUMERIC:
        return a, b
    if ta is str and tb is str:
        return ascii_lower(a), ascii_lower(b)
    if ta is tb and (ta is AbsTime or ta is RelTime):
        return a.secs, b.secs
    return None


def compare(op: str, a: Value, b: Value) -> Value:
    """``== != < <= > >=`` on two values that are neither UNDEFINED nor ERROR."""
    keys = _order_key(a, b)
    if keys is None:
        return ERROR
    x, y = keys
    if op == "==":
        return x == y
    if op == "!=":
        return x != y
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    return x >= y


_LISTS = (ListValue, SelectedList)


def _literal_kind(value: list[Value]) -> bool:
    return isinstance(value, _LISTS) and not isinstance(value, SharedListValue)


def identical(a: Value, b: Value) -> Value:
    """``is``: same type and same value, strings case-sensitive; two lists or ads are ERROR."""
    ta = type(a)
    if isinstance(a, list) and isinstance(b, list):
        # two lists are ERROR, except a literal list (or a selection from a list) against one a
        # built-in made: false (HTCondor's LIST and SLIST values are different types)
        return ERROR if _literal_kind(a) == _literal_kind(b) else False
    if _is_ad(a) and _is_ad(b):
        return ERROR
    if ta is not type(b):
        return False
    return a == b  # an absTime is its seconds and its offset: the same instant elsewhere is not identical


def _is_ad(value: Value) -> bool:
    return hasattr(value, "_ex")


def bitwise(op: str, a: Value, b: Value) -> Value:
    """``& | ^ << >> >>>`` on integers (booleans and reals are ERROR)."""
    if type(a) is not int or type(b) is not int:
        return ERROR
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    count = b & 63
    if op == "<<":
        return wrap(a << count)
    if a >= 0:
        return a >> count  # x86 semantics: the count is taken modulo 64
    # A negative left operand takes other paths in the official library (measured):
    if op == ">>":
        return a if b < 0 else -1 if b >= 64 else a >> b
    return (a >> count) & ~wrap(-1 << ((64 - b) & 63))


def negate(a: Value) -> Value:
    ta = type(a)
    if ta is int:
        return wrap(-a)
    if ta is float:
        return -a
    if ta is RelTime:
        return RelTime(-a.secs)
    return ERROR


def plus(a: Value) -> Value:
    return a if type(a) in (int, float, RelTime) else ERROR


def logical_not(a: Value) -> Value:
    ta = type(a)
    if ta is bool:
        return not a
    if ta is int or ta is float:
        return a == 0
    return ERROR


def complement(a: Value) -> Value:
    return ~a if type(a) is int else ERROR


def _binary_table() -> dict[str, Callable[[Value, Value], Value]]:
    table: dict[str, Callable[[Value, Value], Value]] = {}
    families: tuple[tuple[Callable[[str, Value, Value], Value], tuple[str, ...]], ...] = (
        (arith, ("+", "-", "*", "/", "%")), (compare, ("==", "!=", "<", "<=", ">", ">=")),
        (bitwise, ("&", "|", "^", "<<", ">>", ">>>")))
    for family, ops in families:
        for op in ops:
            table[op] = functools.partial(family, op)
    return table


BINARY: Final = _binary_table()
UNARY: Final[dict[str, Callable[[Value], Value]]] = {
    "-": negate, "+": plus, "!": logical_not, "~": complement,
}
