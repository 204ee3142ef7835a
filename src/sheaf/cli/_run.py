"""``sheaf run DIR``: run (or resume) a planned workflow on the embedded engine and the local pool.

Thin: parse options, call :func:`run_planned` (one library call), render progress and a summary.
A terminal gets a rich progress bar (done/failed/running, ETA); anything else gets one plain line
per second.  Exit codes (``_exit``): 0 the workflow succeeded, 1 it ran and failed (rescue DAG
 kept) or stopped because a file could not be written (disk full: the journal stays consistent, the
 jobs are stopped, ``sheaf run`` again resumes), 2 bad input or usage (including a second
 ``sheaf run`` on the same DAG, and a journal damaged where it could hide a finished node); an
 ``ABORT-DAG-ON ... RETURN r`` exits with r, as DAGMan does.

``sheaf plan --submit`` calls :func:`run_planned` too.  However the run ends, podman's run root of the
plan's containers is removed once no container task holds it (``sheaf.aggregators.container``), and
DAGMan's progress lines go to ``<dag>.dagman.out`` for Pegasus's tools (``_dagman_out``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from sheaf.backends._registry import BACKENDS, make_backend
from sheaf.cli import _exit
from sheaf.cli._dagman_out import DagmanOut, find_dag_path
from sheaf.codegen import remove_stale_siblings
from sheaf.codegen._container_state import CONF_DIR, RUN_ROOT_LOCK, podman_env, run_root
from sheaf.engine import Backend, RunResult, find_dag, run_workflow
from sheaf.engine import Progress as EngineProgress
from sheaf.errors import UsageError
from sheaf.monitor import EventsLoader, events_enabled

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command", "render_summary", "run_planned"]


def run_planned(directory: str, *, dag_file: str | Sequence[str] | None = None,
                maxjobs: int | None = None, maxidle: int | None = None, maxpre: int | None = None,
                maxpost: int | None = None,
                pool_config: str | None = None, priority: int | None = None,
                on_progress: Callable[[EngineProgress], None] | None = None,
                backend_name: str = "local", scheduler: str | None = None,
                grid_policy: object | None = None, grid_interval: float = 1.0,
                always_run_post: bool | None = None, batch_name: str | None = None,
                suppress_notification: bool | None = None) -> RunResult:
    """Run the planned workflow in ``directory`` on the backend named ``backend_name`` (``_registry``;
    the local pool from ``pool_config``, a Dask cluster at ``scheduler``, Slurm); jobs whose site asks
    for a batch system (``grid_resource = batch slurm``) go there whatever ``backend_name`` is.  A
    directory that ``sheaf plan --group-size`` wrote runs on the grid backend: its group DAG jobs are
    matched to the collector's site ads (``grid_policy``: a ``BackOut``; ``grid_interval``: seconds
    between cycles).  ``always_run_post`` (None: the DAG's ``DAGMAN_ALWAYS_RUN_POST``) and
    ``batch_name`` (None: DAGMan's default) are condor_submit_dag's ``-[Dont]AlwaysRunPost`` and
    ``-batch-name``; ``suppress_notification`` (None: ``DAGMAN_SUPPRESS_NOTIFICATION``) its
    ``-[dont_]suppress_notification``."""

    def backend() -> Backend:
        if _is_grid_plan(directory):
            return _grid_backend(directory, pool_config, grid_policy, grid_interval)
        made: Backend = make_backend(backend_name, directory=os.path.abspath(directory),
                                     pool_config=pool_config, scheduler=scheduler, env=dict(os.environ))
        return made

    remove_stale_siblings(directory)  # what an interrupted `sheaf plan` into it left
    dag_path = _dag_path(directory, dag_file)
    record = DagmanOut(dag_path) if dag_path else None
    status = 1
    loader = _events_loader(directory, dag_file)
    removed = False  # a stopped run exits without the events loader's last catch-up
    try:
        result = run_workflow(directory, backend=backend, dag_file=dag_file, maxjobs=maxjobs,
                              maxidle=maxidle, maxpre=maxpre, maxpost=maxpost,
                              on_progress=_both(on_progress, record), priority=priority, on_warning=_warn,
                              always_run_post=always_run_post, batch_name=batch_name,
                              suppress_notification=suppress_notification)
        status = 0 if result.succeeded else (result.exit_code or 1)
        removed = result.removed
        return result
    finally:
        if loader is not None:
            loader.stop(catch_up=not removed)
        if record is not None:
            record.finish(status)
        _release_container_state(directory)


def _dag_path(directory: str, dag_file: str | Sequence[str] | None) -> str | None:
    """The DAG whose ``.dagman.out`` this run writes: the one named (the first of several, after which
    DAGMan names its file), else the one in DIR."""
    first = dag_file if isinstance(dag_file, str) else (dag_file[0] if dag_file else None)
    if first:
        return first if os.path.isabs(first) else os.path.join(directory, first)
    return find_dag_path(directory)


def _both(first: Callable[[EngineProgress], None] | None,
          second: Callable[[EngineProgress], None] | None) -> Callable[[EngineProgress], None] | None:
    callbacks = [callback for callback in (first, second) if callback is not None]
    if len(callbacks) < 2:
        return callbacks[0] if callbacks else None

    def both(progress: EngineProgress) -> None:
        for callback in callbacks:
            callback(progress)
    return both


def _release_container_state(directory: str) -> None:
    """The containers a stopped run left and podman's run root of the plan's containers, once no
    container task holds it: the engine kills the jobs it stops (SIGKILL to their process groups),
    which leaves their containers running under conmon (``sheaf.aggregators.container``)."""
    state = os.path.join(directory, CONF_DIR)
    lock = os.path.join(state, RUN_ROOT_LOCK)
    if os.path.exists(lock):
        # imported here: a plan without containers (most) need not load it, nor urllib (~35 ms a run)
        from sheaf.aggregators.container import remove_leftover_containers

        remove_leftover_containers(lock, run_root(state), podman_env(state))


def _events_loader(directory: str, dag_file: str | Sequence[str] | None) -> EventsLoader | None:
    """The events database's loader beside the engine (``sheaf.monitor``), unless SHEAF_EVENTS=0;
    a directory without a DAG gets none (run_workflow reports it)."""
    if not events_enabled():
        return None
    first = dag_file if isinstance(dag_file, str) or dag_file is None else (dag_file[0] if dag_file else None)
    try:
        dag = find_dag(directory, first)
    except UsageError:
        return None
    return EventsLoader(dag, on_warning=_warn).start()


def _is_grid_plan(directory: str) -> bool:
    """A directory ``sheaf plan --group-size`` wrote (checked without importing the grid backend)."""
    return os.path.isfile(os.path.join(directory, "grid", "groups.json"))


def _backout(idle: float) -> object:
    from sheaf.backends.grid import BackOut

    return BackOut(idle=idle)


def _grid_backend(directory: str, pool_config: str | None, policy: object | None, interval: float) -> Backend:
    from sheaf.backends._slotconfig import load_config
    from sheaf.backends.grid import BackOut, GridBackend, plan_collector

    return GridBackend(plan_collector(directory), policy=policy if isinstance(policy, BackOut) else None,
                       interval=interval, config=load_config(pool_config))


def _warn(text: str) -> None:
    click.echo(f"sheaf: warning: {text}", err=True)


#: what rich reads to decide a terminal beside stdout itself (``Console.is_terminal``; TTY_INTERACTIVE
#: in ``Console.__init__``): with none of them set, no tty on stdout means no terminal for rich either
_RICH_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def _plain_stdout() -> bool:
    """Whether rich's Console would find no terminal on stdout, told without importing rich."""
    if any(name in os.environ for name in _RICH_TERMINAL_VARIABLES):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return isatty is None or not isatty()
    except ValueError:  # a closed stream: no terminal (as rich says)
        return True


def _rich_console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=True)


class _PlainProgress:
    """A line a second, written as it is: rich printed it to a non-terminal unchanged (no markup, no
    emoji code, no wrapping), and without rich the run's start-up does not import rich.console (~11 ms,
    a tenth of the imports before the first job); the summary imports it once the run is over."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, p: EngineProgress) -> None:
        now = time.monotonic()
        if not p.finished and now - self.last < 1.0:
            return
        self.last = now
        click.echo(f"[{p.elapsed:7.1f}s] done {p.done}/{p.total}  failed {p.failed}  "
                   f"running {p.running}  retries {p.retries}")


class _BarProgress:
    def __init__(self, console: Console) -> None:
        # imported here: only a terminal gets the bar, and rich.progress is a third of start-up's imports
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("[bold]sheaf run"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("failed {task.fields[failed]}  running {task.fields[running]}"),
                            TimeRemainingColumn(), console=console, transient=False)
        self.task = self.bar.add_task("run", total=None, failed=0, running=0)
        self.bar.start()

    def __call__(self, p: EngineProgress) -> None:
        self.bar.update(self.task, total=p.total, completed=p.done, failed=p.failed, running=p.running)

    def stop(self) -> None:
        self.bar.stop()


def render_summary(result: RunResult, console: Console) -> None:
    outcome = "[green]succeeded[/]" if result.succeeded else "[red]FAILED[/]"
    if result.source == "complete":
        console.print(f"workflow {result.dag}: already complete, nothing to run")
        return
    if result.source == "stopped":  # a stop before any node started: nothing was run or written
        console.print(f"workflow {result.dag}: removed ({result.extra.get('stopped')}) before any node "
                      "started; nothing was run", highlight=False)
        return
    console.print(f"workflow {outcome}: {result.done} of {result.total} nodes done, {result.failed} failed, "
                  f"{result.retries} retries; wall time {result.wall_time:.1f}s, "
                  f"cumulative job time {result.job_time:.1f}s (started from: {result.source})")
    for name, reason in result.failed_nodes[:20]:
        console.print(f"  failed: {name}: {reason or 'unknown'}", highlight=False)
    if len(result.failed_nodes) > 20:
        console.print(f"  ... and {len(result.failed_nodes) - 20} more (sheaf status shows all)")
    if result.rescue:
        console.print(f"rescue DAG: {result.rescue}; run `sheaf run` again to continue from it")


@click.command(name="run")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--dag", "dag_files", multiple=True,
              help="The DAG file, when DIRECTORY holds more than one *.dag; repeated, several DAG files run "
                   "as one DAG (as condor_submit_dag a.dag b.dag), the first naming the run.")
@click.option("--maxjobs", type=int, help="At most N node jobs submitted at once (0 = no limit).")
@click.option("--maxidle", type=int, help="No new submissions while N jobs wait for a slot.")
@click.option("--maxpre", type=int, help="At most N PRE scripts at once.")
@click.option("--maxpost", type=int, help="At most N POST scripts at once.")
@click.option("--pool-config", type=click.Path(exists=True, dir_okay=False),
              help="Local pool configuration (HTCondor knobs: NUM_CPUS, MEMORY, SLOT_TYPE_N, ...).")
@click.option("--priority", type=int, help="The DAG's priority, added to every node's "
              "(condor_submit_dag -priority; default DAGMAN_DEFAULT_PRIORITY).")
@click.option("--always-run-post/--dont-always-run-post", default=None,
              help="Run a node's POST script even when its PRE script failed, or not (condor_submit_dag "
                   "-AlwaysRunPost/-DontAlwaysRunPost; default DAGMAN_ALWAYS_RUN_POST, else not).")
@click.option("--batch-name", help="Every node job's JobBatchName, a SUBDAG's too (condor_submit_dag "
              "-batch-name; default <primary DAG file>+<DAGManJobId>; a node's batch_name wins).")
@click.option("--suppress-notification/--dont-suppress-notification", default=None,
              help="Node jobs send no e-mail (notification = NEVER), a SUBDAG's too, or as their submit "
                   "files say (condor_submit_dag -[dont_]suppress_notification; default "
                   "DAGMAN_SUPPRESS_NOTIFICATION, else as the files say).")
@click.option("--backend", "backend_name", type=click.Choice(sorted(BACKENDS)), default="local",
              show_default=True,
              help="Where jobs run: this machine's pool, a Dask cluster, Slurm, or (htcondor) the whole "
                   "DAG handed to DAGMan on the HTCondor pool whose schedd is reachable.  A site whose "
                   "jobs say grid_resource = batch slurm goes to Slurm whatever this says.")
@click.option("--negotiation-interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Grid plans: seconds between negotiation cycles (and matchmaker monitor passes).")
@click.option("--backout-idle", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Grid plans: back out of a site where a group made no progress for this many seconds.")
@click.option("--scheduler", help="--backend dask: the scheduler's address (default: a LocalCluster "
              "started and closed by the run).")
def command(directory: str, dag_files: tuple[str, ...], maxjobs: int | None, maxidle: int | None,
            maxpre: int | None, maxpost: int | None, pool_config: str | None, priority: int | None,
            backend_name: str, scheduler: str | None, negotiation_interval: float,
            backout_idle: float, always_run_post: bool | None, batch_name: str | None,
            suppress_notification: bool | None) -> None:
    """Run (or resume) the planned workflow in DIRECTORY on this machine (or --backend)."""
    if backend_name == "htcondor":
        _hand_to_dagman(directory, dag_files, _rich_console(), dagman_options(
            MaxJobs=maxjobs, MaxIdle=maxidle, MaxPre=maxpre, MaxPost=maxpost, Priority=priority,
            PostRun=always_run_post, BatchName=batch_name, SuppressNotification=suppress_notification))
        return
    console = None if _plain_stdout() else _rich_console()
    bar = _BarProgress(console) if console is not None and console.is_terminal else None
    progress = bar if bar is not None else _PlainProgress()
    try:
        result = run_planned(directory, dag_file=list(dag_files) or None, maxjobs=maxjobs, maxidle=maxidle,
                             maxpre=maxpre, maxpost=maxpost, pool_config=pool_config, priority=priority,
                             on_progress=progress, backend_name=backend_name, scheduler=scheduler,
                             grid_policy=_backout(backout_idle) if _is_grid_plan(directory) else None,
                             grid_interval=negotiation_interval, always_run_post=always_run_post,
                             batch_name=batch_name, suppress_notification=suppress_notification)
    finally:
        if bar is not None:
            bar.stop()
    render_summary(result, console or _rich_console())
    sys.exit(_exit.of_run(result.succeeded, result.exit_code))


def dagman_options(**given: int | bool | str | None) -> dict[str, int | bool | str]:
    """condor_submit_dag's options (``htcondor2.Submit.from_dag``'s names) of those given."""
    return {key: value for key, value in given.items() if value is not None}


def _hand_to_dagman(directory: str, dag_files: Sequence[str], console: Console,
                    options: dict[str, int | bool | str]) -> None:
    """``--backend htcondor``: DAGMan runs the DAG on the pool (``sheaf.backends.htcondor``), with the
    command line's condor_submit_dag options."""
    done = BACKENDS["htcondor"]().submit_dag(directory, dag_files, options=options)
    console.print(f"DAG {done.dag} handed to DAGMan: job {done.cluster} (submit file {done.submit_file}); "
                  "follow it with condor_q -dag or sheaf status", highlight=False)
