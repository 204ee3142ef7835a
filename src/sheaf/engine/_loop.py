"""The thin loop around :class:`DagState`: the only part of the engine that touches the world.

Modules: this one starts a run and drives its turns; ``_run`` is one run's world (carrying out
instructions, gathering events); ``_runconfig`` the CONFIG knobs and up-front validation;
``_resume`` where state comes from (journal, rescue DAG) and the run lock.

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
  (retries reset unless ``DAGMAN_RESET_RETRIES_UPON_RESCUE = False``, when a node's retries left
  are its RETRY count, counted again from 0, as DAGMan reads a rescue DAG's ``RETRY`` lines);
* a journal whose last run succeeded: nothing to do -- unless it wrote a rescue DAG (nodes failed
  and the FINAL node's success made the DAG succeed): DAGMan, given the DAG again, starts from the
  newest rescue DAG, and so does sheaf.

Everything is validated before anything is written: the DAG file, its CONFIG, the rescue DAG the run
reads (parsed onto the DAG as DAGMan parses it: one more DAG file, read last), every submit
description (expanded for its first node; the other nodes sharing it at submission) and every
SUBDAG's DAG file; a bad one raises :class:`FormatError`. A submit file or sub-DAG file that does
not exist yet is not an error: as in DAGMan it is read when its node is submitted (a PRE script or
an earlier node may write it), and if it is still missing then, that node alone fails to submit
(:class:`SubmitFailed`; its POST script runs with ``$RETURN`` -1001). A node with a PRE script has
its submit file read again at submission, for the same reason. A second engine on the same DAG
refuses to start (an ``flock`` on ``.sheaf/<dag>.lock``).

A stop (SIGTERM/SIGINT) is honoured from the first line of ``run_workflow`` (``_stop``): before
the backend exists it ends the run at once as a removed DAG that never ran; from then on the loop
looks at it every turn.  The state is therefore built before the backend is made.  While it holds
the run lock, a run also takes a stop from another thread of its process (``stop_in_process``, given
the lock), which needs no signal handler.  A DAG of
``_FREEZE_NODES`` or more has its long-lived objects frozen out of the cyclic collector for the
run (``gc.freeze``, undone as ``run_workflow`` returns); the collector is paused while the DAG is
read; and during the run the collector's youngest generation is collected every
``_YOUNG_THRESHOLD`` net allocations, not every 700 (the engine's per-node objects mostly die young,
by reference counting; the state they join is rescanned by every young collection, so the default
threshold makes many costly collections): the process-wide changes the engine makes, at its entry
point, undone as it returns.
"""

from __future__ import annotations

__all__ = ["Progress", "RunResult", "find_dag", "run_workflow", "state_paths"]

import gc
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf._gc import freeze, gc_paused, unfreeze
from sheaf.condor import Dag, Rescue, check_categories, parse_dag, parse_rescue
from sheaf.engine._backend import Adopts, Backend
from sheaf.engine._dagid import PARENT_ID_VARIABLE, dagman_id
from sheaf.engine._journal import Journal, Replay, replay
from sheaf.engine._multidag import combine_dags, munges_names
from sheaf.engine._nodejob import SubdagOptions
from sheaf.engine._nodes import DAG_ABORTED, DAG_CYCLE, DAG_REMOVED
from sheaf.engine._orphans import attempt_token, start_guard, stop_run_processes
from sheaf.engine._paths import find_dag, named_rescue, rescue_number, retire_rescues, save_file, state_paths
from sheaf.engine._procs import Tolerance
from sheaf.engine._resume import RunLock, damage_warnings, is_complete, rescue_to_read, starting_point
from sheaf.engine._run import EngineRun, Progress
from sheaf.engine._runconfig import (
    DagEnvironment,
    DagmanOptions,
    auto_rescue,
    check_flags,
    check_strict_warnings,
    config_warnings,
    environment_knobs,
    load_descriptions,
    run_limits,
    subdag_options,
    system_knobs,
)
from sheaf.engine._scriptmacros import check_scripts
from sheaf.engine._state import DagState
from sheaf.engine._stop import Stopped, StopSignals, register, unregister
from sheaf.engine.reports import remove_stale_files
from sheaf.errors import FormatError, StorageError, UsageError

