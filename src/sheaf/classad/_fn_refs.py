"""Built-ins that read an attribute reference rather than its value: ``unresolved``, and the lookup
``evalInEachContext``/``countMatches`` make of their first argument.

``referenced(env, scope, node)`` is HTCondor's ``AttributeReference::Deref``: the expression an
attribute reference (``a``, ``.a``, ``x.a``) names, and the ad that holds it -- looked up from the scope
outwards (enclosing ads; in compat mode then the other ad of a match); ``x.a`` evaluates ``x`` first.  ``MY``
outside a match is no ad in strict mode, so ``unresolved(MY.a)`` is ``UNDEFINED`` there.

``unresolved(attr[, pattern])`` (the manual: "the external attribute references and unresolved
attribute references of the expression that is the value of the provided attribute") walks the
expression as ``ClassAd::_GetExternalReferences`` with full names does:

- a name that is in scope is followed into its expression (from the ad that holds it); one that is not
  is an external reference; in compat mode ``CurrentTime`` is always in scope; ``MY``, and
  ``TARGET``/``PARENT`` where they name an ad (``TARGET`` inside a match), are in scope too;
- ``x.a`` with ``x`` UNDEFINED is the reference ``x.a`` as written (so ``TARGET.Arch`` outside a match),
  with ``x`` an ad it is ``a`` looked up there, with ``x`` anything else the walk fails;
- nested ad literals are walked with the same scope as the expression around them;
- a walk that comes back to a name it is following (a cycle: HTCondor recurses until its depth limit)
  fails, and a failed walk reports nothing.

The references form a set ordered and deduplicated without regard to case (the first spelling
stays); a leading ``target.`` is dropped when they are written: the one-argument form joins them with
commas, the two-argument form is ``true`` when one of them matches the Perl pattern (caseless, a
non-empty match).  No such attribute: ``UNDEFINED``; a first argument that is not an attribute
reference, a pattern that is not a string or does not compile, or another argument count: ``ERROR``.
"""

from __future__ import annotations

__all__ = ["LIBRARY", "arg_closures", "referenced"]

from collections.abc import Callable
from typing import Any, Final

from ._builtins import Library
from ._eval import MAX_ATTR_DEPTH, compile_node, resolve, root_of
from ._fn_regex import compile_pattern
from ._unparse import unparse
from ._values import ERROR, UNDEFINED

Value = Any
Node = tuple[Any, ...]
Fn = Callable[[Any, Any], Value]
LIBRARY = Library()
_REFERENCE_KINDS: Final = frozenset({"attr", "absattr", "sel"})
_CLOSURES: dict[int, tuple[Node, tuple[Fn, ...]]] = {}
_CLOSURES_LIMIT: Final = 1024


def arg_closures(node: Node) -> tuple[Fn, ...]:
    """The compiled arguments of the call ``node`` (for a built-in that also reads its nodes), kept
    for the next evaluation of the same call."""
    hit = _CLOSURES.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    closures = tuple(compile_node(arg) for arg in node[2])
    if len(_CLOSURES) >= _CLOSURES_LIMIT:
        _CLOSURES.clear()
    _CLOSURES[id(node)] = (node, closures)  # the node is kept, so its id is not reused meanwhile
    return closures


def is_reference(node: Node) -> bool:
    return node[0] in _REFERENCE_KINDS


def _find(ad: Any, lname: str) -> tuple[Any, Any] | None:
    while ad is not None:
        expr = ad._ex.get(lname)
        if expr is not None:
            return expr, ad
        ad = ad._parent
    return None


