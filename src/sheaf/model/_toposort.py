"""Topological order and cycles over any graph of hashable nodes: the one toolkit that a DAG file's
nodes, a PMC DAG's tasks, the planner's clustering units and the engine's graph metrics share.

Iterative with in-degree counters (graphlib-shaped): O(V + E), no recursion, no rescans of parent lists,
and deterministic: every order follows the order the caller lists nodes and edges in, never a hash.
A cycle is data: :func:`kahn_levels` returns what it blocks, :func:`cycle_in` the cycle's path.
This module imports nothing, so the DAG reader pays nothing for the rest of ``sheaf.model``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from typing import TypeVar

__all__ = ["cycle_in", "kahn_levels"]

N = TypeVar("N", bound=Hashable)


def kahn_levels(nodes: Iterable[N], parents: Callable[[N], Collection[N]],
                children: Callable[[N], Iterable[N]]) -> tuple[list[list[N]], list[N]]:
    """Kahn's order of a graph, level by level: the roots first (in ``nodes``' order), then each node in
    the level after its last parent's (a node's level is 1 + the maximum of its parents'; within a level,
    the order the nodes became ready); and the nodes left blocked by a cycle (empty when acyclic).
    A parent listed twice must be listed twice by ``children`` too (an edge counts once per listing)."""
    indegree = {node: len(parents(node)) for node in nodes}
    level = [node for node, count in indegree.items() if count == 0]
    levels: list[list[N]] = []
    while level:
        levels.append(level)
        following: list[N] = []
        for node in level:
            for child in children(node):
                indegree[child] -= 1
                if indegree[child] == 0:
                    following.append(child)
        level = following
    return levels, [node for node, count in indegree.items() if count > 0]


def cycle_in(blocked: Collection[N], parents: Callable[[N], Iterable[N]]) -> list[N]:
    """A cycle among ``blocked`` (what :func:`kahn_levels` left), in dependency order with its first node
    repeated at the end: every blocked node has a blocked parent (that is why it is blocked), so walking
    up through blocked parents from the first one repeats a node; [] when nothing is blocked."""
    inside = set(blocked)
    if not inside:
        return []
    seen: dict[N, int] = {}
    walk: list[N] = []
    node = next(iter(blocked))
    while node not in seen:
        seen[node] = len(walk)
        walk.append(node)
        node = next(parent for parent in parents(node) if parent in inside)
    cycle = [*walk[seen[node]:], node]
    cycle.reverse()  # the walk went up, parent by parent
    return cycle
