"""Autoclusters: grouping job ads (and resource ads) that matchmaking cannot tell apart.

Two jobs are of one *kind* when every attribute that can influence matchmaking is bound to the same
expression in both.  Those *significant* attributes are computed from the expressions themselves,
never from a fixed list:

* every name referenced by a resource's ``Requirements`` and ``Rank``, followed through the
  resource's own attributes (``Requirements = Start; Start = TARGET.Memory > 1``) -- any of those
  names might be looked up in the job;
* the job's own ``Requirements``, ``Rank``, ``ConcurrencyLimits`` and the ``Request*`` quantities,
  followed through the job's attributes (``request_memory = ifThenElse(isUndefined(DAGNodeRetry) ...``
  makes ``DAGNodeRetry`` significant).

Because the closure through a job's attributes depends on what those attributes say, a job's kind is
found level by level: the expressions of the base names, then of the names they reference, and so
on; each distinct path through that walk gets a small integer token, and the last token is the kind.
A job costs one tuple and one dict look-up per level; the references of an expression are computed
once per distinct expression.

An expression calling ``eval()`` can reach any attribute: a job whose walk meets one is keyed by its
whole ad, and if a resource's expressions call ``eval()`` every attribute of every job is significant.
Resources are grouped the same way into *classes* (the names jobs can reach in them, plus their own
closure), so that an evaluation is done once per (job kind, resource class) and reused by every job
of the kind and every resource of the class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._classad import ClassAd
from ._expr import Expr

__all__ = ["ALL", "JOB_ROOTS", "RESOURCE_ROOTS", "JobKinds", "ResourceClasses", "closure", "reached", "references"]

Node = tuple[Any, ...]
ALL = "*"  # stands for "every attribute" in a set of names
JOB_ROOTS = ("requirements", "rank", "concurrencylimits", "requestcpus", "requestmemory", "requestdisk",
             "requestgpus")
RESOURCE_ROOTS = ("requirements", "rank")
_DYNAMIC_CALLS = frozenset({"eval"})
_SCOPES = frozenset({"my", "target"})  # ``TARGET.x`` reads x; a bare ``TARGET`` reads the whole ad
_WHOLE_AD_NAMES = frozenset({"my", "target", "parent", "root", "toplevel"})
_REFS: dict[Node, frozenset[str]] = {}


def references(expr: Expr) -> frozenset[str]:
    """Lower-cased names an expression may look up (``ALL`` if it calls ``eval``); memoised."""
    node = expr.node
    found = _REFS.get(node)
    if found is None:
        if len(_REFS) > 100_000:
            _REFS.clear()
        found = _REFS[node] = frozenset(_walk(node))
    return found


def _walk(root: Node) -> set[str]:
    names: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node[0]
        if kind in ("attr", "absattr"):
            name = node[1].lower()
            names.add(ALL if kind == "attr" and name in _WHOLE_AD_NAMES else name)
        elif kind == "sel":
            names.add(node[2].lower())
            base = node[1]
            if not (base[0] == "attr" and base[1].lower() in _SCOPES):
                stack.append(base)
        elif kind == "call":
            if node[1].lower() in _DYNAMIC_CALLS:
                names.add(ALL)
            stack.extend(node[2])
        elif kind in ("list",):
            stack.extend(node[1])
        elif kind == "ad":
            stack.extend(value for _, value in node[1])
        elif kind in ("un", "bin"):
            stack.extend(node[2:])
        elif kind in ("cond", "elvis", "paren", "sub"):
            stack.extend(node[1:])
    return names


def reached(ad: ClassAd, roots: Iterable[str]) -> set[str]:
    """Every name referenced by the expressions of ``roots``, followed through ``ad``'s attributes."""
    stack = list(dict.fromkeys(roots))
    visited = set(stack)
    found: set[str] = set()
    while stack:
        expr = ad.get_expr(stack.pop())
        if expr is None:
            continue
        fresh = references(expr) - found
        found |= fresh
        stack.extend(name for name in fresh if name not in visited)
        visited |= fresh
    return found


def closure(ad: ClassAd, roots: Iterable[str]) -> set[str]:
    """``roots`` plus every name their expressions reach through ``ad``'s own attributes."""
    roots = set(roots)
    return roots | reached(ad, roots)


def _exprs(ad: ClassAd) -> dict[str, Expr]:
    # The language keeps an ad's expressions in a dict keyed by lower-cased name; reading it directly
    # is what makes grouping 100,000 jobs cheap (ClassAd.get_expr lower-cases on every call).
    return ad._ex


class JobKinds:
    """Assigns each job ad its kind (an int) given the names resources may look up in jobs."""

    def __init__(self, resource_names: set[str]) -> None:
        self.everything = ALL in resource_names
        self.base = tuple(sorted((resource_names | set(JOB_ROOTS)) - {ALL}))
        self._levels: dict[tuple[int, tuple[Node | None, ...]], tuple[int, tuple[str, ...]]] = {}
        self._seen: dict[int, frozenset[str]] = {0: frozenset(self.base)}
        self._whole: dict[tuple[tuple[str, Node], ...], int] = {}

    def kind(self, ad: ClassAd) -> int:
        ex = _exprs(ad)
        if self.everything:
            return self._whole_ad(ex)
        token, names = 0, self.base
        while names:
            key = tuple([e.node if (e := ex.get(name)) is not None else None for name in names])
            entry = self._levels.get((token, key))
            if entry is None:
                entry = self._levels[(token, key)] = self._next_level(token, ex, names)
            if entry[0] < 0:
                return self._whole_ad(ex)
            token, names = entry
        return token

    def _next_level(self, token: int, ex: dict[str, Expr], names: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        seen = self._seen[token]
        reached: set[str] = set()
        for name in names:
            expr = ex.get(name)
            if expr is not None:
                reached |= references(expr)
        if ALL in reached:
            return (-1, ())
        fresh = len(self._seen)
        self._seen[fresh] = seen | reached
        return (fresh, tuple(sorted(reached - seen)))

    def _whole_ad(self, ex: dict[str, Expr]) -> int:
        key = tuple(sorted((name, expr.node) for name, expr in ex.items()))
        found = self._whole.get(key)
        if found is None:
            found = self._whole[key] = -1 - len(self._whole)
        return found


class ResourceClasses:
    """Assigns resource ads a class (an int): equal classes evaluate alike against every job kind."""

    def __init__(self, job_names: set[str]) -> None:
        self.everything = ALL in job_names
        self.job_names = frozenset(job_names - {ALL})
        self._ids: dict[tuple[tuple[str, Node | None], ...], int] = {}

    def names_for(self, ad: ClassAd) -> tuple[str, ...]:
        """The names whose expressions decide how ``ad`` evaluates (sorted)."""
        names = closure(ad, (*RESOURCE_ROOTS, *self.job_names))
        if self.everything or ALL in names:
            names = set(_exprs(ad))
        return tuple(sorted(names - {ALL}))

    def class_of(self, ad: ClassAd, names: tuple[str, ...]) -> int:
        ex = _exprs(ad)
        key = tuple([(name, e.node if (e := ex.get(name)) is not None else None) for name in names])
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found
