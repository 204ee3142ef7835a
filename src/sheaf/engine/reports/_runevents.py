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
  ``SUBMIT_FAILURE`` instead, and nothing in the event log; ``EXECUTE`` (001) when the engine learns
  that it started (:class:`JobStart`, in the turn after the start), again each time it starts after
  a release - with a backend that does not tell, when the job ends, before ``JOB_TERMINATED``;
  ``JOB_TERMINATED`` (005) with the return value or signal, then ``JOB_SUCCESS 0`` or
  ``JOB_FAILURE <value>``.  A job the pool can never run is put on hold and removed
  (``JOB_HELD`` 012, ``JOB_ABORTED`` 009); a job cancelled by a stop or an abort, or removed by
  its periodic_remove or ``DAGMAN_MAX_JOB_HOLDS``, is removed (``JOB_ABORTED``; marked ``cancelled``
  for an abort or a stop, which jobstate.log leaves out unless the DAG has a FINAL node).  A proc put on
  hold by its periodic_hold and released by its periodic_release writes ``JOB_HELD`` (012, with the
  hold reason, code and subcode) and ``JOB_RELEASED`` (013, with the release reason), under that
  proc's id; the job's start after its release is written after ``JOB_RELEASED``, even when the
  engine learns of both in one turn.
* a job of several procs (``queue N``): one ``SUBMIT`` per proc, and each proc's own end as it
  leaves the queue (:class:`ProcEnd`: ``JOB_TERMINATED``; or ``JOB_EVICTED`` (004) when it ran, then
  ``JOB_ABORTED``, for a proc removed because the job list failed); the node's ``JOB_SUCCESS`` or
  ``JOB_FAILURE`` once, after the last one (``Dag::ProcessJobProcEnd``).  A stop removes each proc
  still queued (one ``JOB_ABORTED`` each).
* a NOOP node's job is "submitted" and "terminated" with DAGMan's fake HTCondor id
  ``0.2147483647.<n>`` (``n`` counts NOOP and PRE_SKIP ids from 1, as ``DagSubmit::GetFakeId``).
* POST script: ``POST_SCRIPT_STARTED``, ``POST_SCRIPT_TERMINATED`` (016), then ``_SUCCESS`` or
  ``_FAILURE``; the id column is the job's (``-`` when no job was submitted).

