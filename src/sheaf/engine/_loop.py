"""The thin loop around :class:`DagState`: the only part of the engine that touches the world.

One turn: gather events (backend exits, script exits, DEFER timers, a signal), let the pure state
machine turn them into a :class:`Step`, **journal the step's changes and fsync (one commit per
turn)**, then carry out its instructions - submit launches, run or kill scripts, cancel jobs, write
the rescue DAG - and append the turn to ``jobstate.log``.  Nothing the engine does depends on a
change that is not yet durable.

Starting a run (``run_workflow``) decides where state comes from, as DAGMan does:

* no journal: a fresh run (the newest rescue DAG, if one exists, marks nodes DONE);
* a journal whose last run never ended (the engine was killed): *recovery* - nodes journaled done
  stay done, nodes journaled failed stay failed, nodes that were in flight run again with the same
  attempt number;
* a journal whose last run ended in failure: a *rescue* run from the newest ``<dag>.rescueNNN``
  (retries reset unless ``DAGMAN_RESET_RETRIES_UPON_RESCUE = False``);
* a journal whose last run succeeded: nothing to do.

Everything is validated before anything is written: the DAG file, its CONFIG, every submit
description (expanded once for attempt 0) and every SUBDAG's DAG file; a bad one raises
:class:`FormatError`.  A submit file or sub-DAG file that does not exist yet is not an error: as in
DAGMan it is read when its node is submitted (a PRE script or an earlier node may write it), and if
it is still missing then, that node alone fails to submit (:class:`SubmitFailed`; its POST script
runs with ``$RETURN`` -1001).  A node with a PRE script has its submit file read again at
submission, for the same reason.  A second engine on the same DAG refuses to start (an ``flock`` on
``.sheaf/<dag>.lock``).
"""

from __future__ import annotations

__all__ = ["Progress", "RunResult", "find_dag", "run_workflow", "state_paths"]

import fcntl
import glob
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf.engine._backend import Backend, Event, Exited, Launch, Released, Removed, Started, Suspended
from sheaf.engine._journal import Journal, Replay, replay
from sheaf.engine._multidag import combine_dags, munges_names
from sheaf.engine._nodejob import render_node, subdag_job
from sheaf.engine._orphans import ATTEMPT_VARIABLE, attempt_token, start_guard, stop_run_processes
from sheaf.engine._procs import NO_TOLERANCE, ProcGroups, Tolerance
from sheaf.engine._reports import newest_rescue, remove_stale_temporaries
from sheaf.engine._runfiles import PARENT_ID_VARIABLE, RunFiles, dagman_id
from sheaf.engine._scriptmacros import check_scripts
from sheaf.engine._scripts import ScriptRunner
from sheaf.engine._state import (
    Cancel,
    DagState,
    Defer,
    EngineEvent,
    Finish,
    Interrupted,
    JobExited,
    JobHeld,
    JobRemoved,
    JobSuspended,
    KillScript,
    Limits,
    ProvisionerReady,
    RunScript,
    Step,
    Submit,
    SubmitFailed,
    WriteRescue,
    WriteSavePoint,
)
from sheaf.engine._submit import JobSpec, SubmitDescription, node_description, proc_rows
from sheaf.errors import EngineError, FormatError, InputError, StorageError, UsageError
from sheaf.formats._dagman import Dag, NodeSpec, parse_dag, parse_rescue
from sheaf.model._runlock import STATE_DIR, lock_path


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    counts: Mapping[str, int]
    retries: int
    elapsed: float
    job_time: float
    finished: bool = False

    @property
    def done(self) -> int:
        return self.counts.get("done", 0)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)

    @property
    def running(self) -> int:
        return sum(self.counts.get(s, 0) for s in ("pre", "submitted", "post"))


