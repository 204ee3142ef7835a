"""Evaluation: node tuples walked once, then compiled to closures ``fn(env, scope) -> value``.

Scopes follow the official library.  An unqualified name is looked up in the scope ad, then in its
enclosing ads (``_parent``); at the first level the special names apply when the ad has no such
attribute: ``MY`` (compat mode) and ``SELF`` are the scope ad, ``PARENT`` its enclosing ad,
``ROOT``/``TOPLEVEL`` the outermost.
When a target is given, evaluation happens inside HTCondor's match ad::

    [ lCtx = [ ad = .LEFT; my = .LEFT; other = .RIGHT; target = .RIGHT ]; LEFT = MY-ad;
      rCtx = [ ad = .RIGHT; my = .RIGHT; other = .LEFT; target = .LEFT ]; RIGHT = TARGET-ad;
      leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank; symmetricMatch = RIGHT.requirements &&
      LEFT.requirements; leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements ]

with lCtx the parent of MY's ad and rCtx of TARGET's: that is where ``TARGET`` and ``MY`` come from
(both modes).  The names of those two context ads are answered directly (``_context_lookup``); the
ads themselves are built only if a value needs them.  In compat mode (the default), an unqualified
name found nowhere from the MY ad is looked up from the TARGET ad, and vice versa, and a name found in
no ad at all is ``UNDEFINED`` except ``CurrentTime``, the current time (``missing``).  ``strict=True``
drops both.

Each evaluation has an ``Env``: the two ads, the mode, a memo of attribute values (keyed by the ad and
the name) and the attribute depth.  An attribute being evaluated reads as ``UNDEFINED`` from inside
itself (so ``[a = a]`` and ``[a = b; b = a]`` give ``UNDEFINED``, as in HTCondor); the memo also makes
exponentially shared definitions linear (see ``deref``).  Attribute chains deeper than
``MAX_ATTR_DEPTH``, or more than ``MAX_STEPS`` attribute evaluations, are ``ERROR``; a Python
``RecursionError`` anywhere in an evaluation makes its value ``ERROR``: evaluation never raises for
data and always ends.

Interpret first, compile what is evaluated again: compiling costs ten to twenty evaluations, and most
expressions (a job's Requirements, read and matched once) are evaluated once.  ``compiled`` hands out
``first_evaluation`` on an expression's first use -- the C walk of the commonest shapes where the
compiled parser is there, else ``interpret``, which walks the nodes by the closures' own helpers (and
compiles calls, lists, ads, subscripts and ``.name`` on the spot) -- and compiles on the second.
``tests/classad/test_interp.py`` checks the three ways agree.
"""

from __future__ import annotations

__all__ = [
    "MAX_ATTR_DEPTH", "MISSING", "NOT_PLAIN", "Env", "compile_node", "compiled", "deref", "first_evaluation",
    "interpret", "lookup_unqualified", "missing", "resolve", "root_of", "run", "select", "target_member",
]

import functools
import os
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

from ._context import build_context
from ._logic import (
    NUMERIC_COMPARE,
    compile_compare,
    compile_conditional,
    compile_logical,
    logical_and_values,
    logical_or_values,
    strict_apply,
    truth,
)
from ._nodes import NOT_CONSTANT, const_of
from ._ops import BINARY, UNARY, identical
from ._parser import accelerator
from ._stack import deep_stack, deeper
from ._values import ERROR, UNDEFINED, ListValue, SelectedList, SharedListValue

Value = Any
# An ad is a ClassAd (the class is defined above this module, which knows ads by their slots: ``_ex``
# name -> expression, ``_names``, ``_parent``) and an expression an Expr (``node``, ``const``, ``_fn``).
ClassAd = Any
Expr = Any
Fn = Callable[["Env", Any], Value]
MISSING: Final = object()
# Tests set SHEAF_CLASSAD_RAISE=1 to see internal failures instead of their ERROR value.
_RAISE_INTERNAL: Final = os.environ.get("SHEAF_CLASSAD_RAISE") == "1"
MAX_ATTR_DEPTH: Final = 1000
MAX_STEPS: Final = 1_000_000  # attribute evaluations per evaluation: a bound on time, not only on depth
_IN_PROGRESS: Final = object()
_SPECIAL: Final = frozenset({"my", "self", "parent", "root", "toplevel"})  # names no ad need define
_LCTX_SAME: Final = frozenset({"ad", "my"})
_LCTX_OTHER: Final = frozenset({"other", "target"})


