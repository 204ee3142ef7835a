"""Run (or resume) a submit directory completely: what ``sheaf run DIR`` and a Python caller share.

A run is more than the engine's loop over the DAG.  Around :func:`sheaf.engine.run_workflow` this module
picks the backend (:class:`RunOptions`: this machine's pool, Slurm, Dask; a plan that ``sheaf plan
--group-size`` cut into group DAGs runs on the grid backend, which matches them to the collector's site
ads), starts the events loader beside the engine (``sheaf.monitor``: the events database that ``sheaf
status`` and ``statistics`` read), appends DAGMan's progress lines to ``<dag>.dagman.out`` (``_dagman_out``,
which Pegasus's tools read), removes what an interrupted ``sheaf plan`` into the directory left, and --
however the run ends -- releases podman's run root of the plan's containers once no container task holds
it.  ``--backend htcondor`` is no run here: the DAG is handed to DAGMan on a pool (:func:`hand_to_dagman`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from sheaf._fields import check_fields, check_path
from sheaf.app._dagman_out import DagmanOut
from sheaf.backends import BACKENDS, make_backend
from sheaf.codegen import CONF_DIR, RUN_ROOT_LOCK, podman_env, remove_stale_siblings, run_root
from sheaf.engine import Backend, DagmanOptions, Progress, RunResult, find_dag, run_workflow
from sheaf.errors import UsageError
from sheaf.monitor import EventsLoader, events_enabled

if TYPE_CHECKING:
    from sheaf.backends.htcondor import DagmanSubmission

T = TypeVar("T")

__all__ = ["RunOptions", "condor_submit_dag_options", "hand_to_dagman", "run"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run a submit directory.

    ``dagman``: condor_submit_dag's options (the DAG file(s), throttles, priority, ...);
    ``backend``: where node jobs run (``local``, ``slurm``, ``dask``; ``htcondor`` is
    :func:`hand_to_dagman`'s) -- jobs whose site asks for a batch system (``grid_resource = batch slurm``)
    go there whatever it says; ``pool_config``: the local pool's HTCondor knobs (``NUM_CPUS``, ``MEMORY``,
    ``SLOT_TYPE_N``, ...); ``scheduler``: a Dask scheduler's address (none: a LocalCluster for the run);
    ``negotiation_interval`` and ``backout_idle``: a grid plan's seconds between negotiation cycles, and
    of no progress at a site before its groups are backed out: at least 0.05 and 0.1 as ``sheaf run``
    takes them, the interval finite (an infinite or NaN one would never negotiate again), the time of
    no progress a number (infinite: never backed out)."""

    dagman: DagmanOptions = field(default_factory=DagmanOptions)
    backend: str = "local"
    pool_config: str | None = None
    scheduler: str | None = None
    negotiation_interval: float = 1.0
    backout_idle: float = 30.0

    def __post_init__(self) -> None:
        check_fields(self)
        if self.backend not in BACKENDS:
            raise UsageError(f"unknown backend {self.backend!r}: one of {', '.join(sorted(BACKENDS))}")
        for name, least, finite in (("negotiation_interval", 0.05, True), ("backout_idle", 0.1, False)):
            value = getattr(self, name)
            if not (least <= value and (value < math.inf or not finite)):  # NaN is in no range
                kind = "finite " if finite else ""
                raise UsageError(f"{name} {value!r} is not in the range {kind}x>={least} "
                                 f"(sheaf run --{name.replace('_', '-')})")


def run(directory: str, options: RunOptions | None = None, *,
        on_progress: Callable[[Progress], None] | None = None,
        on_warning: Callable[[str], None] | None = None) -> RunResult:
    """Run (or resume) the planned workflow in ``directory`` (module docstring); ``directory`` may be a
    DAG file instead, run from the current directory as ``sheaf run FILE.dag`` and ``condor_submit_dag
    FILE`` run it (the file comes first among ``options.dagman.dag_files``).  A workflow that runs
    and fails is a result (``succeeded`` false, ``exit_code``), bad input raises ``InputError`` or
    ``UsageError``.  ``on_progress`` gets the engine's progress about every 0.2 s, ``on_warning`` each
    warning (damaged journal lines that did not matter, knobs sheaf does not honour)."""
    check_path("directory", directory)
    directory, options = _target(directory, options or RunOptions())
    if options.backend == "htcondor":
        raise UsageError("the htcondor backend hands the DAG to DAGMan: use hand_to_dagman")
    dags = options.dagman.dag_files

    def backend() -> Backend:
        if _is_grid_plan(directory):
            return _grid_backend(directory, options)
        made: Backend = make_backend(options.backend, directory=os.path.abspath(directory),
                                     pool_config=options.pool_config, scheduler=options.scheduler,
                                     env=dict(os.environ))
        return made

    remove_stale_siblings(directory)
    dag_path = _dag_of(directory, dags)
    record = DagmanOut(dag_path, options=options.dagman) if dag_path else None
    status = 1
    loader = _events_loader(dag_path, on_warning)
    removed = False  # a stopped run exits without the events loader's last catch-up
    dagman = replace(options.dagman, system_knobs=_dagman_knobs(options.pool_config),
                     subdag_args=_backend_args(options))
    try:
        result = run_workflow(directory, backend=backend, options=dagman,
                              on_progress=_both(on_progress, record),
                              on_warning=_both(on_warning, record.warn if record is not None else None))
        status = 0 if result.succeeded else (result.exit_code or 1)
        removed = result.removed
        return result
    finally:
        if loader is not None:
            loader.stop(catch_up=not removed)
        if record is not None:
            record.finish(status)
        _release_container_state(directory)


