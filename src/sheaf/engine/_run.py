"""One engine run's world: the backend, scripts, journal and report files, driven turn by turn.

:class:`EngineRun` carries out a :class:`Step`'s instructions after its changes are durable
(``act``: journal, fsync - one group commit per turn - then submit, run scripts, cancel, write the
rescue DAG) and gathers the next turn's events (``gather``: script exits, DEFER timers, a signal,
backend exits).  A submit file read at submission that turns out missing or broken fails that node
alone (:class:`SubmitFailed`), as does a job of several procs under ``DAGMAN_PROHIBIT_MULTI_JOBS`` and a
job whose ``CommonInputFiles`` differs from the one the run's first such job declared.

Group commit: a turn's changes are journaled with one fsync.  With a backend that starts its queued
attempts by itself (``self_refilling``: the local backend), slots never wait for the engine, so a
turn may gather exits for up to ``_BATCH_SECONDS`` while attempts are queued; a turn then carries
tens of exits instead of one or two (fewer commits, report writes and thread hand-offs).  When
nothing is queued the engine turns at once, so a chain of nodes is not slowed.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sheaf.condor import Dag, NodeSpec
from sheaf.engine._backend import (
    Backend,
    Event,
    Exited,
    Held,
    Launch,
    Pollable,
    Released,
    Removed,
    ReportsStarts,
    Requeued,
    SelfRefilling,
    Started,
    Suspended,
)
from sheaf.engine._journal import Journal
from sheaf.engine._nodejob import NO_SUBDAG_OPTIONS, SubdagOptions, render_node, render_queue, subdag_job
from sheaf.engine._nodes import SERVICE_REMOVED, futile_nodes
from sheaf.engine._orphans import ATTEMPT_VARIABLE, attempt_token
from sheaf.engine._procs import NO_TOLERANCE, ProcGroups, Tolerance, proc_of
from sheaf.engine._runconfig import config_int
from sheaf.engine._scripts import ScriptRunner
from sheaf.engine._state import (
    Cancel,
    DagState,
    Defer,
    EngineEvent,
    Finish,
    Halted,
    Instruction,
    Interrupted,
    JobExited,
    JobHeld,
    JobReleased,
    JobRemoved,
    JobRequeued,
    JobSuspended,
    KillScript,
    ProvisionerReady,
    RunScript,
    Step,
    Submit,
    SubmitFailed,
    WriteRescue,
    WriteSavePoint,
)
from sheaf.engine._submit import JobSpec, SubmitDescription, missing_executable, node_description, proc_rows
from sheaf.engine.reports import JobStart, Kind, NodeEvent, ProcEnd, RunFiles
from sheaf.errors import EngineError, InputError, StorageError


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    counts: Mapping[str, int]
    retries: int
    elapsed: float
    job_time: float
    finished: bool = False
    dag_status: int | None = None  # DAGMan's DagStatus (0 ok, 2 a node failed, 3 aborted, 4 removed, ...)
    retried: tuple[tuple[str, int, int], ...] = ()  # (node, retry number, RETRY's count) since the last
    events: tuple[NodeEvent, ...] = ()  # the node events written to the logs since the last
    futile: int = 0  # waiting nodes that can never run, a parent having failed (counted in "waiting" too)
    held: int = 0  # procs of the nodes' jobs on hold now
    #: the run's first report only: where it started (``fresh``, ``recovery``, ``rescue:<file>``) and how
    #: many nodes were done before it (DONE in the DAG, the rescue DAG's, a recovered run's)
    start: tuple[str, int] | None = None

    @property
    def done(self) -> int:
        return self.counts.get("done", 0)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)

    @property
    def running(self) -> int:
        return sum(self.counts.get(s, 0) for s in ("pre", "submitted", "post"))



SIGNAL_GRACE = 30.0  # seconds a commit may still take after SIGTERM/SIGINT before the engine gives up
# how long a turn may wait for more exits while the backend refills its slots: a turn has a fixed
# cost (journal commit, report files, backend calls), so fewer, fuller turns run short jobs faster
_BATCH_SECONDS = 0.1
_BATCH_EVENTS = 512
_DURABLE_TICK = 0.05  # while a commit is in flight, the backend's wait(0) runs at least this often


class EngineRun:
    """One engine run: owns the backend, scripts, journal and reports for its duration."""

    def __init__(self, dag: Dag, descs: dict[str, SubmitDescription], first: dict[str, JobSpec],
                 backend: Backend, journal: Journal, paths: dict[str, str], clock: Callable[[], float],
                 on_progress: Callable[[Progress], None] | None, progress_interval: float,
                 source: str = "fresh", pre_done: frozenset[str] = frozenset(),
                 dag_files: tuple[str, ...] = (), tolerance: Tolerance = NO_TOLERANCE,
                 batch_name: str = "", suppress_notification: bool = False,
                 subdags: SubdagOptions = NO_SUBDAG_OPTIONS) -> None:
        self.dag, self.descs, self.backend, self.journal = dag, descs, backend, journal
        self.tolerance = tolerance  # the DAG's default for a node without TOLERANCE
        self.submit_attempts = max(1, config_int(dag, "DAGMAN_MAX_SUBMIT_ATTEMPTS", 6))
        self.first = first  # expansions of attempt 0 made while validating
        self.clock = clock
        self.scripts = ScriptRunner(paths["scripts"], clock)
        self._tags: dict[str, tuple[SubmitDescription | None, str | None]] = {}
        self._lowered: dict[str, tuple[SubmitDescription | None, dict[str, str]]] = {}
        self.files = RunFiles(dag, self._job_tag, dag_files=dag_files or (os.path.basename(dag.path),),
                              multi=len(dag_files) > 1, source=source, pre_done=pre_done)
        self.keys: dict[str, tuple[str, int]] = {}
        self.procs = ProcGroups()
        self._events: list[NodeEvent] = []  # for the next progress report
        self.proc_ends: list[ProcEnd] = []  # procs of multi-proc jobs that ended since the last turn
        self.proc_counts: dict[str, int] = {}  # nodes submitted this turn whose job has several procs
        self.services: dict[str, tuple[str, int]] = {}  # SERVICE nodes' jobs still running: key -> (node,
        #   cluster)
        self.services_started: set[str] = set()  # those whose EXECUTE is written
        self.pending: list[EngineEvent] = []
        self.early: list[Event] = []  # backend events collected while a commit was in flight
        self.rescue: str | None = None
        self.on_progress = on_progress
        self.progress_interval = progress_interval
        self._last_progress = -1e18
        self._start: tuple[str, int] | None = (source, len(pre_done))  # told in the first report
        self._futile = (0, 0)  # (failed nodes, futile nodes) when last counted
        self.stop_requested: str | None = None
        self.stop_time: float | None = None  # monotonic time of the signal
        self.started = clock()
        self.append_vars = dag.flag("DAGMAN_DEFAULT_APPEND_VARS", False)
        self.prohibit_multi = dag.flag("DAGMAN_PROHIBIT_MULTI_JOBS", False)
        self.common_inputs: str | None = None  # the first CommonInputFiles a node job declared (one per DAG)
        self.batch_name = batch_name  # the node jobs' JobBatchName (``_nodejob``)
        self.suppress_notification = suppress_notification
        self.subdags = subdags  # what a SUBDAG's run inherits of this one's options
        self._started: Callable[[], list[Started]] | None = (
            backend.started if isinstance(backend, ReportsStarts) else None)
        self._ended_keys: dict[str, tuple[str, int]] = {}  # attempts that ended since the last turn
        self._halted, self._halt_checked = False, -1e18
        # a backend with a descriptor to wait on: a commit in flight is waited for on it and on the
        # journal's eventfd, not by polling wait() (_durable)
        self._backend_fd: Callable[[], int] | None = backend.fileno if isinstance(backend, Pollable) else None

    def _job_tag(self, node: str) -> str | None:
        """jobstate.log's job tag: the attribute ``+job_tag_name`` names, else ``+pegasus_site``, from
        the node's VARS or else its submit description, quotes removed (``Node::GetJobstateJobTag``).
        Worked out once per node and description (it is asked for at every change of the node)."""
        spec = self.dag.nodes[node]
        desc = self.descs.get(spec.submit)
        known = self._tags.get(node)
        if known is not None and known[0] is desc:
            return known[1]
        own = {k[1:].lower(): v for k, v in spec.vars.items() if k.startswith("+")}
        attrs = self._desc_attrs(spec.submit, desc)
        if own:
            attrs = {**attrs, **own}
        name = attrs.get("job_tag_name", "+pegasus_site").strip().strip('"').lstrip("+").lower()
        raw = attrs.get(name)
        tag = raw.strip().strip('"') if raw else None
        self._tags[node] = (desc, tag)
        return tag

    def _desc_attrs(self, submit: str, desc: SubmitDescription | None) -> Mapping[str, str]:
        """A description's ``+Attr`` lines by lower-case name, made once per description (the
        nodes that share one ask for it each)."""
        known = self._lowered.get(submit)
        if known is None or known[0] is not desc:
            attrs = {k.lower(): v for k, v in desc.attrs.items()} if desc is not None else {}
            known = self._lowered[submit] = (desc, attrs)
        return known[1]

    # -- instructions -----------------------------------------------------------------------------

    def act(self, machine: DagState, step: Step) -> None:
        starts = self._journal_started()  # before the changes: an attempt that started and ended in one turn
        self.journal.changes(step.changes)
        self._durable(self.journal.commit_start())  # nothing below runs before the changes are durable
        finish: Finish | None = None
        for instruction in _grouped(step.instructions):
            match instruction:
                case Submit():
                    self._submit(instruction)
                case RunScript(node=node, kind=kind, attempt=attempt, argv=argv, cwd=cwd, debug=debug):
                    failed = self.scripts.start(node, kind, attempt, argv, cwd, debug)
                    if failed is not None:
                        self.pending.append(failed)
                case Defer(node=node, kind=kind, attempt=attempt, seconds=seconds):
                    self.scripts.defer(node, kind, attempt, seconds)
                case _Cancels(cancels=cancels):
                    self._cancel(cancels)
                case KillScript(node=node, kind=kind):
                    self.scripts.kill(node, kind)
                case WriteRescue():
                    self.rescue = self.files.write_rescue(machine, self.clock())
                case WriteSavePoint():
                    self.files.write_save_point(machine, instruction, self.clock())
                case Finish():
                    finish = instruction
        events = self.files.record(step.changes, frozenset((e.node, e.attempt) for e in self.pending
                                                           if isinstance(e, SubmitFailed)), starts,
                                   self.proc_ends, self.proc_counts)
        if self.on_progress is not None:
            self._events.extend(events)
        self.proc_ends, self.proc_counts = [], {}
        if finish is not None:
            self._finish(machine, finish)
        self.files.flush()
        self._report(machine, force=machine.finished is not None)

    def _cancel(self, cancels: tuple[Cancel, ...]) -> None:
        """Newest submission first: the attempts the backend still queues go before the running ones,
        so that no slot a kill frees starts a queued attempt only to kill it next."""
        keys = [one for c in cancels for one in self.procs.cancel(f"{c.node}#{c.attempt}")]
        if len(keys) > 1:
            order = {key: i for i, key in enumerate(self.keys)}  # insertion order: submission order
            keys.sort(key=lambda key: order.get(key, -1), reverse=True)
        for one in keys:
            if self.keys.pop(one, None) is not None:
                self.backend.cancel(one)

    def _journal_started(self) -> list[JobStart]:
        """The jobs the backend started since the last turn, for their EXECUTE events; the local
        processes still running are journaled (see ``_orphans``; a batch system's job has none here).
        A start is looked up among the keys of the attempts in flight and of those that ended this
        turn (a short job is gone by now)."""
        if self._started is None:
            return []
        starts: list[JobStart] = []
        for event in self._started():
            target = self.keys.get(event.key) or self._ended_keys.get(event.key)
            if target is None:
                if event.key in self.services and event.key not in self.services_started:
                    self.services_started.add(event.key)
                    self._service_event(event.key, "EXECUTE", time=event.time, slot=event.slot)
                continue  # else a cancelled attempt
            if target[0] == self.dag.provisioner:
                self.pending.append(ProvisionerReady())
            self.files.started_keys.add(target)
            now = self.clock()
            starts.append(JobStart(event.time or now, target[0], target[1], proc_of(event.key), event.slot))
            if event.pid > 0 and event.start_ticks > 0:
                self.journal.process(now, target[0], target[1], event.pid, event.start_ticks)
        self._ended_keys.clear()
        return starts

    def _durable(self, done: threading.Event | None) -> None:
        """Wait for a commit; meanwhile the backend may start attempts submitted in earlier turns
        and its exits are kept for the next turn (the engine acts on nothing new).

        With a backend that has ``fileno`` (the local one), the wait is on that descriptor and the
        journal's eventfd together, and ``wait(0)`` is called when the backend has news (or every
        ``_DURABLE_TICK`` s, for its timed duties); any other backend is polled every 0.5 ms (a
        wake-up each: with the local backend ~2 of every 3 passes of its ``_collect``).

        A failed commit raises the journal's error (the caller stops the run); so does a commit
        still not durable ``SIGNAL_GRACE`` seconds after SIGTERM/SIGINT (a hung file system)."""
        if done is None:
            return
        wake = self.journal.wake_fd()
        while not done.is_set():
            backend = self._backend_fd() if self._backend_fd is not None and self.keys else -1
            if backend >= 0:
                ready = select.select([backend, wake], [], [], _DURABLE_TICK)[0]
                if backend in ready or not ready:
                    self.early.extend(self.backend.wait(0.0))
                if wake in ready:  # written just before the event is set
                    done.wait(0.001)
            elif self.keys:
                self.early.extend(self.backend.wait(0.0005))
            else:
                done.wait(0.25)
            if self.stop_time is not None and time.monotonic() - self.stop_time > SIGNAL_GRACE:
                raise EngineError(f"{self.stop_requested or 'a signal'}: the journal {self.journal.path} "
                                  f"did not become durable within {SIGNAL_GRACE:.0f} s; stopped without it")
        with contextlib.suppress(BlockingIOError):  # this commit's count (and any earlier one's)
            os.eventfd_read(wake)
        if self.journal.failure is not None:
            raise self.journal.failure

    def _finish(self, machine: DagState, finish: Finish) -> None:
        self.stop_services()
        rescue = os.path.basename(self.rescue) if self.rescue else None
        self.journal.end(self.clock(), finish.succeeded, finish.dag_status, finish.exit_code, rescue)
        self.journal.commit()
        self.files.finish(machine, finish, self.clock())

    def _submit(self, sub: Submit) -> None:
        spec = self.dag.nodes[sub.node]
        key = f"{sub.node}#{sub.attempt}"
        try:
            launches = self._launches(spec, sub, key)
        except (InputError, ValueError) as exc:  # a missing submit file, a VARS value that breaks it
            self.pending.append(SubmitFailed(sub.node, sub.attempt, str(exc)))
            return
        if len(launches) > 1 and sub.node == self.dag.provisioner:  # DAGMan exits: no rescue DAG, no FINAL
            raise EngineError(f"PROVISIONER node {sub.node} submitted more than one job ({len(launches)}): "
                              "a PROVISIONER node runs one job; the DAG stops with no rescue DAG and no "
                              "FINAL node, as DAGMan does")
        if len(launches) > 1 and self.prohibit_multi:  # the node fails now, not retried (dagman_submit.cpp)
            self.pending.append(SubmitFailed(sub.node, sub.attempt, MULTI_PROHIBITED))
            return
        if not self._same_common_inputs(launches):
            self.pending.append(SubmitFailed(sub.node, sub.attempt, COMMON_INPUTS_DIFFER))
            return
        tolerance = self._tolerance(spec)
        if len(launches) != 1 or tolerance.value:  # a tolerance holds for a node of one proc too
            self.procs.start(key, [launch.key for launch in launches], tolerance)
        if len(launches) != 1:
            self.proc_counts[sub.node] = len(launches)
        if not launches:  # queue 0, or an empty item list: a cluster of no jobs succeeds at once
            now = self.clock()
            self.pending.append(JobExited(sub.node, sub.attempt, 0, None, None, now, now, None))
        if launches:
            try:
                self.files.user_log(sub.node, launches[0].job_ad.get("UserLog"))
            except StorageError as exc:  # condor_submit refuses a job whose log it cannot open
                self.pending.append(SubmitFailed(sub.node, sub.attempt, f"the job's log: {exc}"))
                return
        for launch in launches:
            self.keys[launch.key] = (sub.node, sub.attempt)
            self.backend.submit(launch)
        if sub.node == self.dag.provisioner and self._started is None:
            self.pending.append(ProvisionerReady())  # a backend that cannot tell: running once submitted

    def _same_common_inputs(self, launches: list[Launch]) -> bool:
        """DAGMan's direct submission: a DAG transfers one list of common input files; the first job ad
        whose ``CommonInputFiles`` is a string sets it, and a job declaring another fails its submission."""
        for launch in launches:
            value = launch.job_ad.eval("CommonInputFiles")
            if not isinstance(value, str):
                continue
            if self.common_inputs is None:
                self.common_inputs = value
            elif value != self.common_inputs:
                return False
        return True

    def start_services(self, machine: DagState) -> None:
        """SERVICE nodes: submitted as the run starts, best effort (a node that cannot be submitted is
        noted in the scripts log, nothing more); what becomes of them never reaches the DAG, only the
        node log and the job's own log (``_service_event``), under a cluster id of the run's."""
        for name, spec in self.dag.services.items():
            if spec.noop:
                continue
            number = machine.next_cluster  # taken once the node's jobs are made
            try:
                launches = self._launches(spec, Submit(name, 0, number, spec.priority), f"{name}#service")
                self.files.user_log(name, launches[0].job_ad.get("UserLog") if launches else None)
            except (InputError, ValueError, StorageError) as exc:
                self.scripts.note(f"SERVICE node {name} could not be submitted: {exc}")
                self.files.service_failed()
                continue
            machine.take_cluster()
            for launch in launches:
                self.services[launch.key] = (name, number)
                self.backend.submit(launch)
                self._service_event(launch.key, "SUBMIT")

    def stop_services(self) -> None:
        """The DAG has ended: SERVICE nodes still running are removed, as DAGMan removes them."""
        for key in sorted(self.services):
            self.backend.cancel(key)
            self._service_event(key, "JOB_ABORTED", reason=SERVICE_REMOVED)
        self.services.clear()

    def _service_ended(self, event: Event) -> None:
        """A SERVICE node's job exited, was removed, held or released by its policy, or requeued."""
        key = event.key
        match event:
            case Exited(exit_code=code, signal=sig, started=started, ended=ended, slot=slot):
                if key not in self.services_started:  # its start not reported yet: written first
                    self._service_event(key, "EXECUTE", time=started, slot=slot)
                self._service_event(key, "JOB_TERMINATED", time=ended, value=code, signal=sig)
            case Removed(reason=reason) | Held(reason=reason):
                self._service_event(key, "JOB_ABORTED", reason=reason)
            case Suspended(reason=reason, code=code, subcode=subcode):
                self._service_event(key, "JOB_HELD", reason=reason, code=code, subcode=subcode)
                return
            case Released(reason=reason):
                self._service_event(key, "JOB_RELEASED", reason=reason or None)
                return
            case Requeued(exit_code=code, signal=sig, reason=reason):
                self._service_event(key, "JOB_EVICTED", value=code, signal=sig, reason=reason, requeued=True)
                return
        del self.services[key]
        self.services_started.discard(key)

    def _service_event(self, key: str, kind: Kind, **values: Any) -> None:
        """An event of a SERVICE node's job, in the node log and the job's own."""
        node, cluster = self.services[key]
        at = values.pop("time", None) or self.clock()
        event = NodeEvent(at, node, kind, cluster, proc_of(key), 0, **values)
        self.files.service_events([event])

    def _tolerance(self, spec: NodeSpec) -> Tolerance:
        """TOLERANCE, else DAGMAN_NODE_JOB_FAILURE_TOLERANCE / DAGMAN_REMOVE_JOB_LIST_ON_FAILURE."""
        if spec.tolerance is None:
            return self.tolerance
        value, percent, mode = spec.tolerance
        return Tolerance(value, percent, self.tolerance.fail_fast if mode == "" else mode == "FAIL-FAST")

    def _launches(self, spec: NodeSpec, sub: Submit, key: str) -> list[Launch]:
        """The node's jobs: one, or one per proc of a ``queue N``/``queue ... in/from/matching``."""
        job = self.first.pop(spec.name, None) if sub.attempt == 0 else None
        if job is not None:
            job.ad["ClusterId"] = sub.cluster  # known only now; nothing else in the ad depends on it
        elif spec.subdag:
            job = subdag_job(spec, sub, self.batch_name, self.suppress_notification, self.subdags)
        else:
            desc = self._description(spec)
            parents = self.dag.parents.get(spec.name, [])
            queue = render_queue(desc, spec, sub, self.append_vars, parents, self.batch_name) \
                if desc.queue.raw else desc.queue
            if not queue.simple:
                rows = proc_rows(desc, spec.directory, queue)
                return [self._launch(spec, sub, f"{key}.{row['Process']}",
                                     render_node(desc, spec, sub, self.append_vars, parents, row,
                                                 self.batch_name, self.suppress_notification))
                        for row in rows]
            job = render_node(desc, spec, sub, self.append_vars, parents, batch_name=self.batch_name,
                              suppress_notification=self.suppress_notification)
        return [self._launch(spec, sub, key, job)]

    def _launch(self, spec: NodeSpec, sub: Submit, key: str, job: JobSpec) -> Launch:
        missing = missing_executable(job)
        if missing is not None:  # condor_submit refuses it: a submit failure, not a job that is held
            raise InputError(f"Executable file {missing} does not exist", path=spec.submit,
                             rule="a job's executable exists when it is submitted (unless "
                                  "transfer_executable = false)", value=missing)
        # the token makes the process findable without the journal (see _orphans)
        env = {**job.env, ATTEMPT_VARIABLE: attempt_token(self.journal.run_id, spec.name, sub.attempt)}
        return Launch(key, spec.name, sub.attempt, job.argv, env, job.cwd, job.stdout, job.stderr,
                      job.ad, sub.priority, job.stdin, job.transfer, self.submit_attempts)

    def _description(self, spec: NodeSpec) -> SubmitDescription:
        """The node's submit description, read now if it was missing at start or if the node's PRE
        script may have rewritten it."""
        desc = self.descs.get(spec.submit)
        if desc is None or spec.pre is not None:
            desc = self.descs[spec.submit] = node_description(spec, self.dag.descriptions)
        return desc

    # -- events -----------------------------------------------------------------------------------

    def _going_on(self, event: Suspended | Released | Requeued) -> EngineEvent | None:
        """The engine event of a backend event after which the attempt goes on: held, released, or
        exited and queued again by its OnExitRemove (None: the attempt is no longer current)."""
        ran = self.keys.get(event.key)
        if ran is None:
            return None
        proc = proc_of(event.key)
        if isinstance(event, Suspended):
            return JobSuspended(ran[0], ran[1], event.reason, proc, event.code, event.subcode)
        if isinstance(event, Released):
            return JobReleased(ran[0], ran[1], proc, event.reason)
        return JobRequeued(ran[0], ran[1], proc, event.exit_code, event.signal, event.reason)

    def gather(self, *, held_for_ever: bool) -> list[EngineEvent]:
        """The events since the last call: the halt file, a stop, scripts, the backend's.
        ``held_for_ever``: nodes wait that no throttle will ever let go (MAXJOBS c 0), so with nothing
        in flight the run waits for a stop or the halt file, as DAGMan does, rather than stall."""
        events: list[EngineEvent] = list(self.pending)
        self.pending.clear()
        if self._halt_file_appeared():
            events.append(Halted())
        if self.stop_requested:  # "" once handed on: a second signal sets it again
            events.append(Interrupted(self.stop_requested))
            self.stop_requested = ""
        events.extend(self.scripts.poll())
        timeout: float | None = 0.0 if events else self.scripts.next_timeout()
        if timeout is None:
            timeout = 0.25  # wake up now and then to notice a signal
        if self.keys:
            raw, self.early = self.early + self.backend.wait(0.0 if self.early else timeout), []
            # asked each turn: a routing backend's answer changes when it makes a route's backend
            if raw and not events and isinstance(self.backend, SelfRefilling) and self.backend.self_refilling:
                self._gather_while_queued(raw)
            for event in raw:
                if event.key in self.services:  # a SERVICE node's job: not the DAG's business
                    self._service_ended(event)
                    continue
                if isinstance(event, Suspended | Released | Requeued):  # the attempt goes on (queued again)
                    going = self._going_on(event)
                    if going is not None:
                        events.append(going)
                    continue
                target = self.keys.pop(event.key, None)
                if target is None:
                    continue  # a cancelled attempt
                if self._started is not None:
                    self._ended_keys[event.key] = target
                grouped = event.key in self.procs
                ended, rest, job_list = self.procs.finished(event)
                if grouped:
                    self._proc_ended(target[0], event, rest)
                for one in rest:  # a held proc ends its node's cluster (DAGMan removes the others)
                    if self.keys.pop(one, None) is not None:
                        self.backend.cancel(one)
                codes, returned = (job_list.codes, job_list.returned) if job_list else ((), None)
                if isinstance(ended, Exited):
                    events.append(JobExited(target[0], target[1], ended.exit_code, ended.signal,
                                            ended.reason, ended.started, ended.ended, ended.slot, codes,
                                            returned))
                elif isinstance(ended, Removed):
                    events.append(JobRemoved(target[0], target[1], ended.reason, codes))
                elif ended is not None:  # None: other procs of the node still run
                    events.append(JobHeld(target[0], target[1], ended.reason))
        elif not events:
            if not self.scripts.busy() and not held_for_ever:
                raise EngineError("the engine stalled: nothing in flight but the DAG is not finished")
            time.sleep(timeout)
            events.extend(self.scripts.poll())
        return events

    def _proc_ended(self, node: str, event: Event, removed: list[str]) -> None:
        """Notes for jobstate.log and the node log what became of a proc of a multi-proc job, and
        of the procs removed because of it (the job list failed, or a proc can never run)."""
        now = self.clock()
        match event:
            case Exited():
                self.proc_ends.append(ProcEnd(event.ended or now, node, proc_of(event.key), event.exit_code,
                                              event.signal, started=event.started, slot=event.slot))
            case Removed():
                self.proc_ends.append(ProcEnd(now, node, proc_of(event.key), removed=event.reason))
            case Held():
                self.proc_ends.append(ProcEnd(now, node, proc_of(event.key), held=event.reason))
        why = (f"Node Error: DAG node {node} (proc {proc_of(event.key)}) reached failure tolerance"
               if not isinstance(event, Held) else f"Node Error: DAG node {node} has a proc that cannot run")
        removed = [one for one in removed if one in self.keys]
        self.proc_ends.extend(ProcEnd(now, node, proc_of(one), removed=why) for one in removed)
        if self._started is not None:  # a start reported after the removal is still written first
            self._ended_keys.update((one, self.keys[one]) for one in removed)

    def _halt_file_appeared(self) -> bool:
        """DAGMan's halt file, ``<primary dag>.halt``: once it exists the DAG is halted (removing it
        does nothing, as in DAGMan).  Looked for at most once a second."""
        if self._halted:
            return False
        now = time.monotonic()
        if now - self._halt_checked < 1.0:
            return False
        self._halt_checked = now
        self._halted = os.path.exists(self.dag.path + ".halt")
        return self._halted

    def _gather_while_queued(self, raw: list[Event]) -> None:
        """While the backend has attempts queued, it starts them itself as its slots free (during
        ``wait``), so the engine loses nothing by collecting exits a little longer before it turns:
        one turn, one journal commit and one write of each report file then carry many exits
        instead of one or two.  It stops as soon as nothing is queued (the engine has work to
        submit), after ``_BATCH_SECONDS`` or ``_BATCH_EVENTS``, or on a signal."""
        deadline = time.monotonic() + _BATCH_SECONDS
        while len(raw) < _BATCH_EVENTS and self.backend.idle() and self.stop_requested is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            raw.extend(self.backend.wait(left))

    # -- reports ----------------------------------------------------------------------------------

    def _report(self, machine: DagState, force: bool = False) -> None:
        now = self.clock()
        if self.on_progress is None:
            machine.retried.clear()
        elif force or now - self._last_progress >= self.progress_interval:
            self._last_progress = now
            retried, machine.retried = tuple(machine.retried), []
            events, self._events = tuple(self._events), []
            self.on_progress(Progress(len(machine.nodes), dict(machine.counts), machine.retries,
                                      now - self.started, machine.job_time, machine.finished is not None,
                                      machine.dag_status(), retried, events, self._futile_count(machine),
                                      machine.held_procs, self._start))
            self._start = None
        self.files.status(machine, now, force)

    def _futile_count(self, machine: DagState) -> int:
        """The waiting nodes a failure left that can never run: found by a walk from the failed nodes,
        again only when more have failed (a futile node stays futile, and only a failure makes more)."""
        failed = machine.counts.get("failed", 0)
        if failed != self._futile[0]:
            self._futile = (failed, len(futile_nodes(machine.dag, machine.node_state)) if failed else 0)
        return self._futile[1]

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.scripts.close()
            self.files.close()


MULTI_PROHIBITED = "Submit generated multiple job procs; disallowed by DAGMAN_PROHIBIT_MULTI_JOBS setting"
COMMON_INPUTS_DIFFER = "Multiple differing common input transfer lists declared in DAG"


@dataclass(frozen=True, slots=True)
class _Cancels:
    """A run of consecutive :class:`Cancel` instructions, carried out together (``EngineRun._cancel``)."""

    cancels: tuple[Cancel, ...]


def _grouped(instructions: list[Instruction]) -> Iterator[Instruction | _Cancels]:
    """The instructions in order, each run of consecutive cancels as one :class:`_Cancels`."""
    run: list[Cancel] = []
    for instruction in instructions:
        if isinstance(instruction, Cancel):
            run.append(instruction)
            continue
        if run:
            yield _Cancels(tuple(run))
            run = []
        yield instruction
    if run:
        yield _Cancels(tuple(run))


