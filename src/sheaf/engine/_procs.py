"""A node whose job is a cluster of several procs (``queue N``, ``queue ... in/from/matching``).

DAGMan runs the cluster as one node: the node's job succeeds when every proc succeeds, and its
``$RETURN`` is the exit code of the first proc that failed (the DAGMan manual's POST script macros).
The backend runs each proc under its own key ``node#attempt.proc``; :class:`ProcGroups` folds their
events into one event under the node's key ``node#attempt`` once the last proc has ended.  A proc
the pool can never run (``Held``) ends the cluster at once: the rest are removed and the node's
attempt fails.  A proc *removed* (its periodic_remove) is a failed proc, as DAGMan's
``ProcessAbortEvent`` counts it (``JobFailure``): within the node's tolerance the other procs go on;
past it the node's event is the first failure - the removal (``$RETURN`` -1002) when it came first.
Nodes of one proc enter a group only when a failure tolerance applies to them (a node's tolerance holds
whatever its number of procs); otherwise their events pass through.

Failure tolerance (``Node::CheckBatchFailed``): the job list fails once more procs failed than the
node's ``TOLERANCE`` (a number, or a percentage of the procs, rounded down), else
``DAGMAN_NODE_JOB_FAILURE_TOLERANCE`` (default 0).  Once failed, the remaining procs are removed at
once (``FAIL-FAST``; ``DAGMAN_REMOVE_JOB_LIST_ON_FAILURE``, default true) and the node's event is the
first failure, or left to run to their end (``WAIT``).  A cluster whose failures stay within the
tolerance succeeds (exit code 0).

What the cluster came to for its POST script (:class:`JobList`): each proc's exit code in proc order
(-1 for a proc killed by a signal, as its terminate event has it; None for a proc removed, or removed
when the list failed), and DAGMan's return value of the node, ``$RETURN``: the first failure's exit
code (``-signal``, -1002 for a removal), set again to 0 by each later proc that succeeds while the list
has not failed (``Dag::ProcessTerminatedEvent``), so that a tolerated failure followed by a success
returns 0 and one after the last success returns its code.
"""

from __future__ import annotations

__all__ = ["NO_TOLERANCE", "JobList", "ProcGroups", "Tolerance", "proc_of"]

from dataclasses import dataclass, field, replace

from sheaf.engine._backend import Exited, Held, Removed
from sheaf.engine._nodes import RETURN_ABORTED


@dataclass(frozen=True, slots=True)
class Tolerance:
    value: int = 0
    percent: bool = False
    fail_fast: bool = True

    def allows(self, failures: int, procs: int) -> bool:
        return failures <= (procs * self.value // 100 if self.percent else self.value)


NO_TOLERANCE = Tolerance()  # DAGMan's defaults: no failure tolerated, the rest removed


@dataclass(frozen=True, slots=True)
class JobList:
    """A node's job list at its end (module docstring): the procs' exit codes, DAGMan's return value."""

    codes: tuple[int | None, ...]
    returned: int


def proc_of(key: str) -> int:
    """The proc of a backend key: ``node#attempt`` (proc 0) or ``node#attempt.proc``."""
    _, _, tail = key.rpartition("#")
    _, dot, proc = tail.partition(".")
    return int(proc) if dot else 0


@dataclass(slots=True)
class _Group:
    key: str
    waiting: set[str]
    failed: Exited | Removed | None = None  # the first proc that did not succeed
    started: float = float("inf")
    ended: float = 0.0
    members: list[str] = field(default_factory=list)
    tolerance: Tolerance = NO_TOLERANCE
    failures: int = 0
    returned: int = 0
    codes: dict[int, int | None] = field(default_factory=dict)

    @property
    def list_failed(self) -> bool:
        """More procs failed than tolerated (it stays so: failures only grow)."""
        return not self.tolerance.allows(self.failures, len(self.members))

    def summary(self) -> JobList:
        return JobList(tuple(self.codes.get(proc) for proc in range(len(self.members))), self.returned)


class ProcGroups:
    def __init__(self) -> None:
        self._by_proc: dict[str, _Group] = {}
        self._by_key: dict[str, _Group] = {}

    def start(self, key: str, procs: list[str], tolerance: Tolerance = NO_TOLERANCE) -> None:
        if not procs:
            return
        group = _Group(key, set(procs), members=list(procs), tolerance=tolerance)
        self._by_key[key] = group
        for proc in procs:
            self._by_proc[proc] = group

    def __contains__(self, proc_key: str) -> bool:
        return proc_key in self._by_proc

    def cancel(self, key: str) -> list[str]:
        """The backend keys to cancel for the attempt ``key`` (its procs, or the key itself)."""
        group = self._by_key.pop(key, None)
        if group is None:
            return [key]
        for proc in group.members:
            self._by_proc.pop(proc, None)
        return sorted(group.waiting)

    def finished(self, event: Exited | Held | Removed
                 ) -> tuple[Exited | Held | Removed | None, list[str], JobList | None]:
        """(the node's event once its cluster has ended, else None; procs to cancel now; what the
        cluster came to, with the node's event of a cluster)."""
        group = self._by_proc.pop(event.key, None)
        if group is None:
            return event, [], None
        group.waiting.discard(event.key)
        if isinstance(event, Held):
            rest = self.cancel(group.key)
            return replace(event, key=group.key), rest, None
        _record(group, event)
        failed = group.list_failed
        if failed and group.failed is not None and group.tolerance.fail_fast and group.waiting:
            rest = self.cancel(group.key)  # the rest of the job list is removed
            return _first_failure(group), rest, group.summary()
        if group.waiting:
            return None, [], None
        del self._by_key[group.key]
        if failed and group.failed is not None:
            return _first_failure(group), [], group.summary()
        started = min(group.started, group.ended)  # every proc removed: no run to speak of
        slot = event.slot if isinstance(event, Exited) else None
        return Exited(group.key, 0, None, None, started, group.ended, slot), [], group.summary()


def _record(group: _Group, event: Exited | Removed) -> None:
    """One proc's end: its code, the list's failures and return value (module docstring)."""
    proc = proc_of(event.key)
    if isinstance(event, Exited):
        group.started = min(group.started, event.started)
        group.ended = max(group.ended, event.ended)
        group.codes[proc] = event.exit_code if event.signal is None else -1
        ok = event.exit_code == 0 and event.signal is None
    else:
        group.codes[proc] = None
        ok = False
    if ok:
        if not group.list_failed:
            group.returned = 0
    else:
        group.failures += 1
        group.failed = group.failed or event
        if group.failures == 1:
            group.returned = (RETURN_ABORTED if isinstance(event, Removed) else
                              -event.signal if event.signal is not None else event.exit_code or 0)


def _first_failure(group: _Group) -> Exited | Removed:
    failed = group.failed
    assert failed is not None
    if isinstance(failed, Removed):
        return replace(failed, key=group.key)
    return replace(failed, key=group.key, started=group.started, ended=group.ended)
