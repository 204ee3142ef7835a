"""The job graph: explicit and file-implied dependencies over dense integer node ids.

``build_graph(workflow)`` numbers the jobs ``0..n-1`` in file order and returns an immutable
``Graph`` in compressed sparse row form (two ``array('i')`` pairs: parents and children), which is
what the planner walks at 10^6 jobs.  Edges:

- every explicit dependency (``Workflow.dependencies``);
- every file-implied one: the job that produces ``f`` (an ``output`` or ``checkpoint`` use) is a
  parent of every other job that consumes ``f`` (an ``input`` or ``checkpoint`` use).  When several
  jobs produce ``f``, the last of them in file order is its consumers' parent, as pegasus-plan infers
  data dependencies (its DAX/YAML parser keeps one creator per file, the last it reads); the producers
  are recorded in ``Graph.shared_outputs`` for the planner to warn about.

Duplicate edges are merged; a node's parents and children are kept in ascending id order, so
every traversal is deterministic whatever ``PYTHONHASHSEED`` is.

Rules checked while building (``ValidationError`` naming the offending value): a dependency names an
unknown job; a job depends on itself; a job reads a file it also
writes, other than a checkpoint file (but in a WfCommons trace); a produced file's lfn leaves the
working directory it is written in (empty, absolute, or with a ``..`` part): staging it out or
cleaning it up would reach outside that directory.  Cycles are *data*:
``topological_order`` returns ``None`` when there is one and ``find_cycle`` returns its path.

All traversals are iterative with in-degree counters (graphlib-shaped): O(V + E), no recursion,
no rescans of parent lists.

The same two algorithms over any graph of hashable nodes are ``_toposort``'s; ``Graph`` keeps its own
loops over its arrays, the planner's path at 10^6 jobs, and finds its cycles with ``cycle_in``.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet

from sheaf.errors import ValidationError
from sheaf.model._toposort import cycle_in
from sheaf.model._workflow import Workflow, all_uses


class Graph:
    """An immutable DAG candidate over node ids ``0..n-1`` with string names ``ids[i]``."""

    __slots__ = ("_children", "_cptr", "_parents", "_pptr", "checkpoints", "file_count", "ids", "index",
                 "inputs", "produced_watched", "shared_outputs")

    def __init__(self, ids: Sequence[str], parent_lists: Sequence[Sequence[int]],
                 index: dict[str, int] | None = None) -> None:
        self.ids = ids if isinstance(ids, list) else list(ids)
        #: distinct lfns of the workflow, counted by ``build_graph`` while it infers file edges
        self.file_count: int | None = None
        #: what ``build_graph`` found while inferring file edges (None when it did not): the lfns jobs
        #: read as inputs and no job produces, and the lfns of checkpoint uses
        self.inputs: set[str] | None = None
        self.checkpoints: set[str] | None = None
        #: the lfns of ``build_graph``'s ``watch`` that a job produces (None when it watched none)
        self.produced_watched: set[str] | None = None
        #: lfn -> the node ids of its producers in file order, for the lfns more than one job produces
        self.shared_outputs: dict[str, list[int]] = {}
        self.index = index if index is not None else {name: i for i, name in enumerate(self.ids)}
        n = len(self.ids)
        pptr = array("l", bytes(8 * (n + 1)))
        flat: list[int] = []
        extend = flat.extend
        for i, plist in enumerate(parent_lists):
            extend(sorted(set(plist)) if len(plist) > 1 else plist)
            pptr[i + 1] = len(flat)
        parents = array("i", flat)
        # children CSR by a counting sort over parents: ascending child ids per parent
        counts = [0] * (n + 1)
        for p in flat:
            counts[p + 1] += 1
        running = 0
        for i in range(n + 1):
            running += counts[i]
            counts[i] = running
        cptr = array("l", counts)
        fill = counts  # reused as the next free position of each parent
        children = [0] * len(flat)
        k = 0
        for child in range(n):
            end = pptr[child + 1]
            while k < end:
                p = flat[k]
                children[fill[p]] = child
                fill[p] += 1
                k += 1
        self._pptr, self._parents, self._cptr, self._children = pptr, parents, cptr, array("i", children)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def edge_count(self) -> int:
        return len(self._parents)

    def parents(self, node: int) -> array[int]:
        return self._parents[self._pptr[node]:self._pptr[node + 1]]

    def children(self, node: int) -> array[int]:
        return self._children[self._cptr[node]:self._cptr[node + 1]]

    def in_degree(self, node: int) -> int:
        return self._pptr[node + 1] - self._pptr[node]

    def out_degree(self, node: int) -> int:
        return self._cptr[node + 1] - self._cptr[node]

    def edges(self) -> Iterable[tuple[int, int]]:
        """All edges ``(parent, child)``, ordered by child then parent."""
        pptr, parents = self._pptr, self._parents
        for child in range(len(self.ids)):
            for k in range(pptr[child], pptr[child + 1]):
                yield parents[k], child

    def roots(self) -> list[int]:
        pptr = self._pptr
        return [i for i in range(len(self.ids)) if pptr[i + 1] == pptr[i]]

    def topological_order(self) -> list[int] | None:
        """Kahn's order (smallest ready id first among a level's ties: file order); None on a cycle."""
        order = self._order_prefix()
        return order if len(order) == len(self.ids) else None

    def _order_prefix(self) -> list[int]:
        """Kahn's order of the nodes no cycle blocks (every node when acyclic)."""
        n = len(self.ids)
        pptr, cptr, children = self._pptr, self._cptr, self._children
        indeg = [pptr[i + 1] - pptr[i] for i in range(n)]
        order = [i for i in range(n) if indeg[i] == 0]
        head = 0
        while head < len(order):
            node = order[head]
            head += 1
            for k in range(cptr[node], cptr[node + 1]):
                child = children[k]
                indeg[child] -= 1
                if indeg[child] == 0:
                    order.append(child)
        return order

    def levels(self, order: Sequence[int] | None = None) -> list[int]:
        """Level of each node: 1 for a root, else 1 + the maximum level of its parents (O(V+E))."""
        if order is None:
            order = self.topological_order()
            if order is None:
                raise ValidationError("the workflow has a cycle", rule="the job graph is acyclic",
                                      value=" -> ".join(self.find_cycle() or []))
        level = [1] * len(self.ids)
        cptr, children = self._cptr, self._children
        for node in order:
            next_level = level[node] + 1
            for k in range(cptr[node], cptr[node + 1]):
                child = children[k]
                # a compare and store costs a fifth of a max() call in this per-edge loop
                if level[child] < next_level:  # noqa: PLR1730
                    level[child] = next_level
        return level

    def find_cycle(self) -> list[str] | None:
        """A cycle's path as job ids (first id repeated at the end), or None if acyclic."""
        order = self._order_prefix()
        if len(order) == len(self.ids):
            return None
        pptr, parents = self._pptr, self._parents
        ordered = set(order)
        blocked = [i for i in range(len(self.ids)) if i not in ordered]
        cycle = cycle_in(blocked, lambda node: [parents[k] for k in range(pptr[node], pptr[node + 1])])
        return [self.ids[i] for i in cycle]