Cancelled scripts and nodes sent back to waiting by a stop write nothing.
"""

from __future__ import annotations

__all__ = ["ULOG", "EventTranslator", "JobStart", "NodeEvent", "ProcEnd"]

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from sheaf._value import value_class
from sheaf.engine._events import Change, Details
from sheaf.engine._nodes import NOOP_PROC

Kind = Literal[
    "PRE_SCRIPT_STARTED", "PRE_SCRIPT_SUCCESS", "PRE_SCRIPT_FAILURE", "PRESKIP", "SUBMIT",
    "SUBMIT_FAILURE", "EXECUTE", "JOB_EVICTED", "JOB_TERMINATED", "JOB_SUCCESS", "JOB_FAILURE", "JOB_HELD",
    "JOB_RELEASED", "JOB_ABORTED", "POST_SCRIPT_STARTED", "POST_SCRIPT_TERMINATED", "POST_SCRIPT_SUCCESS",
    "POST_SCRIPT_FAILURE"]

# jobstate.log event -> HTCondor job event number (the events that also go to <dag>.nodes.log)
ULOG: dict[str, int] = {"SUBMIT": 0, "EXECUTE": 1, "JOB_EVICTED": 4, "JOB_TERMINATED": 5, "JOB_ABORTED": 9,
                        "JOB_HELD": 12, "JOB_RELEASED": 13, "POST_SCRIPT_TERMINATED": 16, "PRESKIP": 34}


class NodeEvent(NamedTuple):
    """One event of one node attempt.  ``cluster`` is -1 when no job was submitted (DAGMan's
    default id, written ``-``).  A named tuple, immutable as a frozen dataclass but several times
    cheaper to make: a node attempt makes four or more."""

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
    code: int = 0  # HoldReasonCode, HoldReasonSubCode (JOB_HELD)
    subcode: int = 0
    requeued: bool = False  # JOB_EVICTED: the job exited and its OnExitRemove queued it again
    cancelled: bool = False  # JOB_ABORTED of a job an abort or a stop of the DAG removed

    @property
    def condor_id(self) -> str:
        return "-" if self.cluster == -1 else f"{self.cluster}.{self.proc}"


@value_class
class JobStart:
    """A proc of a node attempt's job began to run (the backend's ``Started``): its EXECUTE event."""

    time: float
    node: str
    attempt: int
    proc: int = 0
    slot: str | None = None


@value_class
class ProcEnd:
    """A proc of a node whose job has several procs left the queue: it exited (``exit_code`` or
    ``signal``), was removed (``removed``, the reason; DAGMan removes the rest of a job list that
    failed) or put on hold for good (``held``)."""

    time: float
    node: str
    proc: int
    exit_code: int | None = None
    signal: int | None = None
    removed: str | None = None
    held: str | None = None
    started: float | None = None
    slot: str | None = None


class EventTranslator:
    """Stateful: remembers each node's current HTCondor id (for its POST script's lines), the fake
    ids given to NOOP and PRE_SKIP nodes, and which procs run (EXECUTE written) or are held."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[int, int, int]] = {}
        self._fake = 0
        self._running: dict[str, set[int]] = {}  # node -> procs whose EXECUTE is written
        self._held: dict[str, set[int]] = {}  # node -> procs whose JOB_HELD is the latest event
        self._after_release: dict[tuple[str, int], JobStart] = {}
        self._live: dict[str, set[int]] = {}  # node of several procs -> its procs still queued
        self._counts: Mapping[str, int] = {}

    def events(self, changes: Iterable[Change], failed_submits: frozenset[tuple[str, int]] = frozenset(),
               starts: Iterable[JobStart] = (), ends: Iterable[ProcEnd] = (),
               proc_counts: Mapping[str, int] = MappingProxyType({})) -> list[NodeEvent]:
        """The events of one turn; ``failed_submits`` are the (node, attempt) whose submission the
        loop found impossible this turn (their SUBMIT is not an event: SUBMIT_FAILURE follows).
        ``starts`` happened before the turn's changes, except a held proc's, which waits for the
        proc's JOB_RELEASED; then the ``ends`` of procs of jobs with several procs (``proc_counts``:
        how many procs the jobs submitted this turn have, for nodes with more than one)."""
        out: list[NodeEvent] = []
        changes = list(changes)
        requeued = {(c.node, int(c.info.get("proc", 0))) for c in changes
                    if c.info and c.info.get("requeued")}
        for start in starts:
            if start.proc in self._held.get(start.node, ()) or (start.node, start.proc) in requeued:
                self._after_release[(start.node, start.proc)] = start
            else:
                out.extend(self._execute(start))
        for end in ends:
            out.extend(self._proc_ended(end))
        self._counts = proc_counts
        for change in changes:
            out.extend(self._of(change, failed_submits))
        for start in self._after_release.values():  # a release not seen: keep the start anyway
            out.extend(self._execute(start))
        self._after_release.clear()
        return out

    def _execute(self, start: JobStart) -> list[NodeEvent]:
        ids = self._ids.get(start.node)
        if ids is None or ids[1] == NOOP_PROC:
            return []  # the node's job is no longer current (its attempt ended and was retried)
        self._running.setdefault(start.node, set()).add(start.proc)
        return [NodeEvent(start.time, start.node, "EXECUTE", ids[0], start.proc, 0, slot=start.slot)]

    def _fake_id(self) -> tuple[int, int, int]:
        self._fake += 1
        return (0, NOOP_PROC, self._fake)

    def _event(self, c: Change, kind: Kind, at: float | None = None, **kw: object) -> NodeEvent:
        """An event of ``c``'s node under its current id, at ``c``'s time unless ``at`` says."""
        cluster, proc, subproc = self._ids.get(c.node, (-1, 0, 0))
        return NodeEvent(c.time if at is None else at, c.node, kind, cluster, proc, subproc,
                         **kw)  # type: ignore[arg-type]

    def _of(self, c: Change, failed_submits: frozenset[tuple[str, int]]) -> list[NodeEvent]:
        info: Details = c.info or {}
        out: list[NodeEvent] = []
        if info.get("cancelled"):
            live = sorted(self._live.pop(c.node, {0}))
            if c.start == "submitted" and c.node in self._ids and self._ids[c.node][1] != NOOP_PROC:
                out.extend(self._event(c, "JOB_ABORTED", reason=info.get("removal", info.get("why")),
                                       cancelled=True)._replace(proc=proc)
                           for proc in live)
            return out
        if c.start == c.finish:  # the node stays where it is: a hold or a release of one proc
            return self._proc_event(c, info)
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
            self._live.pop(c.node, None)
            if out:
                out[-1] = out[-1]._replace(new_attempt=True)
        return out

    def _proc_event(self, c: Change, info: Details) -> list[NodeEvent]:
        held, proc = info.get("held"), int(info.get("proc", 0))
        key = (c.node, proc)
        self._running.get(c.node, set()).discard(proc)  # held: killed if it ran; released: starts again
        if info.get("requeued"):
            signal = info.get("signal")
            evicted = self._event(c, "JOB_EVICTED", value=info.get("exit"), reason=info.get("requeued"),
                                  signal=None if signal is None else int(signal), requeued=True)
            start = self._after_release.pop(key, None)
            return [evicted._replace(proc=proc), *(self._execute(start) if start is not None else [])]
        if held is not None:
            self._held.setdefault(c.node, set()).add(proc)
            return [self._event(c, "JOB_HELD", reason=held, code=info.get("hold_code", 0),
                                subcode=info.get("hold_subcode", 0))._replace(proc=proc)]
        self._held.get(c.node, set()).discard(proc)
        out = [self._event(c, "JOB_RELEASED", reason=info.get("release_reason"))._replace(proc=proc)]
        start = self._after_release.pop(key, None)
        return out + (self._execute(start) if start is not None else [])

    def _submitted(self, c: Change, info: Details, failed: frozenset[tuple[str, int]]) -> list[NodeEvent]:
        if info.get("noop"):
            self._ids[c.node] = self._fake_id()
            return [self._event(c, "SUBMIT")]
        if (c.node, c.attempt) in failed:
            self._ids.pop(c.node, None)
            return []
        self._ids[c.node] = (int(info.get("cluster", 0)), 0, 0)
        self._running.pop(c.node, None)
        self._held.pop(c.node, None)
        count = self._counts.get(c.node, 1)
        if count == 1:
            self._live.pop(c.node, None)
            return [self._event(c, "SUBMIT")]
        self._live[c.node] = set(range(count))  # each proc has its own submit event, as in the log
        return [self._event(c, "SUBMIT")._replace(proc=proc) for proc in range(count)]

    def _proc_ended(self, end: ProcEnd) -> list[NodeEvent]:
        """A proc's own events (``Dag::ProcessTerminatedEvent``/``ProcessAbortEvent`` write one line
        per proc; the node's JOB_SUCCESS or JOB_FAILURE follows once every proc has left the queue).
        A proc removed while it ran is evicted first, as the job event log shows it."""
        ids, live = self._ids.get(end.node), self._live.get(end.node)
        if ids is None or live is None or end.proc not in live:
            return []
        live.discard(end.proc)
        ran = end.proc in self._running.get(end.node, ())
        self._running.get(end.node, set()).discard(end.proc)
        at = NodeEvent(end.time, end.node, "JOB_TERMINATED", ids[0], end.proc)
        if end.held is not None:
            return [at._replace(kind=kind, reason=end.held) for kind in ("JOB_HELD", "JOB_ABORTED")]
        if end.removed is not None:
            evicted = [at._replace(kind="JOB_EVICTED")] if ran else []
            return [*evicted, at._replace(kind="JOB_ABORTED", reason=end.removed)]
        out: list[NodeEvent] = []
        if end.started is not None and not ran:  # a backend that does not report starts
            out.append(at._replace(time=end.started, kind="EXECUTE", slot=end.slot))
        return [*out, at._replace(value=end.exit_code, signal=end.signal)]

    def _script_ended(self, c: Change, info: Details) -> list[NodeEvent]:
        value = int(info.get("return", 0))
        error = info.get("error")  # the script could not be started
        if c.start == "pre":
            out = [self._event(c, "PRE_SCRIPT_SUCCESS" if value == 0 else "PRE_SCRIPT_FAILURE", value=value,
                               reason=error)]
            if info.get("skipped"):
                self._ids[c.node] = self._fake_id()
                out.append(self._event(c, "PRESKIP"))
            return out
        signal = -value if value < 0 else None
        return [self._event(c, "POST_SCRIPT_TERMINATED", value=None if signal else value, signal=signal),
                self._event(c, "POST_SCRIPT_SUCCESS" if value == 0 else "POST_SCRIPT_FAILURE", value=value,
                            reason=error)]

    def _job_ended(self, c: Change, info: Details) -> list[NodeEvent]:
        value = int(info.get("return", 0))
        verdict: Kind = "JOB_SUCCESS" if value == 0 else "JOB_FAILURE"
        if info.get("submit_failed"):
            why = str(info.get("reason") or "").removeprefix("submit failed: ")
            return [self._event(c, "SUBMIT_FAILURE", reason=why or None)]
        if info.get("noop"):
            return [self._event(c, "JOB_TERMINATED", value=0), self._event(c, verdict, value=0)]
        if self._live.pop(c.node, None) is not None:  # several procs: each one's end is written already
            self._running.pop(c.node, None)
            self._held.pop(c.node, None)
            return [self._event(c, verdict, value=value)]
        if "exit" not in info and "signal" not in info:  # never ran (held, then removed), or removed
            reason = info.get("reason")
            if info.get("removed"):  # the schedd's own reason, as its JOB_ABORTED event carries it
                aborted = self._event(c, "JOB_ABORTED", reason=(reason or "").removeprefix("removed: "))
                return [aborted, self._event(c, verdict, value=value)]
            return [self._event(c, "JOB_HELD", reason=reason), self._event(c, "JOB_ABORTED", reason=reason),
                    self._event(c, verdict, value=value)]
        out: list[NodeEvent] = []
        started = info.get("started")
        running = self._running.pop(c.node, ())
        self._held.pop(c.node, None)
        if started and 0 not in running:  # a backend that does not report starts
            out.append(self._event(c, "EXECUTE", float(started), slot=info.get("slot")))
        out.append(self._event(c, "JOB_TERMINATED", value=info.get("exit"), signal=info.get("signal")))
        out.append(self._event(c, verdict, value=value))
        return out

