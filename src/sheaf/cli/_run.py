"""``sheaf run DIR``: run (or resume) a planned workflow on the embedded engine and the local pool.

Thin: parse options, call :func:`run_planned` (one library call), render progress and a summary.
A terminal gets a rich progress bar (done/failed/running, ETA); anything else gets one plain line
per second.  Exit codes (``_exit``): 0 the workflow succeeded, 1 it ran and failed (rescue DAG
 kept) or stopped because a file could not be written (disk full: the journal stays consistent, the
 jobs are stopped, ``sheaf run`` again resumes), 2 bad input or usage (including a second
 ``sheaf run`` on the same DAG, and a journal damaged where it could hide a finished node); an
 ``ABORT-DAG-ON ... RETURN r`` exits with r, as DAGMan does.

``sheaf plan --submit`` calls :func:`run_planned` too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from sheaf.backends import Pool
from sheaf.backends._slotconfig import load_config
from sheaf.backends.grid import BackOut, GridBackend, is_grid_plan, plan_collector
from sheaf.backends.local import LocalBackend
from sheaf.cli import _exit
from sheaf.codegen import remove_stale_siblings
from sheaf.engine import Backend, RunResult, run_workflow
from sheaf.engine import Progress as EngineProgress

__all__ = ["command", "render_summary", "run_planned"]


def run_planned(directory: str, *, dag_file: str | Sequence[str] | None = None,
                maxjobs: int | None = None, maxidle: int | None = None, maxpre: int | None = None,
                maxpost: int | None = None,
                pool_config: str | None = None, priority: int | None = None,
                on_progress: Callable[[EngineProgress], None] | None = None,
                grid_policy: BackOut | None = None, grid_interval: float = 1.0) -> RunResult:
    """Run the planned workflow in ``directory`` on a :class:`LocalBackend` (pool from ``pool_config``)."""

    def backend() -> Backend:
        if is_grid_plan(directory):  # sheaf plan --group-size: group DAG jobs matched to grid sites
            return GridBackend(plan_collector(directory), policy=grid_policy, interval=grid_interval,
                               config=load_config(pool_config))
        return LocalBackend(Pool.from_config(pool_config))

    remove_stale_siblings(directory)  # what an interrupted `sheaf plan` into it left

    return run_workflow(directory, backend=backend, dag_file=dag_file, maxjobs=maxjobs, maxidle=maxidle,
                        maxpre=maxpre, maxpost=maxpost, on_progress=on_progress, priority=priority,
                        on_warning=_warn)


def _warn(text: str) -> None:
    click.echo(f"sheaf: warning: {text}", err=True)


class _PlainProgress:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.last = 0.0

    def __call__(self, p: EngineProgress) -> None:
        now = time.monotonic()
        if not p.finished and now - self.last < 1.0:
            return
        self.last = now
        self.console.print(f"[{p.elapsed:7.1f}s] done {p.done}/{p.total}  failed {p.failed}  "
                           f"running {p.running}  retries {p.retries}", highlight=False)


class _BarProgress:
    def __init__(self, console: Console) -> None:
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
@click.option("--negotiation-interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Grid plans: seconds between negotiation cycles (and matchmaker monitor passes).")
@click.option("--backout-idle", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Grid plans: back out of a site where a group made no progress for this many seconds.")
def command(directory: str, dag_files: tuple[str, ...], maxjobs: int | None, maxidle: int | None,
            maxpre: int | None, maxpost: int | None, pool_config: str | None, priority: int | None,
            negotiation_interval: float, backout_idle: float) -> None:
    """Run (or resume) the planned workflow in DIRECTORY on this machine."""
    console = Console(soft_wrap=True)
    bar = _BarProgress(console) if console.is_terminal else None
    progress = bar if bar is not None else _PlainProgress(console)
    try:
        result = run_planned(directory, dag_file=list(dag_files) or None, maxjobs=maxjobs, maxidle=maxidle,
                             maxpre=maxpre, maxpost=maxpost, pool_config=pool_config, priority=priority,
                             on_progress=progress, grid_policy=BackOut(idle=backout_idle),
                             grid_interval=negotiation_interval)
    finally:
        if bar is not None:
            bar.stop()
    render_summary(result, console)
    sys.exit(_exit.of_run(result.succeeded, result.exit_code))
