"""How one horizontal group is cut into clusters: pure functions over positions ``0..n-1``.

A group's jobs come in workflow-file order; every function returns bins as lists of positions,
each bin in ascending position (file) order, bins in the order they were opened.  Nothing here
knows about jobs, sites or profiles, so the invariants are checked directly with hypothesis:

- ``by_size(n, s)``: consecutive chunks of ``s`` (4 jobs, s = 3 -> 3 and 1);
- ``by_num(n, b)``: ``b`` chunks as even as possible, larger ones first (4 jobs, b = 3 -> 2, 1, 1);
- ``first_fit_decreasing(runtimes, m)``: longest first (ties: file order), each job into the
  lowest-numbered bin whose sum stays ``<= m``, else a new bin; a job longer than ``m`` goes into no
  bin (returned apart).  A segment tree over bin loads finds that bin in O(log n), so a group of
  10^5 jobs costs O(n log n), never O(n * bins);
- ``longest_processing_time(runtimes, k)``: longest first onto the currently least loaded of ``k``
  bins (ties: the lowest-numbered bin), a heap of ``(load, bin)``; empty bins are dropped.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def by_size(n: int, size: int) -> list[list[int]]:
    return [list(range(start, min(start + size, n))) for start in range(0, n, size)]


def by_num(n: int, num: int) -> list[list[int]]:
    num = min(num, n)
    if num <= 0:
        return []
    base, extra = divmod(n, num)
    bins: list[list[int]] = []
    start = 0
    for i in range(num):
        width = base + (1 if i < extra else 0)
        bins.append(list(range(start, start + width)))
        start += width
    return bins


def _longest_first(runtimes: Sequence[float]) -> list[int]:
    # sorted() is stable: equal runtimes keep file order.
    return sorted(range(len(runtimes)), key=lambda i: -runtimes[i])


def first_fit_decreasing(runtimes: Sequence[float], limit: float) -> tuple[list[list[int]], list[int]]:
    """Bins of summed runtime ``<= limit`` and the positions too long for any bin (module doc)."""
    order = _longest_first(runtimes)
    too_long = sorted(i for i in order if runtimes[i] > limit)
    fits = [i for i in order if runtimes[i] <= limit]
    tree = _MinLoadTree(len(fits))
    bins: list[list[int]] = []
    for i in fits:
        b = tree.first_fitting(runtimes[i], limit)
        if b == len(bins):
            bins.append([])
        bins[b].append(i)
        tree.add(b, runtimes[i])
    for members in bins:
        members.sort()
    return bins, too_long


def longest_processing_time(runtimes: Sequence[float], k: int) -> list[list[int]]:
    """``k`` bins of similar total runtime, longest job first onto the least loaded bin."""
    heap: list[tuple[float, int]] = [(0.0, b) for b in range(k)]
    bins: list[list[int]] = [[] for _ in range(k)]
    for i in _longest_first(runtimes):
        load, b = heap[0]
        bins[b].append(i)
        heapq.heapreplace(heap, (load + runtimes[i], b))
    for members in bins:
        members.sort()
    return [members for members in bins if members]


class _MinLoadTree:
    """Minimum bin load per subtree over ``size`` bins; unopened bins have load 0."""

    __slots__ = ("_leaves", "_min")

    def __init__(self, size: int) -> None:
        leaves = 1
        while leaves < max(size, 1):
            leaves *= 2
        self._leaves = leaves
        self._min = [0.0] * (2 * leaves)

    def first_fitting(self, runtime: float, limit: float) -> int:
        """The lowest-numbered bin whose load + runtime <= limit (an unopened bin always fits)."""
        node = 1
        loads = self._min
        while node < self._leaves:
            left = 2 * node
            node = left if loads[left] + runtime <= limit else left + 1
        return node - self._leaves

    def add(self, b: int, runtime: float) -> None:
        node = b + self._leaves
        loads = self._min
        loads[node] += runtime
        node //= 2
        while node:
            loads[node] = min(loads[2 * node], loads[2 * node + 1])
            node //= 2