def _backend_args(options: RunOptions) -> tuple[str, ...]:
    """``sheaf run``'s options that send a SUBDAG's jobs where this run's go: its backend, scheduler
    and pool configuration."""
    out: tuple[str, ...] = ("--backend", options.backend) if options.backend != "local" else ()
    if options.scheduler:
        out += ("--scheduler", options.scheduler)
    if options.pool_config:
        out += ("--pool-config", os.path.abspath(options.pool_config))
    return out


def _dagman_knobs(pool_config: str | None) -> tuple[tuple[str, str], ...]:
    """The ``DAGMAN_*`` knobs of the pool configuration, which is the run's HTCondor configuration."""
    from sheaf.backends import load_pool_config

    config = load_pool_config(pool_config)
    return tuple((name, config[name]) for name in config if name.upper().startswith("DAGMAN_"))


def hand_to_dagman(directory: str, options: RunOptions | None = None) -> DagmanSubmission:
    """The DAG of ``directory`` (or the DAG file ``directory``, as :func:`run` takes it) handed to
    DAGMan on the HTCondor pool whose schedd is reachable (``sheaf.backends.htcondor``), with
    ``options.dagman`` as condor_submit_dag's options; returns the submission's record (``dag``,
    ``cluster``, ``submit_file``)."""
    from sheaf.backends.htcondor import HTCondorBackend  # imported here: it loads the htcondor2 bindings

    directory, options = _target(directory, options or RunOptions())
    dagman = options.dagman
    return HTCondorBackend().submit_dag(directory, list(dagman.dag_files),
                                        options=condor_submit_dag_options(dagman))


def condor_submit_dag_options(dagman: DagmanOptions) -> dict[str, int | bool | str]:
    """The options given, under ``htcondor2.Submit.from_dag``'s names for condor_submit_dag's."""
    given = {"MaxJobs": dagman.maxjobs, "MaxIdle": dagman.maxidle, "MaxPre": dagman.maxpre,
             "MaxPost": dagman.maxpost, "Priority": dagman.priority, "PostRun": dagman.always_run_post,
             "BatchName": dagman.batch_name, "SuppressNotification": dagman.suppress_notification,
             "UseDagDir": dagman.usedagdir or None, "Force": dagman.force or None,
             "AutoRescue": None if dagman.auto_rescue is None else int(dagman.auto_rescue),
             "DoRescueFrom": dagman.rescue_from, "RescueFile": dagman.rescue_file,
             "SaveFile": dagman.load_save, "DoRecovery": dagman.recovery or None}
    return {key: value for key, value in given.items() if value is not None}


def _target(directory: str, options: RunOptions) -> tuple[str, RunOptions]:
    """``directory`` and ``options``, or for a DAG file the current directory and the options with that
    file first among the DAG files, as ``condor_submit_dag FILE`` runs it from where it is started."""
    if not os.path.isfile(directory):
        return directory, options
    dagman = replace(options.dagman, dag_files=(directory, *options.dagman.dag_files))
    return os.curdir, replace(options, dagman=dagman)


def _is_grid_plan(directory: str) -> bool:
    """A directory ``sheaf plan --group-size`` wrote (told without importing the grid backend)."""
    return os.path.isfile(os.path.join(directory, "grid", "groups.json"))


def _grid_backend(directory: str, options: RunOptions) -> Backend:
    from sheaf.backends.grid import BackOut, GridBackend, load_pool_config, plan_collector

    return GridBackend(plan_collector(directory), policy=BackOut(idle=options.backout_idle),
                       interval=options.negotiation_interval, config=load_pool_config(options.pool_config))


def _dag_of(directory: str, dags: tuple[str, ...]) -> str | None:
    """The DAG this run runs -- the first named (after which DAGMan names ``.dagman.out``), else the
    one in DIR -- or None when there is none (``run_workflow`` reports that)."""
    try:
        return find_dag(directory, dags[0] if dags else None)
    except UsageError:
        return None


def _both(first: Callable[[T], None] | None,
          second: Callable[[T], None] | None) -> Callable[[T], None] | None:
    callbacks = [callback for callback in (first, second) if callback is not None]
    if len(callbacks) < 2:
        return callbacks[0] if callbacks else None

    def both(value: T) -> None:
        for callback in callbacks:
            callback(value)
    return both


def _release_container_state(directory: str) -> None:
    """The containers a stopped run left and podman's run root of the plan's containers, once no
    container task holds it: the engine kills the jobs it stops (SIGKILL to their process groups),
    which leaves their containers running under conmon (``sheaf.jobtools.container``)."""
    state = os.path.join(directory, CONF_DIR)
    lock = os.path.join(state, RUN_ROOT_LOCK)
    if os.path.exists(lock):
        # imported here: a plan without containers (most) need not load it, nor urllib
        from sheaf.jobtools.container import remove_leftover_containers

        remove_leftover_containers(lock, run_root(state), podman_env(state))


def _events_loader(dag: str | None, on_warning: Callable[[str], None] | None) -> EventsLoader | None:
    """The events database's loader beside the engine (``sheaf.monitor``), unless SHEAF_EVENTS=0 or
    there is no DAG."""
    if dag is None or not events_enabled():
        return None
    return EventsLoader(dag, on_warning=on_warning).start()
