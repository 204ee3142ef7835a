"""What happened to each node, in DAGMan's vocabulary: journaled changes turned into node events.

DAGMan learns what its node jobs do from the job event log (``<dag>.nodes.log``) and writes one
``jobstate.log`` line per event it reads, plus lines of its own (scripts, success or failure, submit
failures).  sheaf's engine learns the same things from its backend; :class:`EventTranslator` turns
the journaled :class:`~sheaf.engine._events.Change` records of a loop turn into :class:`NodeEvent`
records, which both files render (``_jobstate`` and ``_nodelog``), so the two never disagree.

The mapping (``kind`` is the jobstate.log event name; the job event log number is in ``ULOG``):

* PRE script: ``PRE_SCRIPT_STARTED``, then ``PRE_SCRIPT_SUCCESS``/``_FAILURE`` (DAGMan writes no
  PRE "terminated" line); a PRE_SKIP value adds ``PRESKIP`` (job event 034).
* job: ``SUBMIT`` (000) once the backend took it - a submission that failed writes
  ``SUBMIT_FAILURE`` instead, and nothing in the event log; ``EXECUTE`` (001) when it started -- as
  the backend reports the start (``Backend.started``; :meth:`EventTranslator.executed`), else with
  the job's end, stamped with its start time;
  ``JOB_TERMINATED`` (005) with the return value or signal, then ``JOB_SUCCESS 0`` or
  ``JOB_FAILURE <value>``.  A job the pool can never run is put on hold and removed
  (``JOB_HELD`` 012, ``JOB_ABORTED`` 009); a job cancelled by a stop or an abort, or removed by
  its periodic_remove or ``DAGMAN_MAX_JOB_HOLDS``, is removed (``JOB_ABORTED``).  A proc put on
  hold by its periodic_hold and released by its periodic_release writes ``JOB_HELD`` (012, with the
  hold reason) and ``JOB_RELEASED`` (013), under that proc's id.
* a NOOP node's job is "submitted" and "terminated" with DAGMan's fake HTCondor id
  ``0.2147483647.<n>`` (``n`` counts NOOP and PRE_SKIP ids from 1, as ``DagSubmit::GetFakeId``).
* POST script: ``POST_SCRIPT_STARTED``, ``POST_SCRIPT_TERMINATED`` (016), then ``_SUCCESS`` or
  ``_FAILURE``; the id column is the job's (``-`` when no job was submitted).

Cancelled scripts and nodes sent back to waiting by a stop write nothing.
"""

from __future__ import annotations

__all__ = ["NOOP_PROC", "ULOG", "EventTranslator", "NodeEvent"]

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from sheaf.engine._events import Change, Details

NOOP_PROC = 2147483647  # Node::NOOP_NODE_PROCID (INT_MAX)

Kind = Literal[
    "PRE_SCRIPT_STARTED", "PRE_SCRIPT_SUCCESS", "PRE_SCRIPT_FAILURE", "PRESKIP", "SUBMIT",
    "SUBMIT_FAILURE", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS", "JOB_FAILURE", "JOB_HELD",
    "JOB_RELEASED", "JOB_ABORTED", "POST_SCRIPT_STARTED", "POST_SCRIPT_TERMINATED", "POST_SCRIPT_SUCCESS",
    "POST_SCRIPT_FAILURE"]

