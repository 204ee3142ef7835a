"""Throttles: DAGMan's maxjobs, maxidle, maxpre, maxpost and per-CATEGORY MAXJOBS, as objects.

Policy
------
A throttle is a counter with a validated capacity (an ``int >= 0``; ``0`` means *unlimited*, as in
DAGMan's ``DAGMAN_MAX_JOBS_SUBMITTED = 0``).  ``try_acquire()`` never blocks: it takes one token
and returns ``True``, or returns ``False`` and changes nothing.  ``release()`` gives one back; a
release without a matching acquire is a bug and raises.  ``statistics()`` reports the counts for
``sheaf status`` and tests (the shape of trio's ``CapacityLimiter.statistics()``).

``maxidle`` is different in kind: the engine does not know when a queued attempt starts, only the
backend does, so :class:`IdleThrottle` is *told* the backend's idle count (``observe``) and counts
the submissions it allowed since then.  It therefore never blocks a submission when the backend
reports nothing idle.

Invariant: ``0 <= borrowed <= capacity`` whenever ``capacity > 0``.
"""

from __future__ import annotations

__all__ = ["IdleThrottle", "Limits", "Throttle", "ThrottleStatistics"]

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ThrottleStatistics:
    name: str
    capacity: int  # 0: unlimited
    borrowed: int
    refused: int  # how many try_acquire() calls found the throttle full


def _validated(name: str, capacity: int) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise ValueError(f"throttle {name!r}: capacity must be an integer >= 0 (0 = unlimited), "
                         f"got {capacity!r}")
    return capacity


class Throttle:
    """At most ``capacity`` holders at once; ``capacity == 0`` means no limit."""

    __slots__ = ("_borrowed", "_capacity", "_refused", "name")

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self._capacity = _validated(name, capacity)
        self._borrowed = 0
        self._refused = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def borrowed(self) -> int:
        return self._borrowed

    def available(self) -> bool:
        return self._capacity == 0 or self._borrowed < self._capacity

    def try_acquire(self) -> bool:
        if not self.available():
            self._refused += 1
            return False
        self._borrowed += 1
        return True

    def release(self) -> None:
        if self._borrowed == 0:
            raise RuntimeError(f"throttle {self.name!r}: release() without a matching acquire")
        self._borrowed -= 1

    def statistics(self) -> ThrottleStatistics:
        return ThrottleStatistics(self.name, self._capacity, self._borrowed, self._refused)

    def __repr__(self) -> str:
        return f"Throttle({self.name!r}, capacity={self._capacity}, borrowed={self._borrowed})"


class IdleThrottle:
    """``maxidle``: no new submission while the backend holds ``capacity`` idle attempts.

    ``observe(idle)`` records the backend's count at the start of a dispatch round; each allowed
    submission is assumed idle until the next observation.
    """

    __slots__ = ("_capacity", "_idle", "_refused", "name")

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self._capacity = _validated(name, capacity)
        self._idle = 0
        self._refused = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    def observe(self, idle: int) -> None:
        self._idle = max(0, int(idle))

    def available(self) -> bool:
        return self._capacity == 0 or self._idle < self._capacity

    def try_acquire(self) -> bool:
        if not self.available():
            self._refused += 1
            return False
        self._idle += 1
        return True

    def statistics(self) -> ThrottleStatistics:
        return ThrottleStatistics(self.name, self._capacity, self._idle, self._refused)


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-workflow throttles and ordering knobs (DAGMan's); 0 means unlimited for a throttle."""

    maxjobs: int = 0
    maxidle: int = 1000
    maxpre: int = 20
    maxpost: int = 20
    always_run_post: bool = False
    depth_first: bool = False  # DAGMAN_SUBMIT_DEPTH_FIRST
    retry_node_first: bool = False  # DAGMAN_RETRY_NODE_FIRST
    dag_priority: int = 0  # DAGMAN_DEFAULT_PRIORITY, or the SUBDAG node's effective priority
    job_failure_tolerance: int = 0  # DAGMAN_NODE_JOB_FAILURE_TOLERANCE (procs of a node that may fail)
    remove_job_list_on_failure: bool = True  # DAGMAN_REMOVE_JOB_LIST_ON_FAILURE
    max_job_holds: int = 100  # DAGMAN_MAX_JOB_HOLDS (0: no limit)
    batch_name: str = ""  # the node jobs' JobBatchName (condor_submit_dag -batch-name, else its default)
    suppress_notification: bool = False  # DAGMAN_SUPPRESS_NOTIFICATION / -suppress_notification
    max_submits_per_interval: int = 100  # DAGMAN_MAX_SUBMITS_PER_INTERVAL: Submits per step (1..1000)
