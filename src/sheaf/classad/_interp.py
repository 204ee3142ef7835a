"""The first evaluation of an expression: a walk over its node tuples, nothing built.

Policy: interpret first, compile what is evaluated again.  Compiling an expression to closures
(``_eval.compile_node``) costs ten to twenty evaluations of it, and most expressions -- the
Requirements of a job ad read once and matched once -- are evaluated once; an ``Expr`` therefore
runs ``interpret`` on its first use and compiles on its second (``Expr.fn``).

The walk gives the compiled closures' answers by the same helpers: names and selections through the
generic lookups (``lookup_unqualified``, ``select``: the closures' shortcuts for matchmaking give the
same values), operators through ``_ops`` and ``_logic``.  The common nodes are walked here; the rest
-- calls, lists, nested ads, subscripts, ``.name``, time literals -- are compiled on the spot (only
that subtree).  ``tests/classad/test_interp.py`` checks first and later evaluations agree.
"""

from __future__ import annotations

__all__ = ["interpret"]

from typing import Any, Final

from ._eval import (
    MISSING,
    NOT_PLAIN,
    NUMERIC_COMPARE,
    Env,
    compile_node,
    lookup_unqualified,
    select,
    target_member,
)
from ._logic import logical_and_values, logical_or_values, truth
from ._ops import BINARY, UNARY, identical
from ._values import ERROR, UNDEFINED

Value = Any
Node = tuple[Any, ...]
_LITERALS: Final = frozenset({"int", "real", "str", "bool"})


def interpret(node: Node, env: Env, scope: Any) -> Value:
    """The value of ``node`` with ``scope`` as the scope ad, as ``compile_node(node)(env, scope)``."""
    kind = node[0]
    if kind == "bin":
        return _binary(node, env, scope)
    if kind == "sel":
        return _selection(node, env, scope)
    if kind == "attr":
        return lookup_unqualified(env, scope, node[1].lower())
    if kind in _LITERALS:
        return node[1]
    if kind == "paren":
        return interpret(node[1], env, scope)
    if kind == "un":
        value = interpret(node[2], env, scope)
        return value if value is ERROR or value is UNDEFINED else UNARY[node[1]](value)
    if kind == "cond":
        return _conditional(node, env, scope)
    if kind == "elvis":
        value = interpret(node[1], env, scope)
        return interpret(node[2], env, scope) if value is UNDEFINED else value
    if kind == "undef":
        return UNDEFINED
    if kind == "error":
        return ERROR
    return compile_node(node)(env, scope)


def _selection(node: Node, env: Env, scope: Any) -> Value:
    base, lname = node[1], node[2].lower()
    if base[0] == "attr" and base[1].lower() == "target" and lname not in NOT_PLAIN:
        value = target_member(env, scope, lname)  # matchmaking's TARGET.name, the closures' shortcut
        if value is not MISSING:
            return value
    return select(env, interpret(base, env, scope), lname)


def _binary(node: Node, env: Env, scope: Any) -> Value:
    op = node[1]
    if op == "&&":
        return logical_and_values(interpret(node[2], env, scope), lambda: interpret(node[3], env, scope))
    if op == "||":
        return logical_or_values(interpret(node[2], env, scope), lambda: interpret(node[3], env, scope))
    a = interpret(node[2], env, scope)
    b = interpret(node[3], env, scope)
    if op in {"is", "isnt"}:
        result = identical(a, b)
        return result if result is ERROR or op == "is" else not result
    test = NUMERIC_COMPARE.get(op)
    if test is not None:
        ta, tb = type(a), type(b)
        if (ta is int or ta is float) and (tb is int or tb is float):
            return test(a, b)  # two numbers (not booleans), as the compiled comparison does
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return BINARY[op](a, b)


def _conditional(node: Node, env: Env, scope: Any) -> Value:
    value = truth(interpret(node[1], env, scope))
    if value is True:
        return interpret(node[2], env, scope)
    if value is False:
        return interpret(node[3], env, scope)
    return value
