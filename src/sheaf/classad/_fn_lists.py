"""List built-ins: ``size``, ``sum``, ``avg``, ``min``, ``max``, ``member``, ``identicalMember``,
``anyCompare``, ``allCompare``, ``evalInEachContext``, ``countMatches``.

Quirks kept from HTCondor: ``sum`` and ``avg`` of ``{}`` are integer 0 (``avg`` sets UNDEFINED, then
overwrites it); ``min``/``max`` of ``{}`` are UNDEFINED; numbers only (a boolean element is ERROR);
``anyCompare`` stops at the first comparison that is UNDEFINED and answers false.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._functions import builtin, strict
from ._ops import BINARY, compare, identical
from ._values import ERROR, UNDEFINED

Value = Any
Fn = Callable[[Any, Any], Value]


@strict("size")
def size(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    value = args[0]
    if type(value) in (list, str):
        return len(value)
    if hasattr(value, "_ex"):
        return len(value)
    return UNDEFINED if value is UNDEFINED else ERROR


def _numbers(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    items = args[0]
    if items is UNDEFINED:
        return UNDEFINED
    if type(items) is not list:
        return ERROR
    for item in items:
        if type(item) is not int and type(item) is not float:
            return ERROR
    return items


def _sum(items: list[Value]) -> Value:
    total: Value = 0
    for i, item in enumerate(items):
        total = item if i == 0 else BINARY["+"](total, item)
    return total


@strict("sum")
def sum_(args: list[Value]) -> Value:
    items = _numbers(args)
    return _sum(items) if type(items) is list else items


@strict("avg")
def avg(args: list[Value]) -> Value:
    items = _numbers(args)
    if type(items) is not list:
        return items
    total = _sum(items)
    return BINARY["/"](total, float(len(items))) if items else total


def _bound(op: str) -> Callable[[list[Value]], Value]:
    def bound(args: list[Value]) -> Value:
        items = _numbers(args)
        if type(items) is not list:
            return items
        best: Value = UNDEFINED
        for i, item in enumerate(items):
            if i == 0 or compare(op, item, best) is True:
                best = item
        return best
    return bound


strict("min")(_bound("<"))
strict("max")(_bound(">"))


def _member(identical_test: bool) -> Callable[[list[Value]], Value]:
    def member(args: list[Value]) -> Value:
        if len(args) != 2:
            return ERROR
        needle, items = args
        if items is UNDEFINED or (not identical_test and needle is UNDEFINED):
            return UNDEFINED
        if type(items) is not list or type(needle) is list or hasattr(needle, "_ex"):
            return ERROR
        if not identical_test and needle is ERROR:
            return ERROR
        for item in items:
            if (identical(item, needle) if identical_test else _equal(item, needle)) is True:
                return True
        return False
    return member


def _equal(a: Value, b: Value) -> Value:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return compare("==", a, b)


strict("member")(_member(False))
strict("identicalMember")(_member(True))

_COMPARISONS = {"<", "<=", "!=", "==", ">", ">=", "is", "isnt"}


def _operate(op: str, a: Value, b: Value) -> Value:
    if op == "is":
        return identical(a, b)
    if op == "isnt":
        result = identical(a, b)
        return result if result is ERROR else not result
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return compare(op, a, b)


def _list_compare(need_all: bool) -> Callable[[list[Value]], Value]:
    def list_compare(args: list[Value]) -> Value:
        if len(args) != 3:
            return ERROR
        op, items, other = args
        if op is UNDEFINED:
            return UNDEFINED
        if type(op) is not str or op not in _COMPARISONS:
            return ERROR
        if items is UNDEFINED:
            return UNDEFINED
        if type(items) is not list:
            return ERROR
        for item in items:
            result = _operate(op, item, other)
            if type(result) is not bool:
                return ERROR if result is ERROR else False
            if result is not need_all:
                return result
        return need_all
    return list_compare


strict("anyCompare")(_list_compare(False))
strict("allCompare")(_list_compare(True))


def _in_each_context(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    """The values of args[0] evaluated inside each ad of the list args[1] (None when not a list)."""
    items = args[1](env, scope)
    if items is UNDEFINED or items is ERROR:
        return items
    if type(items) is not list:
        return ERROR
    results = []
    for item in items:
        if not hasattr(item, "_ex"):
            results.append(ERROR if item is not UNDEFINED else UNDEFINED)
            continue
        results.append(args[0](env, item))
    return results


@builtin("evalInEachContext")
def eval_in_each_context(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    return ERROR if len(args) != 2 else _in_each_context(env, scope, args)


@builtin("countMatches")
def count_matches(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    if len(args) != 2:
        return ERROR
    results = _in_each_context(env, scope, args)
    if type(results) is not list:
        return results
    return sum(1 for result in results if result is True)