def build_graph(workflow: Workflow, *, infer: bool = True,
                watch: AbstractSet[str] = frozenset()) -> Graph:
    """The job graph of ``workflow`` (module docstring); raises ``ValidationError`` on bad references.
    With ``watch`` (and ``infer``), ``Graph.produced_watched`` says which of those lfns jobs produce."""
    ids = list(workflow.jobs)
    index = {name: i for i, name in enumerate(ids)}
    parent_lists: list[list[int]] = [[] for _ in ids]
    for parent, children in workflow.dependencies.items():
        p = index.get(parent)
        if p is None:
            raise ValidationError("a dependency names an unknown job",
                                  rule="jobDependencies name jobs of the workflow", value=parent)
        for child in children:
            c = index.get(child)
            if c is None:
                raise ValidationError(f"a dependency of job '{parent}' names an unknown job",
                                      rule="jobDependencies name jobs of the workflow", value=child)
            if c == p:
                raise ValidationError("a job depends on itself", rule="the job graph is acyclic",
                                      value=parent)
            parent_lists[c].append(p)
    found = _add_file_edges(workflow, ids, parent_lists, watch) if infer else None
    graph = Graph(ids, parent_lists, index)
    if found is not None:
        (graph.inputs, graph.checkpoints, graph.file_count, graph.produced_watched,
         graph.shared_outputs) = found
    return graph