class Env:
    """The state of one evaluation (see the module docstring)."""

    __slots__ = ("ad_type", "context", "cycles", "depth", "each", "functions", "inside", "memo", "my",
                 "steps", "strict", "target")

    def __init__(self, my: ClassAd | None, target: ClassAd | None, strict: bool, ad_type: Any,
                 functions: Mapping[str, Callable[..., Value]]) -> None:
        self.my = my
        self.target = target
        self.strict = strict
        self.ad_type = ad_type  # the class of the ads an evaluation makes (ad literals, the match ad)
        self.functions = functions  # the built-in table, by lower-cased name
        self.memo: dict[tuple[int, str], tuple[ClassAd, Value]] | None = None
        self.depth = 0
        self.context: dict[str, ClassAd] | None = None
        self.cycles = 0
        self.steps = 0
        # evalInEachContext's current ad: last resort for unqualified names, and what MY means, while
        # its argument expression itself is evaluated (not inside the attributes it reaches)
        self.each: ClassAd | None = None
        # countMatches' current ad: it is the scope, and in compat mode falls back to TARGET like MY
        self.inside: ClassAd | None = None


# -- attribute lookup -----------------------------------------------------------------------------

def deref(env: Env, ad: ClassAd, lname: str, expr: Expr) -> Value:
    """The value of attribute ``lname`` found in ``ad``.

    While an attribute is being evaluated, a reference back to it reads UNDEFINED (HTCondor's rule
    for cycles).  Values are memoised for the rest of the evaluation -- which makes shared
    definitions linear instead of exponential -- unless their computation met such a cycle: those
    depend on the path that led to them, and are recomputed like HTCondor does."""
    const = expr.const
    if const is not NOT_CONSTANT:
        return const
    memo = env.memo
    if memo is None:
        memo = env.memo = {}
    key = (id(ad), lname)
    hit = memo.get(key)
    if hit is not None:
        if hit[1] is _IN_PROGRESS:
            env.cycles += 1
            return UNDEFINED
        return hit[1]
    env.steps += 1
    if env.depth >= MAX_ATTR_DEPTH or env.steps > MAX_STEPS:
        return ERROR
    memo[key] = (ad, _IN_PROGRESS)
    cycles = env.cycles
    env.depth += 1
    each = env.each
    fn = expr._fn or compiled(expr)
    if each is None:
        value = fn(env, ad)
    else:
        env.each = None
        value = fn(env, ad)
        env.each = each
    env.depth -= 1
    if env.cycles == cycles:
        memo[key] = (ad, value)
    else:
        del memo[key]
    return value


def _is_top(env: Env, ad: ClassAd) -> bool:
    return env.target is not None and (ad is env.my or ad is env.target)


def resolve(env: Env, scope: ClassAd | None, lname: str) -> Value:
    """Look ``lname`` up from ``scope`` outwards; MISSING when no ad along the way has it."""
    if scope is None:
        return MISSING
    expr = scope._ex.get(lname)
    if expr is not None:
        return deref(env, scope, lname, expr)
    if lname in _SPECIAL and (lname != "my" or not env.strict):
        return _special(env, scope, lname)  # in strict mode MY exists only inside a match (lCtx)
    ad = scope
    while True:
        parent = ad._parent
        if parent is None:
            return _context_lookup(env, ad, lname) if _is_top(env, ad) else MISSING
        ad = parent
        expr = ad._ex.get(lname)
        if expr is not None:
            return deref(env, ad, lname, expr)


def _top(ad: ClassAd) -> ClassAd:
    while ad._parent is not None:
        ad = ad._parent
    return ad


def _special(env: Env, scope: ClassAd, lname: str) -> Value:
    if lname in ("my", "self"):  # "self" is the current ad in both modes, as MY is in compat mode
        return scope if env.each is None else env.each
    if lname == "parent":
        if scope._parent is not None:
            return scope._parent
        if _is_top(env, scope):
            return _context_ads(env)["lctx" if scope is env.my else "rctx"]
        return UNDEFINED
    return root_of(env, scope)


