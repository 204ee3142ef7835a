"""The non-strict operators ``&&``, ``||`` and ``c ? a : b``, and comparisons, as closures over closures.

A truth value is a boolean, or a number (non-zero is true); ``UNDEFINED`` is unknown; anything else
(a string, a list, an ad, a time) is ``ERROR``.  ``&&`` looks at its right side only when the left
is not false, ``||`` only when the left is not true; an unknown left side gives the right side's
decisive value (``undefined && false`` is false) and ``UNDEFINED`` otherwise.  The conditional needs a
known truth value: ``UNDEFINED`` and ``ERROR`` conditions pass through.
"""

from __future__ import annotations

import functools
import operator

__all__ = [
    "NUMERIC_COMPARE", "compile_compare", "compile_conditional", "compile_logical", "logical_and_values",
    "logical_or_values", "strict_apply", "truth",
]

from collections.abc import Callable
from typing import Any, Final

from ._values import ERROR, UNDEFINED

Value = Any
Fn = Callable[[Any, Any], Value]


def truth(value: Value) -> Value:
    """True/False, UNDEFINED, or ERROR."""
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or kind is float:
        return value != 0
    if value is UNDEFINED:
        return UNDEFINED
    return ERROR


def logical_and_values(first: Value, second: Callable[[], Value]) -> Value:
    a = truth(first)
    if a is ERROR or a is False:
        return a
    b = truth(second())
    if b is ERROR or b is False:
        return b
    return UNDEFINED if a is UNDEFINED else b


def logical_or_values(first: Value, second: Callable[[], Value]) -> Value:
    a = truth(first)
    if a is ERROR or a is True:
        return a
    b = truth(second())
    if b is ERROR or b is True:
        return b
    return UNDEFINED if a is UNDEFINED else b


def compile_logical(op: str, left: Fn, right: Fn) -> Fn:
    # a chain a && b && c (left-associative) becomes one loop over its operands: the same fold
    chain = (*_flatten(op, left), right)
    if len(chain) > 2:
        return _compile_chain(op, chain)
    if op == "&&":
        def logical_and(env: Any, scope: Any) -> Value:
            a = left(env, scope)
            if a is True:  # the common case first
                b = right(env, scope)
                return b if type(b) is bool else truth(b)
            return logical_and_values(a, lambda: right(env, scope))
        logical_and.chain = (left, right)  # type: ignore[attr-defined]
        logical_and.chain_op = "&&"  # type: ignore[attr-defined]
        return logical_and

    def logical_or(env: Any, scope: Any) -> Value:
        a = left(env, scope)
        if a is False:
            b = right(env, scope)
            return b if type(b) is bool else truth(b)
        return logical_or_values(a, lambda: right(env, scope))
    logical_or.chain = (left, right)  # type: ignore[attr-defined]
    logical_or.chain_op = "||"  # type: ignore[attr-defined]
    return logical_or


def _flatten(op: str, fn: Fn) -> tuple[Fn, ...]:
    operands = getattr(fn, "chain", None)
    return operands if operands is not None and getattr(fn, "chain_op", None) == op else (fn,)


def _compile_chain(op: str, operands: tuple[Fn, ...]) -> Fn:
    decisive = op == "||"  # the value that ends the chain: true for ||, false for &&
    combine = logical_or_values if decisive else logical_and_values

    def chain(env: Any, scope: Any) -> Value:
        acc = operands[0](env, scope)
        for operand in operands[1:]:
            if acc is (not decisive):  # the common case: keep going, the next operand decides
                value = operand(env, scope)
                acc = value if type(value) is bool else truth(value)
            else:
                acc = combine(acc, functools.partial(operand, env, scope))
        return acc if type(acc) is bool else truth(acc)
    chain.chain = operands  # type: ignore[attr-defined]
    chain.chain_op = op  # type: ignore[attr-defined]
    return chain


def compile_conditional(test: Fn, then: Fn, orelse: Fn) -> Fn:
    def conditional(env: Any, scope: Any) -> Value:
        value = test(env, scope)
        if value is True:
            return then(env, scope)
        if value is False:
            return orelse(env, scope)
        value = truth(value)
        if value is True:
            return then(env, scope)
        if value is False:
            return orelse(env, scope)
        return value
    return conditional


NUMERIC_COMPARE: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


def compile_compare(name: str, left: Fn, right: Fn, generic: Callable[[Value, Value], Value]) -> Fn:
    """A comparison with the common cases inline: two numbers (not booleans: they go the generic
    way, which gives the same answer), or two ASCII strings for ``==``/``!=``."""
    test = NUMERIC_COMPARE[name]
    if name in ("==", "!="):
        negate = name == "!="

        def equality(env: Any, scope: Any) -> Value:
            a = left(env, scope)
            b = right(env, scope)
            ta = type(a)
            if ta is type(b) and (ta is str or ta is int or ta is float):
                if ta is str:
                    if a.isascii() and b.isascii():
                        return (a.lower() != b.lower()) if negate else (a.lower() == b.lower())
                else:
                    return (a != b) if negate else (a == b)
            return strict_apply(generic, a, b)
        return equality

    def comparison(env: Any, scope: Any) -> Value:
        a = left(env, scope)
        b = right(env, scope)
        ta, tb = type(a), type(b)
        if (ta is int or ta is float) and (tb is int or tb is float):
            return test(a, b)
        return strict_apply(generic, a, b)
    return comparison


def strict_apply(op: Callable[[Value, Value], Value], a: Value, b: Value) -> Value:
    """A strict operator: ERROR if either side is, else UNDEFINED if either side is, else ``op``."""
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return op(a, b)