def referenced(env: Any, scope: Any, node: Node) -> tuple[Any, Any] | None:
    """(expression, the ad holding it) that the attribute reference ``node`` names, or None."""
    if not is_reference(node):
        return None
    kind = node[0]
    if scope is None and kind != "sel":
        return None  # a name needs an ad to be looked up in; ``[a = 1].a`` needs none
    if kind == "attr":
        found = _find(scope, node[1].lower())
        if found is None and not env.strict and env.target is not None:
            # compat mode: a name the MY (TARGET) ad lacks is looked up in the other one
            other = env.target if scope is env.my else env.my if scope is env.target else None
            found = None if other is None else _find(other, node[1].lower())
        return found
    if kind == "absattr":
        return _find(root_of(env, scope), node[1].lower())
    base = compile_node(node[1])(env, scope)
    return _find(base, node[2].lower()) if isinstance(base, env.ad_type) else None


_SCOPE_NAMES: Final = frozenset(("my", "target", "parent"))


class _Walk:
    """One ``unresolved`` walk: the references found (lower-cased name -> first spelling) and the
    names being followed."""

    __slots__ = ("env", "following", "refs")

    def __init__(self, env: Any) -> None:
        self.env = env
        self.refs: dict[str, str] = {}
        self.following: set[tuple[int, str]] = set()

    def add(self, name: str) -> bool:
        self.refs.setdefault(name.lower(), name)
        return True

    def node(self, node: Node, ad: Any) -> bool:
        kind = node[0]
        if kind in ("attr", "absattr"):
            start = ad if kind == "attr" else root_of(self.env, ad)
            return self.name(start, node[1])
        if kind == "sel":
            return self.selection(node, ad)
        if kind == "call":
            return all(self.node(arg, ad) for arg in node[2])
        if kind == "list":
            return all(self.node(item, ad) for item in node[1])
        if kind == "ad":
            return all(self.node(value, ad) for _, value in node[1])
        if kind in ("un", "bin"):
            return all(self.node(child, ad) for child in node[2:])
        if kind in ("paren", "sub", "cond", "elvis"):
            return all(self.node(child, ad) for child in node[1:])
        return True  # a literal

    def selection(self, node: Node, ad: Any) -> bool:
        env = self.env
        base = compile_node(node[1])(env, ad)
        if base is UNDEFINED:
            return self.add(f"{unparse(node[1], condor=True)}.{node[2]}")
        if not isinstance(base, env.ad_type):
            return False
        return self.name(base, node[2])

    def name(self, start: Any, name: str) -> bool:
        lname = name.lower()
        found = _find(start, lname)
        if found is None:
            if lname == "currenttime" and not self.env.strict:
                return True  # compat mode's implicit attribute: in scope, a literal
            if lname in _SCOPE_NAMES and isinstance(resolve(self.env, start, lname), self.env.ad_type):
                return True  # MY, and TARGET/PARENT where there is such an ad: in scope
            return self.add(name)
        expr, holder = found
        key = (id(holder), lname)
        if key in self.following or len(self.following) >= MAX_ATTR_DEPTH:
            return False
        self.following.add(key)
        ok = self.node(expr.node, holder)
        self.following.discard(key)
        return ok

    def written(self) -> list[str]:
        names = [self.refs[key] for key in sorted(self.refs)]
        return [name[7:] if name[:7].lower() == "target." else name for name in names]


def _has_match(pattern: Any, names: list[str]) -> bool:
    return any(match.end() > match.start() for name in names for match in pattern.finditer(name))


@LIBRARY.builtin("unresolved")
def unresolved(env: Any, scope: Any, args: tuple[Any, ...]) -> Value:
    call = args[0]
    arg_nodes = call[2]
    if not 1 <= len(arg_nodes) <= 2 or not is_reference(arg_nodes[0]):
        return ERROR
    found = referenced(env, scope, arg_nodes[0])
    if found is None:
        return UNDEFINED
    pattern = None
    if len(arg_nodes) == 2:
        text = arg_closures(call)[1](env, scope)
        pattern = compile_pattern(text, "i") if type(text) is str else None
        if pattern is None:
            return ERROR
    walk = _Walk(env)
    expr, holder = found  # the expression's references are read where it is defined
    names = walk.written() if walk.node(expr.node, holder) else []
    return ",".join(names) if pattern is None else _has_match(pattern, names)


unresolved.wants_node = True  # type: ignore[attr-defined]