def root_of(env: Env, scope: ClassAd) -> ClassAd:
    top = _top(scope)
    return _context_ads(env)["root"] if _is_top(env, top) else top


def _context_lookup(env: Env, top: ClassAd, lname: str) -> Value:
    """Names of lCtx/rCtx and of the match ad, seen from ``top`` (the MY or the TARGET ad)."""
    my, target = env.my, env.target
    other = target if top is my else my
    if lname in _LCTX_SAME:
        return top
    if lname in _LCTX_OTHER:
        return other
    if lname == "left":
        return my
    if lname == "right":
        return target
    if lname in ("lctx", "rctx"):
        return _context_ads(env)[lname]
    if lname == "leftrankvalue":
        return _member(env, my, "rank")
    if lname == "rightrankvalue":
        return _member(env, target, "rank")
    if lname == "leftmatchesright":
        return _member(env, target, "requirements")
    if lname == "rightmatchesleft":
        return _member(env, my, "requirements")
    if lname == "symmetricmatch":
        return logical_and_values(_member(env, target, "requirements"),
                                  lambda: _member(env, my, "requirements"))
    return MISSING


def _member(env: Env, ad: ClassAd | None, lname: str) -> Value:
    value = resolve(env, ad, lname)
    return UNDEFINED if value is MISSING else value


def _context_ads(env: Env) -> dict[str, ClassAd]:
    """Build the match ad and its two context ads (only when a value shows them)."""
    if env.context is None:
        env.context = build_context(env.ad_type, env.my, env.target)
    return env.context


def lookup_unqualified(env: Env, scope: ClassAd | None, lname: str) -> Value:
    value = resolve(env, scope, lname)
    if value is MISSING:
        if not env.strict and scope is not None and env.target is not None:
            if scope is env.my:
                value = resolve(env, env.target, lname)
            elif scope is env.target:
                value = resolve(env, env.my, lname)
            elif scope is env.inside:
                value = resolve(env, env.target, lname)
        if value is MISSING and env.each is not None:
            value = resolve(env, env.each, lname)
        if value is MISSING:
            return UNDEFINED if scope is None else missing(env, lname)
    return value


def missing(env: Env, lname: str) -> Value:
    """The value of a name no ad has: UNDEFINED -- but in compat mode every ad has HTCondor's implicit
    ``CurrentTime`` (the manual's old-ClassAd environment: the integer ``time(2)`` returns)."""
    return int(time.time()) if lname == "currenttime" and not env.strict else UNDEFINED


def select(env: Env, base: Value, lname: str) -> Value:
    """``base.name``: look up in an ad (and its enclosing ads); over a list, element by element; on an
    ad handed out by ``ad["name"]``, UNDEFINED (``_handed_type``)."""
    if isinstance(base, env.ad_type):
        if type(base) is not env.ad_type and type(base) is _handed_type(env.ad_type):
            return UNDEFINED
        value = resolve(env, base, lname)
        return missing(env, lname) if value is MISSING else value
    if base is UNDEFINED:
        return UNDEFINED
    if isinstance(base, list):
        return SelectedList(select(env, item, lname) if isinstance(item, (env.ad_type, list))
                            or item is UNDEFINED else ERROR for item in base)
    return ERROR


@functools.cache
def _handed_type(ad_type: Any) -> Any:
    """The ads ``ad["name"]`` hands out: HTCondor's ``EvaluateAttr`` gives the nested ad back as a shared
    ad value, on which a ``.name`` selection is UNDEFINED (``[a = [b = 1]]["a"].b`` is; ``["a"]["b"]``
    and ``.a.b`` are 1), whether it is selected at once or after it was bound to another name."""
    return type(f"Handed{ad_type.__name__}", (ad_type,), {"__slots__": ()})


def _shared(value: ListValue) -> SharedListValue:
    shared = SharedListValue(value)
    shared.node = getattr(value, "node", None)  # type: ignore[attr-defined]
    return shared