@dataclass(frozen=True, slots=True)
class RunResult:
    dag: str
    succeeded: bool
    exit_code: int  # the DAG's own exit value (ABORT-DAG-ON RETURN), 0 on success
    dag_status: int
    total: int
    done: int
    failed: int
    retries: int
    wall_time: float
    job_time: float
    source: str  # fresh | recovery | rescue:<file> | complete
    failed_nodes: tuple[tuple[str, str | None], ...] = ()
    rescue: str | None = None
    journal: str = ""
    journal_bytes: int = 0
    journal_commits: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def find_dag(directory: str, dag_file: str | None = None) -> str:
    """The DAG file of a planned directory: ``dag_file`` or the one ``*.dag`` in ``directory``."""
    if dag_file:
        path = dag_file if os.path.isabs(dag_file) else os.path.join(directory, dag_file)
        if not os.path.isfile(path):
            raise UsageError(f"no DAG file {path}")
        return os.path.abspath(path)
    if os.path.isfile(directory):
        return os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise UsageError(f"no such directory: {directory}")
    dags = sorted(n for n in os.listdir(directory) if n.endswith(".dag"))
    if len(dags) != 1:
        found = ", ".join(dags) or "none"
        raise UsageError(f"{directory}: expected exactly one *.dag file (found {found}); use --dag")
    return os.path.abspath(os.path.join(directory, dags[0]))


def state_paths(dag_path: str) -> dict[str, str]:
    base = os.path.basename(dag_path)
    state = os.path.join(os.path.dirname(dag_path), STATE_DIR)
    return {"dir": state, "journal": os.path.join(state, base + ".journal"),
            "lock": lock_path(dag_path), "scripts": os.path.join(state, base + ".scripts.log")}


# ---- configuration and validation ----------------------------------------------------------------

def _config_int(dag: Dag, key: str, default: int) -> int:
    raw = dag.config.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise FormatError("not an integer", rule=f"{key} is an integer", value=raw,
                          path=dag.config_path) from None
    if value < 0:
        raise FormatError("negative throttle", rule=f"{key} >= 0", value=raw, path=dag.config_path)
    return value


def _config_bool(dag: Dag, key: str, default: bool) -> bool:
    raw = dag.config.get(key)
    return default if raw is None else raw.strip().lower() in ("true", "1", "yes")


def _config_signed(dag: Dag, key: str, default: int) -> int:
    raw = dag.config.get(key)
    try:
        return default if raw is None else int(raw)
    except ValueError:
        raise FormatError("not an integer", rule=f"{key} is an integer", value=raw,
                          path=dag.config_path) from None


def _limits(dag: Dag, overrides: Mapping[str, int | None], priority: int | None = None) -> Limits:
    values = {
        "maxjobs": _config_int(dag, "DAGMAN_MAX_JOBS_SUBMITTED", 0),
        "maxidle": _config_int(dag, "DAGMAN_MAX_JOBS_IDLE", 1000),
        "maxpre": _config_int(dag, "DAGMAN_MAX_PRE_SCRIPTS", 20),
        "maxpost": _config_int(dag, "DAGMAN_MAX_POST_SCRIPTS", 20),
    }
    for key, value in overrides.items():
        if value is not None:
            if value < 0:
                raise UsageError(f"--{key} must be >= 0 (0 = unlimited), got {value}")
            values[key] = value
    return Limits(**values, always_run_post=_config_bool(dag, "DAGMAN_ALWAYS_RUN_POST", False),
                  depth_first=_config_bool(dag, "DAGMAN_SUBMIT_DEPTH_FIRST", False),
                  retry_node_first=_config_bool(dag, "DAGMAN_RETRY_NODE_FIRST", False),
                  dag_priority=priority or _config_signed(dag, "DAGMAN_DEFAULT_PRIORITY", 0),
                  job_failure_tolerance=_config_int(dag, "DAGMAN_NODE_JOB_FAILURE_TOLERANCE", 0),
                  remove_job_list_on_failure=_config_bool(dag, "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE", True))


#: The DAGMan configuration knobs ``sheaf run`` honours; a CONFIG file setting any other is warned
#: about, naming the knob (whoever teaches the engine a knob adds it here).
HONOURED_KNOBS = frozenset({
    "DAGMAN_ALWAYS_RUN_POST", "DAGMAN_DEFAULT_APPEND_VARS", "DAGMAN_DEFAULT_PRIORITY", "DAGMAN_MAX_JOBS_IDLE",
    "DAGMAN_MAX_JOBS_SUBMITTED", "DAGMAN_MAX_POST_SCRIPTS", "DAGMAN_MAX_PRE_SCRIPTS",
    "DAGMAN_NODE_JOB_FAILURE_TOLERANCE", "DAGMAN_REMOVE_JOB_LIST_ON_FAILURE",
    "DAGMAN_RESET_RETRIES_UPON_RESCUE", "DAGMAN_RETRY_NODE_FIRST", "DAGMAN_SUBMIT_DEPTH_FIRST",
})