# jobstate.log event -> HTCondor job event number (the events that also go to <dag>.nodes.log)
ULOG: dict[str, int] = {"SUBMIT": 0, "EXECUTE": 1, "JOB_TERMINATED": 5, "JOB_ABORTED": 9, "JOB_HELD": 12,
                        "JOB_RELEASED": 13, "POST_SCRIPT_TERMINATED": 16, "PRESKIP": 34}


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One event of one node attempt.  ``cluster`` is -1 when no job was submitted (DAGMan's
    default id, written ``-``)."""

    time: float
    node: str
    kind: Kind
    cluster: int = -1
    proc: int = 0
    subproc: int = 0
    value: int | None = None  # a return value (job, script, JOB_SUCCESS/FAILURE column)
    signal: int | None = None  # the signal that ended a job or script
    reason: str | None = None  # hold or abort reason
    slot: str | None = None  # where the job ran (EXECUTE)
    new_attempt: bool = False  # the node is retried after this event (jobstate.log's sequence)

    @property
    def condor_id(self) -> str:
        return "-" if self.cluster == -1 else f"{self.cluster}.{self.proc}"


class EventTranslator:
    """Stateful: remembers each node's current HTCondor id (for its POST script's lines) and the
    fake ids given to NOOP and PRE_SKIP nodes."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[int, int, int]] = {}
        self._fake = 0
        self._executed: set[tuple[str, int]] = set()  # attempts whose EXECUTE is written

    def executed(self, time: float, node: str, attempt: int, slot: str | None) -> list[NodeEvent]:
        """The EXECUTE event of a node attempt whose job the backend reports started (the first of
        its procs to start); [] when it was written already."""
        if (node, attempt) in self._executed:
            return []
        self._executed.add((node, attempt))
        cluster, proc, subproc = self._ids.get(node, (-1, 0, 0))
        return [NodeEvent(time, node, "EXECUTE", cluster, proc, subproc, slot=slot)]

    def events(self, changes: Iterable[Change], failed_submits: frozenset[tuple[str, int]] = frozenset(),
               ) -> list[NodeEvent]:
        """The events of one turn; ``failed_submits`` are the (node, attempt) whose submission the
        loop found impossible this turn (their SUBMIT is not an event: SUBMIT_FAILURE follows)."""
        out: list[NodeEvent] = []
        for change in changes:
            out.extend(self._of(change, failed_submits))
        return out

    def _fake_id(self) -> tuple[int, int, int]:
        self._fake += 1
        return (0, NOOP_PROC, self._fake)

    def _event(self, c: Change, kind: Kind, **kw: object) -> NodeEvent:
        cluster, proc, subproc = self._ids.get(c.node, (-1, 0, 0))
        return NodeEvent(c.time, c.node, kind, cluster, proc, subproc, **kw)  # type: ignore[arg-type]

    def _of(self, c: Change, failed_submits: frozenset[tuple[str, int]]) -> list[NodeEvent]:
        info: Details = c.info or {}
        out: list[NodeEvent] = []
        if info.get("cancelled"):
            if c.start == "submitted" and c.node in self._ids and self._ids[c.node][1] != NOOP_PROC:
                out.append(self._event(c, "JOB_ABORTED", reason=info.get("why")))
            return out
        if c.start == c.finish:  # the node stays where it is: a hold or a release of one proc
            return [self._proc_event(c, info)]
        if c.finish == "pre":
            out.append(self._event(c, "PRE_SCRIPT_STARTED"))
        elif c.finish == "post":
            out.append(self._event(c, "POST_SCRIPT_STARTED"))
        elif c.finish == "submitted":
            out.extend(self._submitted(c, info, failed_submits))
        deferred = c.finish in ("pre_deferred", "post_deferred")
        if c.start in ("pre", "post") and "return" in info and not deferred:
            out.extend(self._script_ended(c, info))
        elif c.start == "submitted" and "return" in info:
            out.extend(self._job_ended(c, info))
        if "retry" in info:  # the next attempt has no job yet, and a new jobstate.log sequence number
            self._ids.pop(c.node, None)
            if out:
                out[-1] = replace(out[-1], new_attempt=True)
        return out

    def _proc_event(self, c: Change, info: Details) -> NodeEvent:
        held = info.get("held")
        event = self._event(c, "JOB_HELD" if held is not None else "JOB_RELEASED", reason=held)
        return replace(event, proc=int(info.get("proc", 0)))

    def _submitted(self, c: Change, info: Details, failed: frozenset[tuple[str, int]]) -> list[NodeEvent]:
        if info.get("noop"):
            self._ids[c.node] = self._fake_id()
            return [self._event(c, "SUBMIT")]
        if (c.node, c.attempt) in failed:
            self._ids.pop(c.node, None)
            return []
        self._ids[c.node] = (int(info.get("cluster", 0)), 0, 0)
        return [self._event(c, "SUBMIT")]

    def _script_ended(self, c: Change, info: Details) -> list[NodeEvent]:
        value = int(info.get("return", 0))
        if c.start == "pre":
            out = [self._event(c, "PRE_SCRIPT_SUCCESS" if value == 0 else "PRE_SCRIPT_FAILURE", value=value)]
            if info.get("skipped"):
                self._ids[c.node] = self._fake_id()
                out.append(self._event(c, "PRESKIP"))
            return out
        signal = -value if value < 0 else None
        return [self._event(c, "POST_SCRIPT_TERMINATED", value=None if signal else value, signal=signal),
                self._event(c, "POST_SCRIPT_SUCCESS" if value == 0 else "POST_SCRIPT_FAILURE", value=value)]

    def _job_ended(self, c: Change, info: Details) -> list[NodeEvent]:
        value = int(info.get("return", 0))
        verdict: Kind = "JOB_SUCCESS" if value == 0 else "JOB_FAILURE"
        if info.get("submit_failed"):
            return [self._event(c, "SUBMIT_FAILURE")]
        if info.get("noop"):
            return [self._event(c, "JOB_TERMINATED", value=0), self._event(c, verdict, value=0)]
        if "exit" not in info and "signal" not in info:  # never ran (held, then removed), or removed
            reason = info.get("reason")
            held = [] if info.get("removed") else [self._event(c, "JOB_HELD", reason=reason)]
            return [*held, self._event(c, "JOB_ABORTED", reason=reason), self._event(c, verdict, value=value)]
        out: list[NodeEvent] = []
        started = info.get("started")
        if (c.node, c.attempt) in self._executed:
            self._executed.discard((c.node, c.attempt))
        elif started:
            out.append(replace(self._event(c, "EXECUTE", slot=info.get("slot")), time=float(started)))
        out.append(self._event(c, "JOB_TERMINATED", value=info.get("exit"), signal=info.get("signal")))
        out.append(self._event(c, verdict, value=value))
        return out