def subscript(env: Env, base: Value, index: Value) -> Value:
    if base is ERROR or index is ERROR:
        return ERROR
    if base is UNDEFINED or index is UNDEFINED:
        return UNDEFINED
    if isinstance(base, list):
        if type(index) is not int:
            return ERROR
        if not 0 <= index < 2**31:
            # HTCondor reads the index into a C int: the low 32 bits, two's complement
            # (4294967297 is 1; ceil(1e308), which is the 64-bit minimum, is 0)
            index = (index + 2**31) % 2**32 - 2**31
        return base[index] if 0 <= index < len(base) else ERROR
    if isinstance(base, env.ad_type) and type(index) is str:
        # ad["name"] looks in that ad only (unlike ad.name, it does not climb to enclosing ads), and
        # evaluates the expression found directly: it is not marked as being evaluated, as in HTCondor
        expr = base._ex.get(index.lower())
        if expr is None:
            return UNDEFINED
        if env.depth >= MAX_ATTR_DEPTH:
            return ERROR
        env.depth += 1
        value = (expr._fn or compiled(expr))(env, base)
        env.depth -= 1
        # the value comes back through EvaluateAttr as a shared list: "is" takes it for a list a
        # built-in made, no literal (``{1} isnt [a = {1}]["a"]`` is true); an ad as a shared ad
        if type(value) is ListValue:
            return _shared(value)
        if isinstance(value, env.ad_type):
            return _handed_type(env.ad_type)._view(value._ex, value._names, value._parent)
        return value
    return ERROR


# -- compilation ----------------------------------------------------------------------------------

def compile_node(node: tuple[Any, ...]) -> Fn:
    return _COMPILERS[node[0]](node)


_compile_deep: Final = deeper(compile_node)  # a deep tree compiles under deep_stack


# From the compiled parser (None without it): a first evaluation, and tracking an Expr made in C.
_QUICK: Final = getattr(accelerator(), "first_evaluation", None)
_TRACK: Final = getattr(accelerator(), "track", None)


def compiled(expr: Expr) -> Fn:
    """What evaluates ``expr``: on its first use a walk over its nodes (``interpret``), from the second
    on its closure, compiled then and kept on the expression (see "Interpret first" above)."""
    fn: Fn = expr._fn
    if fn is None:
        if not expr._used:
            expr._used = True
            return partial(first_evaluation, expr)
        fn = expr._fn = _compile_deep(expr.node)
        if _TRACK is not None:
            _TRACK(expr)  # made in C untracked (atoms only); a closure might reach back to it
    return fn


def _c_const(node: tuple[Any, ...]) -> Fn:
    value = const_of(node)
    return lambda env, scope: value


def _c_attr(node: tuple[Any, ...]) -> Fn:
    lname = node[1].lower()
    plain = lname not in NOT_PLAIN

    def attr(env: Env, scope: ClassAd | None) -> Value:
        if scope is not None:
            expr = scope._ex.get(lname)
            if expr is not None:
                return deref(env, scope, lname, expr)
            # compat matchmaking: a name the top ad lacks, found in the other ad (the generic path
            # would reach the same ad after finding nothing in the match context)
            target = env.target
            if plain and target is not None and scope._parent is None and not env.strict:
                other = target if scope is env.my else env.my if scope is target else None
                if other is not None:
                    expr = other._ex.get(lname)
                    if expr is not None:
                        const = expr.const
                        return const if const is not NOT_CONSTANT else deref(env, other, lname, expr)
        return lookup_unqualified(env, scope, lname)
    return attr


def _c_absattr(node: tuple[Any, ...]) -> Fn:
    lname = node[1].lower()

    def absattr(env: Env, scope: ClassAd | None) -> Value:
        if scope is None:
            return ERROR
        value = resolve(env, root_of(env, scope), lname)
        return UNDEFINED if value is MISSING else value
    return absattr


def _c_sel(node: tuple[Any, ...]) -> Fn:
    base, lname = compile_node(node[1]), node[2].lower()

    def selection(env: Env, scope: ClassAd | None) -> Value:
        return select(env, base(env, scope), lname)
    if node[1][0] == "attr" and node[1][1].lower() == "target" and lname not in NOT_PLAIN:
        return _target_selection(lname, selection)
    return selection


