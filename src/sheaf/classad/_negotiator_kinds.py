"""Autoclusters: grouping job ads (and resource ads) that matchmaking cannot tell apart.

Two jobs are of one *kind* when every attribute that can influence matchmaking is bound to the same
expression in both.  Those *significant* attributes are computed from the expressions themselves,
never from a fixed list, with scopes respected (``references``: ``TARGET.x`` is read in the other ad,
``MY.x`` and a plain ``x`` in the ad itself, a plain ``x`` the ad lacks falls back to the other ad):

* every name a resource's ``Requirements`` and ``Rank`` may read in a job, followed through the
  resource's own attributes (``Requirements = Start; Start = TARGET.Memory > 1``);
* the job's own ``Requirements``, ``Rank``, ``ConcurrencyLimits`` and ``Request*`` quantities,
  followed through the job's attributes (``RequestMemory = ifThenElse(isUndefined(DAGNodeRetry) ...``
  makes ``DAGNodeRetry`` significant).

Because the walk through a job's attributes depends on what those attributes say, a job's kind is
found level by level: the expressions of the base names, then of the names they reference, and so
on; each distinct path through that walk gets a small integer token, and the last token is the kind.
The jobs of one cluster share their expression objects, so a kind is first looked up by the ids of
the objects bound to every name any walk has visited -- one tuple and one dict look-up per job; the
structural walk runs only for a new combination of objects.  References are memoised per distinct
expression.

An expression that can read any attribute (``eval()``, a bare ``TARGET``) makes the whole ad
significant: such a job is keyed by its whole ad, and if a resource's expressions do it, every job
is.  Resources are grouped the same way into *classes* (the names jobs can read in them, plus their
own closure), so that an evaluation is done once per (job kind, resource class) and reused by every
job of the kind and every resource of the class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._classad import ClassAd, Expr

__all__ = [
    "ALL", "JOB_ROOTS", "RESOURCE_ROOTS", "JobKinds", "ResourceClasses", "lookups", "references", "with_expr",
]

Node = tuple[Any, ...]
ALL = "*"  # stands for "every attribute" in a set of names
JOB_ROOTS = ("requirements", "rank", "concurrencylimits", "requestcpus", "requestmemory", "requestdisk",
             "requestgpus")
RESOURCE_ROOTS = ("requirements", "rank")
_DYNAMIC_CALLS = frozenset({"eval"})
_SCOPES = frozenset({"my", "target"})  # ``TARGET.x`` reads x; a bare ``TARGET`` reads the whole ad
_WHOLE_AD_NAMES = frozenset({"my", "self", "target", "parent", "root", "toplevel"})
_LITERALS = frozenset({"int", "real", "str", "bool", "undef", "error", "abstime", "reltime"})
_REFS: dict[Node, frozenset[str]] = {}


def references(expr: Expr) -> frozenset[str]:
    """Lower-cased names an expression may look up; memoised per distinct expression.

    ``TARGET.x`` gives ``"target.x"`` (looked up in the other ad); ``MY.x`` and a plain ``x`` give
    ``"x"``; ``ALL`` stands for a call to ``eval()`` or a bare ``TARGET``/``MY`` (the whole ad).
    """
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
            base, name = node[1], node[2].lower()
            scope = base[1].lower() if base[0] == "attr" else ""
            if scope == "target":
                names.add("target." + name)
            elif scope == "my":
                names.add(name)
            else:
                names.add(name)
                stack.append(base)
        elif kind == "call":
            if node[1].lower() in _DYNAMIC_CALLS:
                names.add(ALL)
            stack.extend(node[2])
        elif kind == "list":
            stack.extend(node[1])
        elif kind == "ad":
            stack.extend(value for _, value in node[1])
        elif kind in ("un", "bin"):
            stack.extend(node[2:])
        elif kind in ("cond", "elvis", "paren", "sub"):
            stack.extend(node[1:])
        elif kind not in _LITERALS:
            names.add(ALL)  # a node kind this walker does not know: assume it may read anything
    return names


def lookups(ad: ClassAd, roots: Iterable[str]) -> tuple[set[str], set[str]]:
    """Evaluating the attributes ``roots`` of ``ad``: (names looked up in ``ad`` itself, names that
    may be looked up in the other ad).  A plain name ``ad`` lacks falls back to the other ad (compat
    mode); ``ALL`` in the second set means the other ad is read as a whole."""
    stack = list(dict.fromkeys(roots))
    own = set(stack)
    other: set[str] = set()
    is_root = set(stack)
    while stack:
        name = stack.pop()
        expr = ad.get_expr(name)
        if expr is None:
            if name not in is_root:
                other.add(name)
            continue
        for ref in references(expr):
            if ref == ALL:
                other.add(ALL)
            elif ref.startswith("target."):
                other.add(ref[7:])
            elif ref not in own:
                own.add(ref)
                stack.append(ref)
    return own, other


def _exprs(ad: ClassAd) -> dict[str, Expr]:
    # The language keeps an ad's expressions in a dict keyed by lower-cased name (``_ex``; the
    # spellings are in ``_names``); reading it directly is what makes grouping 100,000 jobs cheap
    # (ClassAd.get_expr lower-cases on every call).
    return ad._ex


def with_expr(ad: ClassAd, name: str, expr: Expr) -> ClassAd:
    """A copy of ``ad`` with ``name`` bound to ``expr`` -- ``copy()`` and ``ad[name] = expr`` without
    the per-call conversions of ``__setitem__`` (the negotiator does this once per match)."""
    fresh = ad.copy()  # a fresh ad owns its dicts: writing them directly is safe
    fresh._ex[name.lower()] = expr
    fresh._names.setdefault(name.lower(), name)
    return fresh


class JobKinds:
    """Assigns each job ad its kind (an int) given the names resources may look up in jobs."""

    def __init__(self, resource_names: set[str]) -> None:
        self.everything = ALL in resource_names
        self.base = tuple(sorted((resource_names | set(JOB_ROOTS)) - {ALL}))
        self._levels: dict[tuple[int, tuple[Node | None, ...]], tuple[int, tuple[str, ...]]] = {}
        self._seen: dict[int, frozenset[str]] = {0: frozenset(self.base)}
        self._whole: dict[tuple[tuple[str, Node], ...], int] = {}
        self._by_identity: dict[tuple[int, ...], int] = {}
        self._flat: tuple[str, ...] = self.base
        self._pinned: list[tuple[Expr | None, ...]] = []

    def kind(self, ad: ClassAd) -> int:
        ex = _exprs(ad)
        if self.everything:
            return self._whole_ad(ex)
        # Fast path: the jobs of one cluster share their expression objects, so the ids of the
        # objects bound to every name any walk has visited (``_flat``) decide the kind.  Those
        # objects are kept alive (``_pinned``) so that no id is ever reused for another object.
        exprs = tuple(map(ex.get, self._flat))
        ident = tuple(map(id, exprs))
        found = self._by_identity.get(ident)
        if found is None:
            found = self._walk_levels(ex)
            if len(self._flat) != len(ident):  # the walk met new names: older keys are too short
                self._by_identity.clear()
                self._pinned.clear()
                exprs = tuple(map(ex.get, self._flat))
                ident = tuple(map(id, exprs))
            if found >= 0:  # a whole-ad kind depends on more than these names: never cache it
                self._by_identity[ident] = found
                self._pinned.append(exprs)
        return found

    def _walk_levels(self, ex: dict[str, Expr]) -> int:
        token, names = 0, self.base
        while names:
            exprs = tuple(map(ex.get, names))
            entry = self._level(token, exprs, ex, names)
            if entry[0] < 0:
                return self._whole_ad(ex)
            token, names = entry
        return token

    def _level(self, token: int, exprs: tuple[Expr | None, ...], ex: dict[str, Expr],
               names: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        key = (token, tuple([None if e is None else e.node for e in exprs]))
        entry = self._levels.get(key)
        if entry is None:
            entry = self._levels[key] = self._next_level(token, ex, names)
        return entry

    def _next_level(self, token: int, ex: dict[str, Expr],
                    names: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        seen = self._seen[token]
        reached: set[str] = set()
        for name in names:
            expr = ex.get(name)
            if expr is not None:
                reached |= references(expr)
        if ALL in reached:
            return (-1, ())
        reached = {name for name in reached if not name.startswith("target.")}
        fresh = len(self._seen)
        self._seen[fresh] = seen | reached
        self._flat += tuple(sorted(reached - set(self._flat)))
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
        names, other = lookups(ad, (*RESOURCE_ROOTS, *self.job_names))
        if self.everything or ALL in other:
            names = set(_exprs(ad))
        return tuple(sorted(names - {ALL}))

    def class_of(self, ad: ClassAd, names: tuple[str, ...]) -> int:
        ex = _exprs(ad)
        key = tuple([(name, e.node if (e := ex.get(name)) is not None else None) for name in names])
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found
