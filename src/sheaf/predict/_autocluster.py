"""How many jobs a group of independent tasks should run as: the choice ``--cluster auto`` makes.

A *group* is what horizontal clustering merges: tasks of one level, site and transformation, none
depending on another.  Cut into ``k`` jobs balanced by runtime, they cost, under the mean overheads
of the site (``L`` = engine + submit, the latency every job pays before it may start; ``a`` =
launch and ``t`` = per task, which hold a slot; ``p`` = post), on ``S`` slots first come first served::

    T(k) = L + max(a + m * t + max(R / k, longest, m * shortest),  (the largest job)
                   ceil(k / S) * (k * a + n * t + R) / k,          (the waves of the mean job)
                   (k - 1) * d + (k * a + n * t + R) / k) + p     (one start a dispatch interval d)

where ``m = ceil(n / k)`` is the largest job's task count (exact when the tasks are equal).
:func:`best_count` returns the ``k`` of least ``T`` -- the fewest jobs among those within
``tolerance`` of it, since a job costs the site a submission whatever the model says -- never below
``fewest`` (a wall-time limit's ``ceil(R / limit)``).  Every ``k`` from ``fewest`` to ``n`` is
tried: O(n) arithmetic.  The formula is exact for equal tasks; given the caller's way of cutting,
the best-ranked counts are costed on the bins themselves, longest first, first come first served on
the slots (uneven jobs fill waves unevenly).
:func:`group_makespan` is the same cost for the bins actually made, job by job (a slot heap), which
the tests hold against the simulation.
"""

from __future__ import annotations

__all__ = ["AutoModel", "best_count", "group_makespan"]

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sheaf.predict._overheads import OverheadModel, Overheads


@dataclass(frozen=True, slots=True)
class AutoModel:
    """What ``--cluster auto`` optimises under: the overhead model of ``backend`` (or a site's own),
    ``slots`` per site, a wall-time limit per job (seconds; None: none), runtime ``estimates``
    per transformation for tasks without a runtime profile (from earlier runs), and where the slots
    came from (``slots_source``, in words)."""

    model: OverheadModel = field(default_factory=OverheadModel)
    backend: str = "local"
    slots: int = 1
    walltime: float | None = None
    estimates: Mapping[str, float] = field(default_factory=dict)
    slots_source: str = ""

    def overheads(self, site: str | None) -> Overheads:
        return self.model.for_site(site, self.backend)


_EXACT_ALL = 64    # a group this small has every count costed on its bins
_EXACT_BEST = 12   # a larger one, the counts the formula ranks best


def _cost(k: int, n: int, total: float, longest: float, shortest: float, o: Overheads, slots: int) -> float:
    most = -(-n // k)  # the largest job's task count
    largest = o.launch.mean + most * o.task.mean + max(total / k, longest, most * shortest)
    busy = k * o.launch.mean + n * o.task.mean + total  # the slot time of all k jobs
    starts = (k - 1) * o.dispatch + busy / k  # the site's scheduler starts one job per dispatch interval
    return o.engine.mean + o.submit.mean + max(largest, math.ceil(k / slots) * busy / k, starts) + o.post.mean


def best_count(runtimes: Sequence[float], overheads: Overheads, slots: int, *, fewest: int = 1,
               tolerance: float = 0.01, cut: Callable[[int], Sequence[Sequence[int]]] | None = None) -> int:
    """The number of jobs to run ``runtimes`` as (module docstring).  With ``cut`` (``k`` -> the bins
    of positions the caller would make, perhaps not ``k`` of them), the counts the formula ranks
    best -- every count, for a small group -- are costed on those bins by :func:`group_makespan`,
    and the ``k`` whose bins cost least (fewest jobs within ``tolerance``) is returned."""
    n = len(runtimes)
    if n <= 1:
        return n
    total, longest, shortest = float(sum(runtimes)), float(max(runtimes)), float(min(runtimes))
    fewest = min(max(1, fewest), n)
    slots = max(1, slots)
    costs = [(_cost(k, n, total, longest, shortest, overheads, slots), k, k) for k in range(fewest, n + 1)]
    if cut is not None:
        keep = len(costs) if n <= _EXACT_ALL else _EXACT_BEST
        ranked = {k for _, k, _ in sorted(costs)[:keep]} | {fewest, n}
        costs = []
        for k in sorted(ranked):
            bins = cut(k)
            loads = sorted(((sum(runtimes[i] for i in b), len(b)) for b in bins), reverse=True)
            costs.append((group_makespan([load for load, _ in loads], [count for _, count in loads],
                                         overheads, slots), len(bins), k))
    best = min(cost for cost, _, _ in costs)
    return min((jobs, k) for cost, jobs, k in costs if cost <= best * (1 + tolerance))[1]


def group_makespan(loads: Sequence[float], tasks: Sequence[int], overheads: Overheads, slots: int) -> float:
    """The mean-overhead makespan of independent jobs (``loads[i]`` seconds of ``tasks[i]`` tasks),
    started in this order on ``slots`` slots as they free."""
    if not loads:
        return 0.0
    o = overheads
    ready = o.engine.mean + o.submit.mean
    free = [ready] * min(max(1, slots), len(loads))
    end, last = 0.0, -math.inf
    for load, count in zip(loads, tasks, strict=True):
        start = max(heapq.heappop(free), last + o.dispatch)
        last = start
        finish = start + o.launch.mean + count * o.task.mean + load
        heapq.heappush(free, finish)
        end = max(end, finish)
    return end + o.post.mean