# Names whose lookup is not a plain dictionary probe in the ad (specials, match-ad names).
NOT_PLAIN: Final = _SPECIAL | _LCTX_SAME | _LCTX_OTHER | frozenset({
    "left", "right", "lctx", "rctx", "leftrankvalue", "rightrankvalue", "leftmatchesright",
    "rightmatchesleft", "symmetricmatch"})


def target_member(env: Env, scope: ClassAd | None, lname: str) -> Value:
    """``TARGET.name`` from the top of the MY or TARGET ad -- the matchmaking case -- straight from the
    other ad's dictionary; MISSING for anything unusual (no target, an ad that defines TARGET itself,
    a nested scope), which the generic path answers, the same way but more slowly."""
    target = env.target
    if target is None or scope is None or scope._parent is not None or "target" in scope._ex:
        return MISSING
    if scope is env.my:
        other = target
    elif scope is target and env.my is not None:
        other = env.my
    else:
        return MISSING
    expr = other._ex.get(lname)
    if expr is None:
        return MISSING if other._parent is not None else missing(env, lname)
    const = expr.const
    return const if const is not NOT_CONSTANT else deref(env, other, lname, expr)


def _target_selection(lname: str, generic: Fn) -> Fn:
    def target_selection(env: Env, scope: ClassAd | None) -> Value:
        value = target_member(env, scope, lname)
        return generic(env, scope) if value is MISSING else value
    return target_selection


def _c_sub(node: tuple[Any, ...]) -> Fn:
    base, index = compile_node(node[1]), compile_node(node[2])
    return lambda env, scope: subscript(env, base(env, scope), index(env, scope))


def _c_paren(node: tuple[Any, ...]) -> Fn:
    return compile_node(node[1])


def _c_un(node: tuple[Any, ...]) -> Fn:
    operand, op = compile_node(node[2]), UNARY[node[1]]

    def unary(env: Env, scope: ClassAd | None) -> Value:
        value = operand(env, scope)
        if value is ERROR or value is UNDEFINED:
            return value
        return op(value)
    return unary


def _c_bin(node: tuple[Any, ...]) -> Fn:
    name = node[1]
    left, right = compile_node(node[2]), compile_node(node[3])
    if name in ("&&", "||"):
        return compile_logical(name, left, right)
    if name in ("is", "isnt"):
        positive = name == "is"

        def meta(env: Env, scope: ClassAd | None) -> Value:
            result = identical(left(env, scope), right(env, scope))
            return result if result is ERROR or positive else not result
        return meta
    if name in NUMERIC_COMPARE:
        return compile_compare(name, left, right, BINARY[name])
    op = BINARY[name]

    def binary(env: Env, scope: ClassAd | None) -> Value:
        a = left(env, scope)
        b = right(env, scope)
        if a is ERROR or b is ERROR:
            return ERROR
        if a is UNDEFINED or b is UNDEFINED:
            return UNDEFINED
        return op(a, b)
    return binary


def _c_cond(node: tuple[Any, ...]) -> Fn:
    return compile_conditional(compile_node(node[1]), compile_node(node[2]), compile_node(node[3]))


def _c_elvis(node: tuple[Any, ...]) -> Fn:
    left, right = compile_node(node[1]), compile_node(node[2])

    def elvis(env: Env, scope: ClassAd | None) -> Value:
        value = left(env, scope)
        return right(env, scope) if value is UNDEFINED else value
    return elvis


def _c_list(node: tuple[Any, ...]) -> Fn:
    items = tuple(compile_node(item) for item in node[1])

    def list_literal(env: Env, scope: ClassAd | None) -> Value:
        value = ListValue(item(env, scope) for item in items)
        value.node = node  # type: ignore[attr-defined]
        return value
    return list_literal


def _c_ad(node: tuple[Any, ...]) -> Fn:
    # the template's expressions are made once, by the ad class of the first evaluation that meets
    # the literal (there is one ad class; the evaluator only does not import it)
    template: list[Any] = []

    def ad_literal(env: Env, scope: ClassAd | None) -> Value:
        if not template:
            template.append(env.ad_type._from_node(node))
        return env.ad_type._view(template[0]._ex, template[0]._names, scope)
    return ad_literal