def _add_file_edges(workflow: Workflow, ids: list[str], parent_lists: list[list[int]],
                    watch: AbstractSet[str]
                    ) -> tuple[set[str], set[str], int, set[str] | None, dict[str, list[int]]]:
    """One pass records producers and consumers; a second resolves consumers to their producer (the
    last one in file order, module docstring).

    Returns the inputs no job produces, the checkpoint files, and the number of distinct lfns
    (produced, plus consumed and never produced): what the summary and the data pass need, found here
    so that neither walks every use again (at 10^6 jobs each walk is seconds of cache misses); the
    lfns of ``watch`` that jobs produce (None without ``watch``); and the producers of every lfn that
    more than one job produces.
    """
    producer: dict[str, int] = {}
    setdefault = producer.setdefault
    shared: dict[str, list[int]] = {}
    consumer_lfns: list[str] = []
    consumer_jobs: list[int] = []
    checkpoints: set[str] = set()
    add_lfn, add_job = consumer_lfns.append, consumer_jobs.append
    for i, job in enumerate(workflow.jobs.values()):
        for use in all_uses(job):
            kind, lfn = use.type, use.lfn
            if kind != "input":
                other = setdefault(lfn, i)
                if other != i:
                    makers = shared.setdefault(lfn, [other])
                    makers.append(i)
                    producer[lfn] = i
                if kind != "output":
                    checkpoints.add(lfn)
            if kind != "output":
                add_lfn(lfn)
                add_job(i)
    _check_produced(producer)
    get = producer.get
    inputs: set[str] = set()
    add_input = inputs.add
    for lfn, i in zip(consumer_lfns, consumer_jobs, strict=True):
        p = get(lfn)
        if p is None:
            add_input(lfn)
        elif p != i and not (shared and i in shared.get(lfn, ())):
            parent_lists[i].append(p)
        elif lfn not in checkpoints and not workflow.trace:
            # a producer reads its own copy, not another producer's; Pegasus refuses a file a job both
            # reads and writes, but for a checkpoint file: it could be neither staged in as an input nor
            # trusted as an output
            raise ValidationError(f"file '{lfn}' is listed as input and output of job '{ids[i]}'",
                                  rule="a job's inputs are not its outputs (but for checkpoint files)",
                                  value=lfn)
    watched = producer.keys() & watch if watch else None  # iterates the smaller of the two
    return inputs, checkpoints, len(producer) + len(inputs), watched, shared


def _check_produced(lfns: Collection[str]) -> None:
    """Refuse a produced lfn that is empty, absolute or has a ``..`` part: a few substring searches of
    all of them joined, and a name-by-name look only when one finds something."""
    joined = "\n".join(lfns)
    if "" not in lfns and not joined.startswith("/") and "\n/" not in joined and ".." not in joined:
        return
    for lfn in lfns:
        if not lfn or lfn.startswith("/") or ".." in lfn.split("/"):
            raise ValidationError(f"a job writes file '{lfn}' outside its working directory",
                                  rule="a produced lfn is a relative path without '..'", value=lfn)
