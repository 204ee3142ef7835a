"""A node whose job is a cluster of several procs (``queue N``, ``queue ... in/from/matching``).

DAGMan runs the cluster as one node: the node's job succeeds when every proc succeeds, and its
``$RETURN`` is the exit code of the first proc that failed (the DAGMan manual's POST script macros).
The backend runs each proc under its own key ``node#attempt.proc``; :class:`ProcGroups` folds their
events into one event under the node's key ``node#attempt`` once the last proc has ended.  A held
proc ends the cluster at once: DAGMan removes the rest of a node's cluster when one of its jobs is
held, so the node's attempt fails.  Nodes of one proc never enter a group: their events pass through.
"""

from __future__ import annotations

__all__ = ["ProcGroups"]

from dataclasses import dataclass, field, replace

from sheaf.engine._backend import Exited, Held, Removed


@dataclass(slots=True)
class _Group:
    key: str
    waiting: set[str]
    failed: Exited | None = None  # the first proc that did not succeed
    started: float = float("inf")
    ended: float = 0.0
    members: list[str] = field(default_factory=list)


class ProcGroups:
    def __init__(self) -> None:
        self._by_proc: dict[str, _Group] = {}
        self._by_key: dict[str, _Group] = {}

    def start(self, key: str, procs: list[str]) -> None:
        if not procs:
            return
        group = _Group(key, set(procs), members=list(procs))
        self._by_key[key] = group
        for proc in procs:
            self._by_proc[proc] = group

    def cancel(self, key: str) -> list[str]:
        """The backend keys to cancel for the attempt ``key`` (its procs, or the key itself)."""
        group = self._by_key.pop(key, None)
        if group is None:
            return [key]
        for proc in group.members:
            self._by_proc.pop(proc, None)
        return sorted(group.waiting)

    def finished(self, event: Exited | Held | Removed) -> tuple[Exited | Held | Removed | None, list[str]]:
        """(the node's event once its cluster has ended, else None; procs to cancel now)."""
        group = self._by_proc.pop(event.key, None)
        if group is None:
            return event, []
        group.waiting.discard(event.key)
        if isinstance(event, Held | Removed):
            rest = self.cancel(group.key)
            return replace(event, key=group.key), rest
        group.started = min(group.started, event.started)
        group.ended = max(group.ended, event.ended)
        if group.failed is None and (event.exit_code != 0 or event.signal is not None):
            group.failed = event
        if group.waiting:
            return None, []
        del self._by_key[group.key]
        if group.failed is not None:
            return replace(group.failed, key=group.key, started=group.started, ended=group.ended), []
        return replace(event, key=group.key, started=group.started, ended=group.ended), []