def _c_call(node: tuple[Any, ...]) -> Fn:
    lname = node[1].lower()
    args = tuple(compile_node(arg) for arg in node[2])
    bound: list[Fn] = []

    def call(env: Env, scope: ClassAd | None) -> Value:
        if not bound:
            bound.append(_bind(env.functions.get(lname), args, node))
        return bound[0](env, scope)
    return call


def _bind(impl: Callable[..., Value] | None, args: tuple[Fn, ...], node: tuple[Any, ...]) -> Fn:
    """A built-in bound to a call's arguments (its node, for one that reads them unevaluated)."""
    if impl is None:
        return _error
    if getattr(impl, "wants_node", False):
        return lambda env, scope: impl(env, scope, (node,))
    return lambda env, scope: impl(env, scope, args)


def _error(env: Env, scope: ClassAd | None) -> Value:
    return ERROR


_COMPILERS: Final[dict[str, Callable[[tuple[Any, ...]], Fn]]] = {
    "int": _c_const, "real": _c_const, "str": _c_const, "bool": _c_const, "undef": _c_const,
    "error": _c_const, "abstime": _c_const, "reltime": _c_const,
    "attr": _c_attr, "absattr": _c_absattr, "sel": _c_sel, "sub": _c_sub,
    "paren": _c_paren, "un": _c_un, "bin": _c_bin, "cond": _c_cond, "elvis": _c_elvis, "list": _c_list,
    "ad": _c_ad, "call": _c_call,
}


# -- the first evaluation: a walk over the nodes ---------------------------------------------------



def first_evaluation(expr: Expr, env: Env, scope: ClassAd | None) -> Value:
    """An expression's first evaluation: the compiled walk where it is sure (it parses a lazily read
    value itself), else ``interpret``."""
    if _QUICK is not None:
        value = _QUICK(expr, scope, env.my, env.target)
        if value is not None:
            return value
    return interpret(expr.node, env, scope)


_LITERALS: Final = frozenset({"int", "real", "str", "bool"})


def interpret(node: tuple[Any, ...], env: Env, scope: ClassAd | None) -> Value:
    """The value of ``node`` with ``scope`` as the scope ad, as ``compile_node(node)(env, scope)``."""
    kind = node[0]
    if kind == "bin":
        return _walk_binary(node, env, scope)
    if kind == "sel":
        base, lname = node[1], node[2].lower()
        if base[0] == "attr" and base[1].lower() == "target" and lname not in NOT_PLAIN:
            value = target_member(env, scope, lname)  # TARGET.name, the closures' shortcut
            if value is not MISSING:
                return value
        return select(env, interpret(base, env, scope), lname)
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
        value = truth(interpret(node[1], env, scope))
        if value is True or value is False:
            return interpret(node[2] if value else node[3], env, scope)
        return value
    if kind == "elvis":
        value = interpret(node[1], env, scope)
        return interpret(node[2], env, scope) if value is UNDEFINED else value
    return compile_node(node)(env, scope)


def _walk_binary(node: tuple[Any, ...], env: Env, scope: ClassAd | None) -> Value:
    op = node[1]
    if op == "&&":
        return logical_and_values(interpret(node[2], env, scope), partial(interpret, node[3], env, scope))
    if op == "||":
        return logical_or_values(interpret(node[2], env, scope), partial(interpret, node[3], env, scope))
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
    return strict_apply(BINARY[op], a, b)


# -- running ------------------------------------------------------------------------------------

def run(fn: Fn, env: Env, scope: ClassAd | None, deep: bool = False) -> Value:
    """Call a compiled closure: what goes wrong inside is the value ERROR, never an exception.  One
    that nests deeper than the process's recursion limit allows is evaluated again from the start,
    with a fresh ``env``, under ``deep_stack`` (``deep``); only there is ``RecursionError`` ERROR."""
    try:
        if deep:
            with deep_stack():
                return fn(env, scope)
        return fn(env, scope)
    except RecursionError:
        return ERROR if deep else run(fn, Env(env.my, env.target, env.strict, env.ad_type, env.functions),
                                      scope, True)
    except Exception:  # a data problem a built-in did not foresee is still only ERROR
        if _RAISE_INTERNAL:
            raise
        return ERROR
