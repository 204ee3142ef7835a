"""Match signatures: which jobs the pool may treat alike (HTCondor's *autoclusters*, for one machine).

Two job ads with the same signature get the same answer from matching against the same slot ad:
the signature holds the expressions the match evaluates (``Requirements``, ``Rank``,
``RequestCpus``, ``RequestMemory``, ``RequestDisk``) and, transitively, every job attribute they may
read from MY (qualified ``MY.x`` or unqualified ``x``, which compat mode looks up in MY first),
with that attribute's expression in this ad (None when absent).  ``TARGET.x`` is the slot's business
and is left out.  So ``DAGNodeRetry`` is part of the signature of a job whose ``request_memory``
reads it, and of no other.

Expressions are hashable and structurally compared (``sheaf.classad.Expr``), so a signature is a
plain hashable tuple; the references of each expression are computed once and cached.
"""

from __future__ import annotations

from typing import Any

from sheaf.classad import ClassAd, Expr

__all__ = ["MATCH_ATTRS", "signature"]

MATCH_ATTRS = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk")
_SCOPES = {"target", "my", "parent"}
_REFS: dict[Expr, frozenset[str]] = {}
_REFS_LIMIT = 65536


def _references(expr: Expr) -> frozenset[str]:
    """Lower-cased names ``expr`` may read from MY (an iterative walk of the node tuples)."""
    found = _REFS.get(expr)
    if found is not None:
        return found
    names: set[str] = set()
    stack: list[Any] = [expr.node]
    while stack:
        node = stack.pop()
        if not isinstance(node, tuple) or not node:
            continue
        kind = node[0]
        if not isinstance(kind, str):  # a tuple of nodes (call arguments, list items)
            stack.extend(node)
        elif kind == "attr" and isinstance(node[1], str):
            names.add(node[1].lower())
        elif kind == "sel" and len(node) == 3 and _is_scope(node[1]):
            if node[1][1].lower() == "my":
                names.add(str(node[2]).lower())
        else:
            stack.extend(part for part in node[1:] if isinstance(part, tuple))
    result = frozenset(names - _SCOPES)
    if len(_REFS) >= _REFS_LIMIT:
        _REFS.clear()
    _REFS[expr] = result
    return result


def _is_scope(node: Any) -> bool:
    return (isinstance(node, tuple) and len(node) == 2 and node[0] == "attr"
            and isinstance(node[1], str) and node[1].lower() in _SCOPES)


def signature(ad: ClassAd) -> tuple[object, ...]:
    """The match signature of ``ad`` (see the module docstring)."""
    heads = tuple(map(ad.get_expr, MATCH_ATTRS))  # map: no generator frame (a job's submit asks)
    seen: dict[str, Expr | None] = {}
    stack = [expr for expr in heads if expr is not None]
    while stack:
        for name in _references(stack.pop()):
            if name in seen or name in ("requirements", "rank"):
                continue
            found = seen[name] = ad.get_expr(name)
            if found is not None:
                stack.append(found)
    return heads, tuple(sorted(seen.items(), key=lambda item: item[0]))