def _config_warnings(dag: Dag) -> list[str]:
    return [f"{dag.config_path}: configuration knob {key} is not honoured by sheaf run (it is ignored)"
            for key in dag.config if key not in HONOURED_KNOBS]


class _Environment:
    """``ENV SET`` of the DAG file: DAGMan's own environment, which its scripts inherit and its jobs'
    ``getenv``/``$ENV()`` read; set for the run and restored after it (``run_workflow`` is the
    entry point that owns the process for the run's duration)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value

    def __exit__(self, *_exc: object) -> None:
        for key, old in self.saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


_RUN_TIME_MACROS = ("$(cluster", "$(dag_status", "$(failed_count")  # known only at submission


def _uses_run_time_values(texts: Iterable[str]) -> bool:
    return any(m in t.lower() for t in texts for m in _RUN_TIME_MACROS)


def _description_uses_run_time_values(desc: SubmitDescription) -> bool:
    return _uses_run_time_values([*(v for v, _ in desc.values.values()), *desc.attrs.values()])


def _load_descriptions(dag: Dag, limits: Limits) -> tuple[dict[str, SubmitDescription], dict[str, JobSpec]]:
    """Parse and expand every node's submit description: bad input fails before anything is written.

    The expansion for attempt 0 is kept (when it does not depend on ``$(Cluster)``, which is only
    known at submission) so that a first attempt is not expanded twice.
    """
    cache: dict[str, SubmitDescription] = {}
    first: dict[str, JobSpec] = {}
    run_time: dict[str, bool] = {}  # by description: whether its own text uses run-time values
    for spec in dag.nodes.values():
        if spec.description is None and not os.path.exists(spec.submit):
            continue  # read at submission: a PRE script or an earlier node may write it
        if spec.subdag:
            parse_dag(spec.submit)
            continue
        desc = cache.get(spec.submit)
        if desc is None:
            desc = cache[spec.submit] = node_description(spec, dag.descriptions)
            run_time[spec.submit] = _description_uses_run_time_values(desc)
        if not desc.queue.simple:
            continue  # expanded per proc at submission (a queue from-file may be written by then)
        sub = Submit(spec.name, 0, 0, spec.priority + limits.dag_priority)
        try:
            job = render_node(desc, spec, sub, _config_bool(dag, "DAGMAN_DEFAULT_APPEND_VARS", False),
                          dag.parents[spec.name])
        except InputError as exc:
            raise exc.located(desc.path) from None
        if spec.pre is None and not run_time[spec.submit] and not _uses_run_time_values(spec.vars.values()):
            first[spec.name] = job
    return cache, first


# ---- the run ------------------------------------------------------------------------------------

_SIGNAL_GRACE = 30.0  # seconds a commit may still take after SIGTERM/SIGINT before the engine gives up


class _Lock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(self.fd)
            raise UsageError(f"another sheaf run is already running this workflow (pid {holder}); "
                             f"lock file {path}") from None
        try:  # the pid is for people reading the file; a full disk must not stop the run here
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass

    def release(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


class _Run:
    """One engine run: owns the backend, scripts, journal and reports for its duration."""

    def __init__(self, dag: Dag, descs: dict[str, SubmitDescription], first: dict[str, JobSpec],
                 backend: Backend, journal: Journal, paths: dict[str, str], clock: Callable[[], float],
                 on_progress: Callable[[Progress], None] | None, progress_interval: float,
                 source: str = "fresh", pre_done: frozenset[str] = frozenset(),
                 dag_files: tuple[str, ...] = (), tolerance: Tolerance = NO_TOLERANCE) -> None:
        self.dag, self.descs, self.backend, self.journal = dag, descs, backend, journal
        self.tolerance = tolerance  # the DAG's default for a node without TOLERANCE
        self.first = first  # expansions of attempt 0 made while validating
        self.clock = clock
        self.scripts = ScriptRunner(paths["scripts"], clock)
        self._tags: dict[str, tuple[SubmitDescription | None, str | None]] = {}
        self.files = RunFiles(dag, self._job_tag, dag_files=dag_files or (os.path.basename(dag.path),),
                              multi=len(dag_files) > 1, source=source, pre_done=pre_done)
        self.keys: dict[str, tuple[str, int]] = {}
        self.procs = ProcGroups()
        self.services: set[str] = set()  # backend keys of SERVICE nodes' jobs still running
        self.pending: list[EngineEvent] = []
        self.early: list[Event] = []  # backend events collected while a commit was in flight
        self.rescue: str | None = None
        self.on_progress = on_progress
        self.progress_interval = progress_interval
        self._last_progress = -1e18
        self.stop_requested: str | None = None
        self.stop_time: float | None = None  # monotonic time of the signal
        self.started = clock()
        self.append_vars = _config_bool(dag, "DAGMAN_DEFAULT_APPEND_VARS", False)
        self._started: Callable[[], list[Started]] | None = getattr(backend, "started", None)

    def _job_tag(self, node: str) -> str | None:
        """jobstate.log's job tag: the attribute ``+job_tag_name`` names, else ``+pegasus_site``, from
        the submit description (or the node's VARS), quotes removed (``Node::GetJobstateJobTag``).
        Worked out once per node and description (it is asked for at every change of the node)."""
        spec = self.dag.nodes[node]
        desc = self.descs.get(spec.submit)
        known = self._tags.get(node)
        if known is not None and known[0] is desc:
            return known[1]
        attrs = {k.lower(): v for k, v in (desc.attrs.items() if desc is not None else ())}
        attrs.update((k[1:].lower(), v) for k, v in spec.vars.items() if k.startswith("+"))
        name = attrs.get("job_tag_name", "+pegasus_site").strip().strip('"').lstrip("+").lower()
        raw = attrs.get(name)
        tag = raw.strip().strip('"') if raw else None
        self._tags[node] = (desc, tag)
        return tag

    # -- instructions -----------------------------------------------------------------------------

    def act(self, machine: DagState, step: Step) -> None:
        self._journal_started()  # before the changes: an attempt that started and ended in one turn
        self.journal.changes(step.changes)
        self._durable(self.journal.commit_start())  # nothing below runs before the changes are durable
        finish: Finish | None = None
        for instruction in step.instructions:
            match instruction:
                case Submit():
                    self._submit(instruction)
                case RunScript(node=node, kind=kind, attempt=attempt, argv=argv, cwd=cwd, debug=debug):
                    failed = self.scripts.start(node, kind, attempt, argv, cwd, debug)
                    if failed is not None:
                        self.pending.append(failed)
                case Defer(node=node, kind=kind, attempt=attempt, seconds=seconds):
                    self.scripts.defer(node, kind, attempt, seconds)
                case Cancel(node=node, attempt=attempt):
                    key = f"{node}#{attempt}"
                    for one in self.procs.cancel(key):
                        if self.keys.pop(one, None) is not None:
                            self.backend.cancel(one)
                case KillScript(node=node, kind=kind):
                    self.scripts.kill(node, kind)
                case WriteRescue():
                    self.rescue = self.files.write_rescue(machine, self.clock())
                case WriteSavePoint():
                    self.files.write_save_point(machine, instruction, self.clock())
                case Finish():
                    finish = instruction
        self.files.record(step.changes, frozenset((e.node, e.attempt) for e in self.pending
                                                  if isinstance(e, SubmitFailed)))
        if finish is not None:
            self._finish(machine, finish)
        self.files.flush()
        self._report(machine, force=machine.finished is not None)

    def _journal_started(self) -> None:
        """Journal the processes the backend started since the last turn (see ``_orphans``)."""
        if self._started is None:
            return
        for event in self._started():
            target = self.keys.get(event.key)
            if target is not None:
                if target[0] == self.dag.provisioner:
                    self.pending.append(ProvisionerReady())
                self.files.started_keys.add(target)
                self.journal.process(self.clock(), target[0], target[1], event.pid, event.start_ticks)

    def _durable(self, done: threading.Event | None) -> None:
        """Wait for a commit; meanwhile the backend may start attempts submitted in earlier turns
        and its exits are kept for the next turn (the engine acts on nothing new).

        A failed commit raises the journal's error (the caller stops the run); so does a commit
        still not durable ``_SIGNAL_GRACE`` seconds after SIGTERM/SIGINT (a hung file system)."""
        if done is None:
            return
        while not done.is_set():
            if self.keys:
                self.early.extend(self.backend.wait(0.0005))
            else:
                done.wait(0.25)
            if self.stop_time is not None and time.monotonic() - self.stop_time > _SIGNAL_GRACE:
                raise EngineError(f"{self.stop_requested or 'a signal'}: the journal {self.journal.path} "
                                  f"did not become durable within {_SIGNAL_GRACE:.0f} s; stopped without it")
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
        if len(launches) != 1:
            self.procs.start(key, [launch.key for launch in launches], self._tolerance(spec))
        if not launches:  # queue 0, or an empty item list: a cluster of no jobs succeeds at once
            now = self.clock()
            self.pending.append(JobExited(sub.node, sub.attempt, 0, None, None, now, now, None))
        for launch in launches:
            self.keys[launch.key] = (sub.node, sub.attempt)
            self.backend.submit(launch)
        if sub.node == self.dag.provisioner and self._started is None:
            self.pending.append(ProvisionerReady())  # a backend that cannot tell: running once submitted

    def start_services(self) -> None:
        """SERVICE nodes: submitted as the run starts, best effort (a node that cannot be submitted is
        noted in the scripts log, nothing more); what becomes of them never reaches the DAG."""
        for name, spec in self.dag.services.items():
            if spec.noop:
                continue
            try:
                launches = self._launches(spec, Submit(name, 0, 0, spec.priority), f"{name}#service")
            except (InputError, ValueError) as exc:
                self.scripts.note(f"SERVICE node {name} could not be submitted: {exc}")
                continue
            for launch in launches:
                self.services.add(launch.key)
                self.backend.submit(launch)

    def stop_services(self) -> None:
        """The DAG has ended: SERVICE nodes still running are removed, as DAGMan removes them."""
        for key in sorted(self.services):
            self.backend.cancel(key)
        self.services.clear()

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
            job = subdag_job(spec, sub)
        else:
            desc = self._description(spec)
            if not desc.queue.simple:
                rows = proc_rows(desc, spec.directory)
                parents = self.dag.parents.get(spec.name, [])
                return [self._launch(spec, sub, f"{key}.{row['Process']}",
                                     render_node(desc, spec, sub, self.append_vars, parents, row))
                        for row in rows]
            job = render_node(desc, spec, sub, self.append_vars, self.dag.parents.get(spec.name, []))
        return [self._launch(spec, sub, key, job)]

    def _launch(self, spec: NodeSpec, sub: Submit, key: str, job: JobSpec) -> Launch:
        # the token makes the process findable without the journal (see _orphans)
        env = {**job.env, ATTEMPT_VARIABLE: attempt_token(self.journal.run_id, spec.name, sub.attempt)}
        return Launch(key, spec.name, sub.attempt, job.argv, env, job.cwd, job.stdout, job.stderr,
                      job.ad, sub.priority, job.stdin, job.transfer)

    def _description(self, spec: NodeSpec) -> SubmitDescription:
        """The node's submit description, read now if it was missing at start or if the node's PRE
        script may have rewritten it."""
        desc = self.descs.get(spec.submit)
        if desc is None or spec.pre is not None:
            desc = self.descs[spec.submit] = node_description(spec, self.dag.descriptions)
        return desc

    # -- events -----------------------------------------------------------------------------------

    def gather(self) -> list[EngineEvent]:
        events: list[EngineEvent] = list(self.pending)
        self.pending.clear()
        if self.stop_requested:  # "" once handed on: a second signal sets it again
            events.append(Interrupted(self.stop_requested))
            self.stop_requested = ""
        events.extend(self.scripts.poll())
        timeout: float | None = 0.0 if events else self.scripts.next_timeout()
        if timeout is None:
            timeout = 0.25  # wake up now and then to notice a signal
        if self.keys:
            raw, self.early = self.early + self.backend.wait(0.0 if self.early else timeout), []
            for event in raw:
                if event.key in self.services:  # a SERVICE node's job: not the DAG's business
                    if not isinstance(event, Suspended | Released):
                        self.services.discard(event.key)
                    continue
                if isinstance(event, Suspended | Released):  # the attempt goes on (held, queued again)
                    held = self.keys.get(event.key)
                    if held is not None and isinstance(event, Suspended):
                        events.append(JobSuspended(held[0], held[1], event.reason))
                    continue
                target = self.keys.pop(event.key, None)
                if target is None:
                    continue  # a cancelled attempt
                ended, rest = self.procs.finished(event)
                for one in rest:  # a held proc ends its node's cluster (DAGMan removes the others)
                    if self.keys.pop(one, None) is not None:
                        self.backend.cancel(one)
                if isinstance(ended, Exited):
                    events.append(JobExited(target[0], target[1], ended.exit_code, ended.signal,
                                            ended.reason, ended.started, ended.ended, ended.slot))
                elif isinstance(ended, Removed):
                    events.append(JobRemoved(target[0], target[1], ended.reason))
                elif ended is not None:  # None: other procs of the node still run
                    events.append(JobHeld(target[0], target[1], ended.reason))
        elif not events:
            if not self.scripts.busy():
                raise EngineError("the engine stalled: nothing in flight but the DAG is not finished")
            time.sleep(timeout)
            events.extend(self.scripts.poll())
        return events

    # -- reports ----------------------------------------------------------------------------------

    def _report(self, machine: DagState, force: bool = False) -> None:
        now = self.clock()
        if self.on_progress is not None and (force or now - self._last_progress >= self.progress_interval):
            self._last_progress = now
            self.on_progress(Progress(len(machine.nodes), dict(machine.counts), machine.retries,
                                      now - self.started, machine.job_time, machine.finished is not None))
        self.files.status(machine, now, force)

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.scripts.close()
            self.files.close()


def _starting_point(dag: Dag, prior: Replay,
                    multi: bool = False) -> tuple[str, set[str], set[str], dict[str, int]]:
    """(source, done, failed, attempts) for this run; see the module docstring."""
    if prior.epochs and prior.ended is None:
        done = {n for n, r in prior.nodes.items() if r.state == "done" and n in dag.nodes}
        done |= _rescue_done(dag, prior.source)
        failed = {n for n, r in prior.nodes.items() if r.state == "failed" and n in dag.nodes}
        return "recovery", done, failed, {n: r.attempt for n, r in prior.nodes.items() if n in dag.nodes}
    rescue_path = newest_rescue(dag.path, multi)
    if rescue_path is None:
        return "fresh", set(), set(), {}
    rescue = parse_rescue(rescue_path, dag)
    attempts: dict[str, int] = {}
    if not _config_bool(dag, "DAGMAN_RESET_RETRIES_UPON_RESCUE", True):
        attempts = {n: max(0, dag.nodes[n].retries - left) for n, left in rescue.retries.items()}
    return f"rescue:{os.path.basename(rescue_path)}", set(rescue.done), set(), attempts


def _rescue_done(dag: Dag, source: str | None) -> set[str]:
    """The nodes the rescue DAG a killed run started from marks done: a second witness of what its
    ``B`` record lists, so damage to that record cannot make them run again."""
    if not source or not source.startswith("rescue:"):
        return set()
    path = os.path.join(os.path.dirname(dag.path), source[len("rescue:"):])
    if os.path.basename(path) != source[len("rescue:"):] or not os.path.isfile(path):
        return set()
    return {n for n in parse_rescue(path, dag).done if n in dag.nodes}


def _damage_warnings(prior: Replay, journal_path: str) -> list[str]:
    """Warnings for damaged journal lines; raises :class:`FormatError` when damage lies in the
    latest run, where it may hide a node that finished (module docstring of ``_journal``)."""
    if prior.damage_in_latest_run:
        first = prior.damage_in_latest_run[0]
        more = len(prior.damage_in_latest_run) - 1
        raise FormatError(
            f"damaged journal record at byte offset {first.offset}: {first.why}"
            + (f" (and {more} more damaged line(s))" if more else "")
            + "; it lies in the latest run, so sheaf cannot tell which nodes finished after it and runs "
            "nothing rather than run a finished node again",
            rule="journal records after the latest run's start are complete and valid",
            value=first.text.decode("utf-8", "replace"), path=journal_path, line=first.line,
            detail="to go on: restore the journal from a backup, or move it aside and run again from "
                   "the newest rescue DAG (the nodes it does not mark DONE run again)")
    return [d.describe(journal_path) + " (before the latest run's start, which lists the nodes done "
            "then; skipped)" for d in prior.damage]


def _complete_result(dag: Dag, prior: Replay, journal_path: str) -> RunResult:
    return RunResult(dag.path, True, 0, 0, len(dag.nodes), len(dag.nodes), 0, prior.retries, 0.0,
                     prior.job_time, "complete", journal=journal_path)


def run_workflow(directory: str, *, backend: Backend | Callable[[], Backend],
                 dag_file: str | Sequence[str] | None = None,
                 maxjobs: int | None = None, maxidle: int | None = None, maxpre: int | None = None,
                 maxpost: int | None = None, clock: Callable[[], float] = time.time,
                 on_progress: Callable[[Progress], None] | None = None, progress_interval: float = 0.2,
                 handle_signals: bool = True, priority: int | None = None,
                 on_warning: Callable[[str], None] | None = None) -> RunResult:
    """Run (or resume) the DAG of a planned directory on ``backend``; returns how it went.

    ``backend`` is a :class:`Backend` or a zero-argument factory (called only once the input is
    known to be good).  Raises :class:`FormatError`/:class:`UsageError` for bad input, a journal
    damaged where it matters, or a second engine on the same DAG; :class:`StorageError` when a file
    cannot be written (the run stops, its jobs are stopped, the journal stays consistent); a
    workflow that runs and fails is a result, not an exception.  ``on_warning`` receives warnings
    (damaged journal lines that did not matter), which the result lists too.  ``priority`` is the
    DAG's own priority (``condor_submit_dag -priority``; a SUBDAG's run gets its node's), added to
    every node's; without it, ``DAGMAN_DEFAULT_PRIORITY``.  Several ``dag_file``s run as one DAG, as
    ``condor_submit_dag a.dag b.dag`` runs them (``_multidag``).
    """
    dag_path, dag, names = _read_dags(directory, dag_file)
    multi = len(names) > 1
    script_warnings: list[str] = []
    check_scripts(dag, script_warnings.append)
    limits = _limits(dag, {"maxjobs": maxjobs, "maxidle": maxidle, "maxpre": maxpre, "maxpost": maxpost},
                     priority)
    with _Environment(dag.env):  # $ENV() and getenv of the expansions made now see ENV SET too
        descs, first = _load_descriptions(dag, limits)
    paths = state_paths(dag_path + "_multi" if multi else dag_path)
    try:
        os.makedirs(paths["dir"], exist_ok=True)
    except OSError as exc:
        raise StorageError.of(exc, paths["dir"], "nothing was run") from None
    lock = _Lock(paths["lock"])
    try:
        prior = replay(paths["journal"])
        warnings = [*dag.warnings, *_config_warnings(dag), *script_warnings,
                    *_damage_warnings(prior, paths["journal"])]
        for warning in warnings:
            if on_warning is not None:
                on_warning(warning)
        if prior.ended is not None and prior.ended.succeeded:
            return _complete_result(dag, prior, paths["journal"])
        source, done, failed, attempts = _starting_point(dag, prior, multi)
        # a killed engine's jobs, journaled or not: gone before their nodes run again
        stop_run_processes(prior.run_id, prior.processes.values())
        run_id = prior.run_id or uuid.uuid4().hex
        remove_stale_temporaries(_report_files(dag))
        reasons = {n: r.reason for n, r in prior.nodes.items() if n in failed}
        machine = DagState(dag, limits, clock, done=done, failed=failed, attempts=attempts,
                           next_cluster=prior.max_cluster + 1, reasons=reasons)
        machine.dag_id = dagman_id()
        the_backend = _backend_of(backend)
        journal = Journal(paths["journal"], run_id)
        if os.environ.get(PARENT_ID_VARIABLE):  # a SUBDAG's run: its jobs must not outlive it
            start_guard(run_id)
        pre_done = frozenset(n for n, spec in dag.nodes.items() if spec.done or n in done)
        run = _Run(dag, descs, first, the_backend, journal, paths, clock, on_progress, progress_interval,
                   source, pre_done, names,
                   Tolerance(limits.job_failure_tolerance, False, limits.remove_job_list_on_failure))
        try:
            with _Environment(dag.env):
                result = _drive(run, machine, prior, source, done, handle_signals)
        finally:
            run.close()
            journal.close()
        return replace(result, warnings=tuple(warnings))
    finally:
        lock.release()


def _read_dags(directory: str, dag_file: str | Sequence[str] | None) -> tuple[str, Dag, tuple[str, ...]]:
    """(primary DAG path, the DAG, the DAG files' names) for one or several DAG files."""
    files = [dag_file] if dag_file is None or isinstance(dag_file, str) else list(dag_file)
    found = [find_dag(directory, f) for f in files or [None]]
    names = tuple(os.path.basename(p) for p in found)
    first = parse_dag(found[0])
    if len(found) == 1:
        return found[0], first, names
    if not munges_names(first):
        return found[0], parse_dag(*found), names  # one name space, the files read in turn
    return found[0], combine_dags([first, *(parse_dag(p) for p in found[1:])]), names


def _report_files(dag: Dag) -> list[str]:
    """The files the engine replaces atomically (their stale temporaries are removed on start)."""
    files = [glob.escape(p) for p in (dag.dot, dag.node_status_file[0] if dag.node_status_file else None,
                                      dag.path + ".metrics") if p]
    if dag.dot and not dag.dot_options.overwrite:
        files.append(glob.escape(dag.dot) + ".[0-9]*")  # DOT ... DONT-OVERWRITE: numbered files
    return [glob.escape(dag.path) + suffix + ".rescue[0-9][0-9][0-9]*" for suffix in ("", "_multi")] + files


def _backend_of(backend: Backend | Callable[[], Backend]) -> Backend:
    if hasattr(backend, "submit"):
        return backend  # type: ignore[return-value]
    return backend()


def _drive(run: _Run, machine: DagState, prior: Replay, source: str, done: set[str],
           handle_signals: bool) -> RunResult:
    dag = run.dag
    initially_done = {n for n in dag.nodes if machine.node_state(n) == "done"}
    run.journal.begin(run.clock(), prior.epochs + 1, source, len(dag.nodes), initially_done)
    run.files.begin(run.clock())
    run.files.draw(machine, run.clock())
    restore = _install_signals(run) if handle_signals else None
    try:
        run.start_services()  # before every other node, as DAGMan starts them
        run.act(machine, machine.start(idle=0))
        while machine.finished is None:
            events = run.gather()
            run.act(machine, machine.advance(events, idle=run.backend.idle()))
    finally:
        if restore is not None:
            restore()
    return _result(run, machine, source)


def _result(run: _Run, machine: DagState, source: str) -> RunResult:
    finish = machine.finished
    assert finish is not None
    failed_nodes = tuple((n, machine.node_reason(n)) for n in machine.nodes
                         if machine.node_state(n) == "failed")
    return RunResult(run.dag.path, finish.succeeded, finish.exit_code, finish.dag_status, len(machine.nodes),
                     machine.counts["done"], machine.counts["failed"], machine.retries,
                     run.clock() - run.started, machine.job_time, source, failed_nodes, run.rescue,
                     run.journal.path, run.journal.bytes_written, run.journal.commits,
                     {"journal_seconds": run.journal.seconds})


def watch_parent_engine(run: _Run, interval: float = 0.5) -> None:
    """A SUBDAG's run (spawned by its parent engine, whose pid it is given) stops as a removed DAG
    does when that engine dies (``kill -9``): its jobs are cancelled, its journal and rescue DAG
    kept, so the parent's resume finds no orphan running and the child resumes where it stopped."""
    parent = os.environ.get(PARENT_ID_VARIABLE, "")
    if not parent.isdigit() or int(parent) != os.getppid():
        return

    def watch() -> None:
        while os.getppid() == int(parent):
            time.sleep(interval)
        if not run.stop_requested:
            run.stop_requested, run.stop_time = "the parent engine died", time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)  # wakes the loop from any wait

    threading.Thread(target=watch, name="sheaf-parent-watch", daemon=True).start()


def _install_signals(run: _Run) -> Callable[[], None] | None:
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, _frame: Any) -> None:
        if not run.stop_requested:  # None, or "" once the first stop was handed on: a second stop
            run.stop_requested = f"engine received {signal.Signals(signum).name}"
            run.stop_time = time.monotonic()

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    watch_parent_engine(run)

    def restore() -> None:
        for s, handler in old.items():
            signal.signal(s, handler)
    return restore
