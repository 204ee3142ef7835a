"""The local backend's queue of launches waiting for resources.

Order: highest ``priority`` first, submission order (FIFO) among equals.

Cost: launches that the pool cannot tell apart are grouped in one *bucket*: same match signature
(``sheaf.backends._poolsig``: requests, requirements, rank and every job attribute they read, so
``DAGNodeRetry`` where it matters), universe and concurrency limits -- ``shape_of``.  A scheduling
pass tries only the head of each bucket, best first; when a head cannot start, the rest of its
bucket could not either and is skipped for that pass.  So a pass costs one match attempt per bucket,
not per queued launch: 10,000 queued ``/bin/true`` cost one attempt when a slot frees.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sheaf.backends._poolsig import signature
from sheaf.classad import ClassAd
from sheaf.engine import Launch

__all__ = ["LaunchQueue", "Order", "Outcome", "Shape", "shape_of"]

SHAPE_ATTRS = ("ConcurrencyLimits", "JobUniverse", "Universe")

Outcome = str  # "started" | "blocked" | "dropped" (started, waits, or left the queue with an event)
Shape = tuple[object, ...]
Order = tuple[int, int]  # (-priority, sequence): the smallest goes first
_SEQUENCES = 1 << 62  # sequence numbers stay below this: (-priority, sequence) ranks as one int


def _rank(order: Order) -> int:
    """``order`` as one int of the same order: a bucket's heap compares ints, which is cheaper than
    comparing (order, entry) tuples of tuples, once per launch started."""
    return order[0] * _SEQUENCES + order[1]


def shape_of(ad: ClassAd) -> Shape:
    """What decides where and whether a job can run: ``(match signature, limits, universe)``."""
    return (signature(ad), *map(ad.get_expr, SHAPE_ATTRS))


@dataclass(slots=True)
class _Entry:
    order: Order
    launch: Launch
    live: bool = True


class LaunchQueue:
    """Buckets of launches by shape, each bucket ordered by (priority, FIFO).

    Each distinct shape is kept once (``_shapes``) and its bucket is found by that object's ``id``:
    a shape is a tuple of ``Expr``, whose hash is a Python method, and a tuple's hash is never
    cached -- looked up by value, every bind of a launch would hash its shape three times."""

    def __init__(self) -> None:
        self._shapes: dict[Shape, Shape] = {}  # each shape met, as the one object kept for it
        self._buckets: dict[int, tuple[Shape, list[tuple[int, _Entry]]]] = {}  # id(shape) -> heap
        self._entries: dict[str, _Entry] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def push(self, launch: Launch, order: Order | None = None, shape: Shape | None = None) -> Order:
        """Queue ``launch`` last among its priority, or back in its place ``order`` (as it was
        returned then, with its ``shape``: not computed again); returns its place."""
        entry = _Entry(order or (-launch.priority, next(self._seq)), launch)
        self._entries[launch.key] = entry
        if shape is None:
            shape = shape_of(launch.job_ad)
        kept = self._shapes.setdefault(shape, shape)
        bucket = self._buckets.get(id(kept))
        if bucket is None:
            bucket = self._buckets[id(kept)] = (kept, [])
        heapq.heappush(bucket[1], (_rank(entry.order), entry))
        return entry.order

    def first(self) -> tuple[Order, Launch, Shape] | None:
        """The launch a scheduling pass tries first, with its place and shape (not taken)."""
        best: tuple[Order, Launch, Shape] | None = None
        for key in list(self._buckets):
            entry = self._head(key)
            if entry is not None and (best is None or entry.order < best[0]):
                best = (entry.order, entry.launch, self._buckets[key][0])
        return best

    def take_first(self, shape: Shape) -> None:
        """Take the head of ``shape``'s bucket (what :meth:`first` returned) off the queue."""
        key = self._key(shape)
        entry = self._head(key)
        assert entry is not None
        self._take(key, entry)

    def remove(self, key: str) -> bool:
        """Drop a queued launch (lazily: its heap item is skipped later)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        entry.live = False
        return True

    def _key(self, shape: Shape) -> int:
        """The bucket key of ``shape``: its ``id`` when it is the object kept (as this queue hands
        shapes out), else that of the kept one equal to it."""
        return id(shape) if id(shape) in self._buckets else id(self._shapes.get(shape, shape))

    def _head(self, key: int) -> _Entry | None:
        bucket = self._buckets.get(key)
        heap = bucket[1] if bucket is not None else None
        while heap and not heap[0][1].live:
            heapq.heappop(heap)
        if not heap:
            self._buckets.pop(key, None)
            return None
        return heap[0][1]

    def _take(self, key: int, entry: _Entry) -> None:
        heapq.heappop(self._buckets[key][1])
        self._entries.pop(entry.launch.key, None)
        entry.live = False

    def schedule(self, attempt: Callable[[Launch, Shape], Outcome]) -> int:
        """One pass (see the module docstring); returns how many launches left the queue."""
        heads = [(e.order, key) for key in list(self._buckets) if (e := self._head(key)) is not None]
        heapq.heapify(heads)
        taken = 0
        while heads:
            _, key = heapq.heappop(heads)
            entry = self._head(key)
            if entry is None or attempt(entry.launch, self._buckets[key][0]) == "blocked":
                continue
            self._take(key, entry)
            taken += 1
            following = self._head(key)
            if following is not None:
                heapq.heappush(heads, (following.order, key))
        return taken

    def launches(self) -> Iterator[Launch]:
        return (entry.launch for entry in list(self._entries.values()))

    def clear(self) -> None:
        self._buckets.clear()
        self._entries.clear()
        self._shapes.clear()
