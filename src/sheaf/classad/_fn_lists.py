"""List built-ins: ``size``, ``sum``, ``avg``, ``min``, ``max``, ``member``, ``identicalMember``,
``anyCompare``, ``allCompare``, ``evalInEachContext``, ``countMatches``.

Quirks kept from HTCondor: ``sum`` and ``avg`` of ``{}`` are integer 0 (``avg`` sets UNDEFINED, then
overwrites it); ``min``/``max`` of ``{}`` are UNDEFINED; numbers and booleans only (``sum({true})``
is ``true``, ``min`` turns booleans into integers);
``anyCompare`` stops at the first comparison that is UNDEFINED and answers false.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._builtins import Library
from ._eval import compiled
from ._fn_refs import arg_closures, referenced
from ._logic import truth
from ._ops import BINARY, compare, identical
from ._values import ERROR, UNDEFINED, RelTime, utf8

Value = Any
LIBRARY = Library()
builtin, strict = LIBRARY.builtin, LIBRARY.strict
Fn = Callable[[Any, Any], Value]


@strict("size")
def size(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    value = args[0]
    if isinstance(value, str):
        return len(value) if value.isascii() else len(utf8(value))  # HTCondor counts bytes
    if isinstance(value, list):
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
    if not isinstance(items, list):
        return ERROR
    numbers = []
    for item in items:
        if item is UNDEFINED:
            continue  # undefined elements are skipped (not counted by avg either)
        if type(item) not in (int, float, bool):
            return ERROR
        numbers.append(item)
    return numbers


def _sum(items: list[Value]) -> Value:
    total: Value = 0
    for i, item in enumerate(items):
        total = item if i == 0 else BINARY["+"](total, item)
    return total


@strict("sum")
def sum_(args: list[Value]) -> Value:
    items = _numbers(args)
    return _sum(items) if isinstance(items, list) else items


@strict("avg")
def avg(args: list[Value]) -> Value:
    items = _numbers(args)
    if not isinstance(items, list):
        return items
    total = _sum(items)
    return BINARY["/"](total, float(len(items))) if items else total


def _bound(op: str) -> Callable[[list[Value]], Value]:
    def bound(args: list[Value]) -> Value:
        items = _numbers(args)
        if not isinstance(items, list):
            return items
        best: Value = UNDEFINED
        for i, item in enumerate(items):
            if i == 0 or compare(op, item, best) is True:
                best = item
        # the answer takes the widest type present (bool < int < real); comparing turns a boolean
        # into an integer, so only a lone boolean comes back as one
        if any(type(item) is float for item in items):
            return float(best)
        if len(items) > 1 or type(best) is int:
            return int(best)
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
        if not isinstance(items, list) or isinstance(needle, list) or hasattr(needle, "_ex"):
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
        if not isinstance(items, list):
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


def _in_each_context(env: Any, scope: Any, call: tuple[Any, ...], inside: bool = False,
                     literals: bool = False) -> Value:
    """The values of the call's first argument in the context of each ad of its second.

    An attribute reference that names an expression (``evalInEachContext(e, l)`` with ``e = p + 1``
    in the ad) stands for that expression, evaluated with the listed ad as its scope -- names from
    the listed ad outwards, then TARGET in compat mode -- as HTCondor looks the reference up first
    (``referenced``).  Any other expression keeps the call's scope: names are looked up there first
    (then TARGET in compat mode) and only then in the listed ad, which is also what ``MY`` means;
    ``inside`` (countMatches): the listed ad is the scope itself.  ``literals`` (evalInEachContext):
    each result is stored as a literal, which turns a relative time into a real number of whole
    seconds; countMatches reads the value itself, and a relative time is no boolean there."""
    first, second = arg_closures(call)
    items = second(env, scope)
    if items is UNDEFINED or items is ERROR:
        return items
    if not isinstance(items, list):
        return ERROR
    found = referenced(env, scope, call[2][0])
    if found is not None:
        first, inside = compiled(found[0]), True
    results = []
    for item in items:
        if not hasattr(item, "_ex"):
            results.append(ERROR if item is not UNDEFINED else UNDEFINED)
            continue
        value = _in_context(env, scope, first, item, inside)
        results.append(float(int(value.secs)) if literals and type(value) is RelTime else value)
    return results


def _in_context(env: Any, scope: Any, fn: Fn, item: Any, inside: bool) -> Value:
    if inside:
        saved, env.inside = env.inside, item
        value = fn(env, item)
        env.inside = saved
    else:
        # the expression keeps its own scope; the ad answers names found nowhere else, and MY
        saved, env.each = env.each, item
        value = fn(env, scope)
        env.each = saved
    return value


def eval_in_each_context(env: Any, scope: Any, args: tuple[Any, ...]) -> Value:
    return ERROR if len(args[0][2]) != 2 else _in_each_context(env, scope, args[0], literals=True)


def count_matches(env: Any, scope: Any, args: tuple[Any, ...]) -> Value:
    if len(args[0][2]) != 2:
        return ERROR
    results = _in_each_context(env, scope, args[0], inside=True)
    if not isinstance(results, list):
        return 0 if results is UNDEFINED else results
    return sum(1 for result in results if truth(result) is True)


for _name, _impl in (("evalInEachContext", eval_in_each_context), ("countMatches", count_matches)):
    _impl.wants_node = True  # type: ignore[attr-defined]  # reads its first argument's node
    builtin(_name)(_impl)
