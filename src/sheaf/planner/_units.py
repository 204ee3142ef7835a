"""The clustering state: which *unit* (plain job or cluster) runs each abstract job.

A unit is either a plain abstract job -- its unit id is its own graph id ``j`` -- or a cluster,
whose unit id is ``n + k`` for the k-th cluster made (``n`` jobs).  ``unit_of[j]`` maps every job to
its unit, so each job runs exactly once by construction.  A pass adds clusters with ``add``; a
cluster that takes in jobs of an earlier cluster absorbs it whole (only whole-workflow clustering
does that, see ``_planner``), and the earlier one is dropped.

``contract`` builds the unit graph: every abstract edge ``a -> b`` mapped to ``unit(a) -> unit(b)``,
self-loops dropped, duplicates merged -- so no edge is ever lost, including one entering a cluster
at a member that is not one of its roots.  Units are numbered compactly in the order their first
job appears in the file (the output order); the graph keeps parents and children lists, a
topological order (Kahn, FIFO from the roots in compact order), levels (1 + the maximum level of
the parents, O(V + E)), and -- when the unit graph has a cycle -- the cycle as data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sheaf.model import Graph, cycle_in, kahn_levels

TKey = tuple[str | None, str, str | None]


@dataclass(slots=True)
class Cluster:
    members: list[int]              # abstract job ids (graph numbering), in the order they run
    site: str
    technique: str                  # horizontal | runtime | label | whole
    name: str                       # node id before deduplication
    tkey: TKey | None               # shared transformation of the members, else None
    aggregator: str
    label: str | None = None
    level: int = 0                  # the level it was made at (horizontal: the PID of its name)


@dataclass(slots=True)
class Units:
    n: int
    unit_of: list[int] = field(default_factory=list)
    clusters: list[Cluster | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.unit_of:
            self.unit_of = list(range(self.n))

    def add(self, cluster: Cluster) -> None:
        cid = self.n + len(self.clusters)
        unit_of, n = self.unit_of, self.n
        for j in cluster.members:
            old = unit_of[j]
            if old >= n:
                self.clusters[old - n] = None
            unit_of[j] = cid
        self.clusters.append(cluster)

    @property
    def clustered(self) -> bool:
        return any(c is not None for c in self.clusters)

    def cluster(self, unit: int) -> Cluster | None:
        return self.clusters[unit - self.n] if unit >= self.n else None


@dataclass(slots=True)
class UnitGraph:
    units: list[int]                 # compact index -> unit id
    compact: list[int]               # job -> compact index of its unit
    parents: list[list[int]]
    children: list[list[int]]
    order: list[int]                 # topological order (complete only when acyclic)
    levels: list[int]
    witness: dict[tuple[int, int], tuple[int, int]]  # unit edge -> one abstract edge behind it

    @property
    def acyclic(self) -> bool:
        return len(self.order) == len(self.units)

    def edges(self) -> list[tuple[int, int]]:
        return [(p, c) for p, kids in enumerate(self.children) for c in kids]

    def find_cycle(self) -> list[int]:
        """A cycle of compact units in dependency direction, first repeated at the end ([] if none)."""
        ordered = set(self.order)
        return cycle_in([u for u in range(len(self.units)) if u not in ordered], self.parents.__getitem__)


def contract(units: Units, graph: Graph, *, witness: bool = False) -> UnitGraph:
    """The unit graph of ``units`` over the abstract ``graph`` (module docstring)."""
    n = units.n
    slot = [-1] * (n + len(units.clusters))
    order_units: list[int] = []
    compact = [0] * n
    for j, u in enumerate(units.unit_of):
        c = slot[u]
        if c < 0:
            c = slot[u] = len(order_units)
            order_units.append(u)
        compact[j] = c
    m = len(order_units)
    keys, seen = _edge_keys(compact, m, graph.edges(), witness)
    parents: list[list[int]] = [[] for _ in range(m)]
    children: list[list[int]] = [[] for _ in range(m)]
    for key in sorted(keys):
        p, c = divmod(key, m)
        children[p].append(c)
        parents[c].append(p)
    topo, levels = _kahn(parents, children)
    return UnitGraph(order_units, compact, parents, children, topo, levels, seen)


def _edge_keys(compact: list[int], m: int, edges: Iterable[tuple[int, int]],
               witness: bool) -> tuple[set[int], dict[tuple[int, int], tuple[int, int]]]:
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    if not witness:
        keys = {cp * m + cc for cp, cc in ((compact[p], compact[c]) for p, c in edges) if cp != cc}
        return keys, seen
    keys = set()
    for p, c in edges:
        cp, cc = compact[p], compact[c]
        if cp != cc:
            keys.add(cp * m + cc)
            seen.setdefault((cp, cc), (p, c))
    return keys, seen


def _kahn(parents: list[list[int]], children: list[list[int]]) -> tuple[list[int], list[int]]:
    """Kahn's order (FIFO from the roots: level by level) and each unit's level (``kahn_levels``)."""
    levels, _ = kahn_levels(range(len(parents)), parents.__getitem__, children.__getitem__)
    order: list[int] = []
    level = [1] * len(parents)
    for depth, members in enumerate(levels, 1):
        order.extend(members)
        for unit in members:
            level[unit] = depth
    return order, level