_FREEZE_NODES = 10_000  # from this many nodes on, the run's long-lived objects leave the collector
_YOUNG_THRESHOLD = 50_000  # net allocations between collections of the youngest generation (default 700)


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of one engine run (``sheaf.app.run``, ``sheaf run``).

    ``dag``: the DAG file run (absolute).  ``succeeded``: the workflow succeeded.  ``exit_code``:
    DAGMan's exit value for the run -- 0 on success, 1 when nodes failed, an ``ABORT-DAG-ON``'s
    ``RETURN`` value (else the node's value), 2 for a removed run (stopped by SIGTERM/SIGINT or
    ``sheaf.app.stop``, DAGMan's value after ``condor_rm``; 1 for a stop before any node started);
    when a FINAL node ran, 0 or 1 by its outcome.  The ``sheaf run`` process exits with it (modulo
    256), except after a removed run, when it exits 1 (2 is bad input's).  ``dag_status``: DAGMan's
    ``DAG_STATUS`` (0 ok, 2 nodes failed, 3 aborted, 4 removed, 5 cycle, 6 halted; ``removed`` and
    ``aborted`` read it).  ``total``, ``done``, ``failed``: the DAG's nodes and those done and failed
    at the end.  ``retries``: the node retries (``RETRY``) the run made.  ``wall_time``: the run's
    seconds; ``job_time``: its jobs' seconds, summed.  ``source``: where the run started from --
    ``fresh``, ``recovery`` (a killed run's journal), ``rescue:<file>`` (a rescue DAG), ``complete``
    (the journal's last run succeeded: nothing ran) or ``stopped`` (stopped before any node
    started: nothing ran or was written).  ``failed_nodes``: (node, reason) of each failed node.
    ``rescue``: the absolute path of the rescue DAG the run wrote, None when it wrote none.
    ``journal``: the run's journal file; ``journal_bytes``, ``journal_commits``: what the run wrote
    to it.  ``extra``: ``journal_seconds`` (the time spent writing the journal), ``cycle`` (the
    nodes of a cycle, when the run found one), ``stopped`` (the stop's reason, with source
    ``stopped``).  ``warnings``: what was warned of (damaged journal lines that did not matter,
    knobs sheaf does not honour)."""

    dag: str
    succeeded: bool
    exit_code: int  # DAGMan's exit value: see the docstring
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

    @property
    def removed(self) -> bool:
        """The run was stopped (SIGTERM/SIGINT, DAGMan's ``condor_rm``)."""
        return self.dag_status == DAG_REMOVED

    @property
    def aborted(self) -> bool:
        """A node's value matched its ABORT-DAG-ON."""
        return self.dag_status == DAG_ABORTED


def _complete_result(dag: Dag, prior: Replay, journal_path: str) -> RunResult:
    return RunResult(dag.path, True, 0, 0, len(dag.nodes), len(dag.nodes), 0, prior.retries, 0.0,
                     prior.job_time, "complete", journal=journal_path)


def run_workflow(directory: str, *, backend: Backend | Callable[[], Backend],
                 options: DagmanOptions | None = None, clock: Callable[[], float] = time.time,
                 on_progress: Callable[[Progress], None] | None = None, progress_interval: float = 0.2,
                 handle_signals: bool = True, on_warning: Callable[[str], None] | None = None) -> RunResult:
    """Run (or resume) the DAG of a planned directory on ``backend``; returns how it went.

    ``backend`` is a :class:`Backend` or a zero-argument factory (called only once the input is
    known to be good).  ``options`` are condor_submit_dag's (:class:`DagmanOptions`: the DAG file(s),
    throttles, priority, ...); several DAG files run as one DAG, as ``condor_submit_dag a.dag b.dag``
    runs them (``_multidag``).  Raises :class:`FormatError`/:class:`UsageError` for bad input, a
    journal damaged where it matters, or a second engine on the same DAG; :class:`StorageError` when a
    file cannot be written (the run stops, its jobs are stopped, the journal stays consistent); a
    workflow that runs and fails is a result, not an exception.  ``on_warning`` receives warnings
    (damaged journal lines that did not matter), which the result lists too.
    """
    options = options or DagmanOptions()
    signals = StopSignals().install() if handle_signals else StopSignals()
    begun, frozen, thresholds = time.monotonic(), gc.get_freeze_count(), gc.get_threshold()
    gc.set_threshold(max(thresholds[0], _YOUNG_THRESHOLD), *thresholds[1:])
    try:
        return _run_workflow(directory, backend, options, clock, on_progress, progress_interval, on_warning,
                             signals)
    except Stopped as stop:  # before anything was started: a removed DAG that never ran
        return _stopped_result(directory, options.dag_files, stop.reason, time.monotonic() - begun)
    finally:
        signals.restore()
        gc.set_threshold(*thresholds)
        if gc.get_freeze_count() > frozen:  # the run's objects may be garbage now: collectable again
            unfreeze()


def _run_workflow(directory: str, backend: Backend | Callable[[], Backend], options: DagmanOptions,
                  clock: Callable[[], float], on_progress: Callable[[Progress], None] | None,
                  progress_interval: float, on_warning: Callable[[str], None] | None,
                  signals: StopSignals) -> RunResult:
    script_warnings: list[str] = []
    with gc_paused():  # reading makes a few objects a line, nearly all kept for the run
        dag_path, dag, names = _read_dags(directory, options.dag_files, options.usedagdir,
                                          options.system_knobs)
        multi = len(names) > 1
        paths = state_paths(dag_path + "_multi" if multi else dag_path)
        chosen = _read_rescue(directory, dag, options, multi, paths["journal"])
        check_scripts(dag, script_warnings.append)
        limits = run_limits(dag, options, _batch_name(dag_path, options.batch_name))
        with DagEnvironment(dag.env):  # $ENV() and getenv of the expansions made now see ENV SET too
            descs, first = load_descriptions(dag, limits, script_warnings.append)
        _freeze_long_lived(dag)
    try:
        os.makedirs(paths["dir"], exist_ok=True)
    except OSError as exc:
        raise StorageError.of(exc, paths["dir"], "nothing was run") from None
    signals.hold()  # a lock taken must be released: a stop meanwhile is raised once it is held
    lock = _take_lock(paths["lock"], signals)
    try:
        signals.resume()
        prior = chosen.journal_read(paths["journal"])
        warnings = [*dag.warnings, *config_warnings(dag), *script_warnings,
                    *damage_warnings(prior, paths["journal"])]
        _tell(on_warning, warnings)
        if _nothing_to_run(dag, prior, options, multi, chosen):
            return _complete_result(dag, prior, paths["journal"])
        source, done, failed, attempts, retry_limits = starting_point(dag, prior, chosen.start,
                                                                      options.recovery, chosen.rescue)
        reasons = {n: r.reason for n, r in prior.nodes.items() if n in failed}
        machine = DagState(dag, limits, clock, done=done, failed=failed, attempts=attempts,
                           next_cluster=prior.max_cluster + 1, reasons=reasons, retry_limits=retry_limits)
        machine.dag_id = dagman_id()
        _freeze_long_lived(dag)
        signals.hold()  # the backend and the killing of a killed engine's jobs: a stop waits for the run
        the_backend = _backend_of(backend)
        adopted = _adopt(the_backend, dag, prior) if source == "recovery" else {}
        # a killed engine's jobs, journaled or not: gone before their nodes run again (unless adopted)
        stop_run_processes(prior.run_id, [p for n, p in prior.processes.items() if n not in adopted],
                           spare={attempt_token(prior.run_id, n, a) for n, a in adopted.items()})
        run_id = prior.run_id or uuid.uuid4().hex
        remove_stale_files(dag)
        journal = Journal(paths["journal"], run_id)
        if os.environ.get(PARENT_ID_VARIABLE):  # a SUBDAG's run: its jobs must not outlive it
            start_guard(run_id)
        pre_done = frozenset(n for n, spec in dag.nodes.items() if spec.done or n in done)
        run = EngineRun(dag, descs, first, the_backend, journal, paths, clock, on_progress, progress_interval,
                   source, pre_done, names,
                   Tolerance(limits.job_failure_tolerance, False, limits.remove_job_list_on_failure),
                   limits.batch_name, limits.suppress_notification,
                   SubdagOptions(subdag_options(dag, options, chosen.inherited), options.force))
        signals.attach(run)
        try:
            with DagEnvironment(dag.env):
                result = _drive(run, machine, prior, source)
        finally:
            run.close()
            journal.close()
        return replace(result, warnings=tuple(warnings))
    finally:
        _let_go(lock)


def _take_lock(path: str, signals: StopSignals) -> RunLock:
    """The run lock, and from now on a stop from another thread of this process (``stop_in_process``)."""
    lock = RunLock(path)
    register(path, signals)
    return lock


def _let_go(lock: RunLock) -> None:
    unregister(lock.path)
    lock.release()


def _batch_name(dag_path: str, given: str | None) -> str:
    """The node jobs' JobBatchName: the one given, else DAGMan's ``<primary DAG file>+<DAGManJobId>``."""
    return f"{os.path.basename(dag_path)}+{dagman_id()}" if given is None else given


def _freeze_long_lived(dag: Dag) -> None:
    """A large DAG's objects (the DAG, its descriptions, then the state's nodes) live as long as the
    run: frozen out of the cyclic collector, which would otherwise rescan them all in every
    generation-2 pass - two thirds of the time a stop takes to move 10^5 ready nodes back to
    waiting, and a third of building the state.  ``run_workflow`` unfreezes them as it returns."""
    if len(dag.nodes) >= _FREEZE_NODES:
        freeze()


def _tell(on_warning: Callable[[str], None] | None, warnings: list[str]) -> None:
    if on_warning is not None:
        for warning in warnings:
            on_warning(warning)


def _rescue_choice(directory: str, dag: Dag, options: DagmanOptions, multi: bool
                   ) -> tuple[str | None, int | None]:
    """Which DAG this run starts from, as condor_submit_dag's ``-force``, ``-load_save``, ``-RescueFile``,
    ``-DoRescueFrom N`` and ``-AutoRescue`` choose (``starting_point``'s ``start``), and the number of a
    rescue DAG ``-RescueFile`` named (its SUBDAGs start from theirs).  It changes nothing: the rescue DAGs
    the choice retires are renamed under the run lock (``_retire_rescues``)."""
    if options.force:
        return None, None
    if options.load_save is not None:  # a partial rescue DAG; the rescue DAGs stay as they are
        return save_file(dag.path, options.load_save), None
    if options.rescue_file is not None:
        return named_rescue(directory, dag.path, multi, options.rescue_file)
    if options.rescue_from is not None:
        return rescue_number(dag.path, multi, options.rescue_from), None
    return ("newest" if auto_rescue(dag, options) else None), None


def _retire_rescues(dag: Dag, options: DagmanOptions, multi: bool, named: int | None) -> None:
    """Rename the rescue DAGs ``-force`` (all), ``-RescueFile`` (those after its number, ``named``) and
    ``-DoRescueFrom N`` (those after N) retire, as condor_submit_dag does."""
    if options.force:
        retire_rescues(dag.path, multi)
    elif options.load_save is None and options.rescue_file is not None:
        retire_rescues(dag.path, multi, after=named or 0)
    elif options.load_save is None and options.rescue_from is not None:
        retire_rescues(dag.path, multi, after=options.rescue_from)


@dataclass(frozen=True, slots=True)
class _Chosen:
    """Where the run starts: ``_rescue_choice``'s start and number, and the rescue DAG file read (None:
    none) with what it says."""

    start: str | None
    inherited: int | None
    path: str | None
    rescue: Rescue | None
    #: the journal as read before the lock, and the (inode, size, mtime) it was read at
    prior: Replay | None = None
    journal_stamp: tuple[int, int, int] | None = None

    def journal_read(self, journal: str) -> Replay:
        """The journal replayed under the run lock: the replay made before the lock if the file has not
        changed since (a large run's journal is slow to replay), else a new one."""
        if self.prior is not None and self.journal_stamp is not None and \
                _journal_stamp(journal) == self.journal_stamp:
            return self.prior
        return replay(journal)


def _journal_stamp(journal: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(journal)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_rescue(directory: str, dag: Dag, options: DagmanOptions, multi: bool, journal: str) -> _Chosen:
    """The start the options choose, and the rescue DAG the run reads (``rescue_to_read``) parsed onto
    ``dag`` as DAGMan parses it, after the DAG files and before its category and strictness checks -- all
    before anything is written, so that a bad one leaves nothing behind.  The journal is read here only
    to tell a recovery (which reads the rescue DAG the killed run started from) or a complete DAG; under
    its lock the run reads it again unless the file is unchanged (``_Chosen.journal_read``) and checks
    the choice still holds (``_nothing_to_run``)."""
    start, inherited = _rescue_choice(directory, dag, options, multi)
    early = start == "newest" or options.recovery
    stamp = _journal_stamp(journal) if early else None
    prior = replay(journal) if early else Replay()
    path = rescue_to_read(dag, prior, multi, start, options.recovery)
    rescue = parse_rescue(path, dag) if path is not None else None
    check_categories(dag)
    check_strict_warnings(dag)
    return _Chosen(start, inherited, path, rescue, prior if early else None, stamp)


def _nothing_to_run(dag: Dag, prior: Replay, options: DagmanOptions, multi: bool, chosen: _Chosen) -> bool:
    """Under the run lock: True when the journal's last run left nothing to do; else the rescue DAGs the
    options retire are renamed, once the journal is known to ask for the rescue DAG read before the lock
    (another run may have ended in between)."""
    if is_complete(prior, chosen.start):
        return True
    if rescue_to_read(dag, prior, multi, chosen.start, options.recovery) != chosen.path:
        raise UsageError("the workflow's journal or rescue DAGs changed while this run was starting "
                         "(another run ended meanwhile); run it again")
    _retire_rescues(dag, options, multi, chosen.inherited)
    return False


def _read_dags(directory: str, dag_files: Sequence[str], usedagdir: bool = False,
               system: Sequence[tuple[str, str]] = ()) -> tuple[str, Dag, tuple[str, ...]]:
    """(primary DAG path, the DAG, the DAG files' names) for one or several DAG files (none: the one
    ``*.dag`` in ``directory``).  Their relative paths start from ``directory``, DAGMan's working
    directory, or with ``usedagdir`` from each file's own directory (``condor_submit_dag -usedagdir``).
    The DAG's configuration has the ``_CONDOR_DAGMAN_*`` knobs of the environment under its own."""
    path, dag, names = _parse_dags(directory, dag_files, usedagdir)
    dag.warnings.extend(environment_knobs(dag, os.environ))
    dag.warnings.extend(system_knobs(dag, system, "the pool configuration"))
    if dag.cycle and dag.flag("DAGMAN_STARTUP_CYCLE_DETECT", False):  # DAGMan's check before it starts
        raise FormatError(f"a cycle exists in the DAG: {' -> '.join(dag.cycle)}",
                          rule="with DAGMAN_STARTUP_CYCLE_DETECT = True a DAG with a cycle is refused "
                          "before it runs",
                          path=path)
    check_flags(dag)
    return path, dag, names


def _parse_dags(directory: str, dag_files: Sequence[str], usedagdir: bool
                ) -> tuple[str, Dag, tuple[str, ...]]:
    found = [find_dag(directory, f) for f in dag_files] if dag_files else [find_dag(directory, None)]
    names = tuple(os.path.basename(p) for p in found)
    base = None if usedagdir else directory
    first = parse_dag(found[0], base=base, usedagdir=usedagdir)
    if len(found) == 1:
        return found[0], first, names
    if not munges_names(first):  # one name space, the files read in turn
        return found[0], parse_dag(*found, base=base, usedagdir=usedagdir), names
    return found[0], combine_dags([first, *(parse_dag(p, base=base, usedagdir=usedagdir)
                                            for p in found[1:])]), names


def _stopped_result(directory: str, dag_files: Sequence[str], reason: str, elapsed: float) -> RunResult:
    """A stop before anything started: DAGMan's removed DAG (exit 1, ``DAG_STATUS_RM``), nothing run
    and nothing written (no journal, no rescue DAG)."""
    dag = find_dag(directory, dag_files[0] if dag_files else None)
    return RunResult(dag, False, 1, DAG_REMOVED, 0, 0, 0, 0, elapsed, 0.0, "stopped",
                     extra={"stopped": reason})


_SETTLED = frozenset({"done", "failed"})  # journal states of a node no attempt of which is in flight


def _adopt(backend: Backend, dag: Dag, prior: Replay) -> dict[str, int]:
    """The node attempts a killed engine left in flight that ``backend`` takes over (``Backend.adopt``):
    node -> attempt."""
    if not isinstance(backend, Adopts) or not prior.run_id:
        return {}
    inflight = {n: r.attempt for n, r in prior.nodes.items() if n in dag.nodes and r.state not in _SETTLED}
    if not inflight:
        return {}
    bases = {f"{n}#{a}": n for n, a in inflight.items()}
    keys = backend.adopt(prior.run_id, sorted(inflight.items()))
    nodes = {bases.get(k) or bases.get(k.rsplit(".", 1)[0]) for k in keys}
    return {n: inflight[n] for n in nodes if n is not None}


def _backend_of(backend: Backend | Callable[[], Backend]) -> Backend:
    return backend if isinstance(backend, Backend) else backend()


def _drive(run: EngineRun, machine: DagState, prior: Replay, source: str) -> RunResult:
    dag = run.dag
    initially_done = {n for n, node in machine.nodes.items() if node.state == "done"}
    run.journal.begin(run.clock(), prior.epochs + 1, source, len(dag.nodes), initially_done)
    run.files.begin(run.clock())
    run.files.draw(machine, run.clock())
    run.start_services(machine)  # before every other node, as DAGMan starts them
    step = machine.start(idle=0)
    run.act(machine, step)
    while machine.finished is None:
        # a step that DAGMAN_MAX_SUBMITS_PER_INTERVAL cut short is followed at once by the next: the
        # backend's news waits (it is gathered once the ready nodes are submitted), a stop does not
        events = ([] if step.more and not run.stop_requested
                  else run.gather(held_for_ever=machine.queues.closed_waiting()))
        step = machine.advance(events, idle=run.backend.idle())
        run.act(machine, step)
    return _result(run, machine, source)


def _result(run: EngineRun, machine: DagState, source: str) -> RunResult:
    finish = machine.finished
    assert finish is not None
    failed_nodes = tuple((n, machine.node_reason(n)) for n in machine.nodes
                         if machine.node_state(n) == "failed")
    return RunResult(run.dag.path, finish.succeeded, finish.exit_code, finish.dag_status, len(machine.nodes),
                     machine.counts["done"], machine.counts["failed"], machine.retries,
                     run.clock() - run.started, machine.job_time, source, failed_nodes, run.rescue,
                     run.journal.path, run.journal.bytes_written, run.journal.commits,
                     {"journal_seconds": run.journal.seconds,
                      **({"cycle": " -> ".join(run.dag.cycle)} if finish.dag_status == DAG_CYCLE else {})})
