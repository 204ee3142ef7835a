"""``sheaf run DIR``: run (or resume) a planned workflow -- parse, call ``sheaf.app.run``, render.

A terminal gets a rich progress bar (done/failed/running, ETA); anything else gets one plain line
per second.  Exit codes (``_exit``): 0 the workflow succeeded, 1 it ran and failed (rescue DAG
kept) or stopped because a file could not be written (disk full: the journal stays consistent, the
jobs are stopped, ``sheaf run`` again resumes), 2 bad input or usage (including a second
``sheaf run`` on the same DAG, and a journal damaged where it could hide a finished node); an
``ABORT-DAG-ON ... RETURN r`` exits with r, as DAGMan does.  ``--backend htcondor`` hands the DAG to
DAGMan on a pool (``sheaf.app.hand_to_dagman``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from sheaf.app import RunOptions, hand_to_dagman, run
from sheaf.backends import BACKENDS
from sheaf.cli import _exit
from sheaf.engine import DagmanOptions, RunResult
from sheaf.engine import Progress as EngineProgress

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command", "render_summary"]


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
    emoji code, no wrapping), and without rich the run's start-up does not import rich.console, a
    large share of the imports before the first job; the summary imports it once the run is over."""

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
    """The run's outcome; names, reasons and paths are printed as text (a ``[...]`` in them is no markup)."""
    outcome = "[green]succeeded[/]" if result.succeeded else "[red]FAILED[/]"
    dag = escape(str(result.dag))
    if result.source == "complete":
        console.print(f"workflow {dag}: already complete, nothing to run")
        return
    if result.source == "stopped":  # a stop before any node started: nothing was run or written
        console.print(f"workflow {dag}: removed ({escape(str(result.extra.get('stopped')))}) before any node "
                      "started; nothing was run", highlight=False)
        return
    console.print(f"workflow {outcome}: {result.done} of {result.total} nodes done, {result.failed} failed, "
                  f"{result.retries} retries; wall time {result.wall_time:.1f}s, "
                  f"cumulative job time {result.job_time:.1f}s (started from: {result.source})")
    if result.aborted:
        console.print("  aborted by ABORT-DAG-ON", highlight=False)
    if result.extra.get("cycle"):
        cycle = escape(str(result.extra["cycle"]))
        console.print(f"  nodes left waiting: a cycle exists in the DAG: {cycle}", highlight=False)
    for name, reason in result.failed_nodes[:20]:
        console.print(f"  failed: {escape(name)}: {escape(reason or 'unknown')}", highlight=False)
    if len(result.failed_nodes) > 20:
        console.print(f"  ... and {len(result.failed_nodes) - 20} more (sheaf status shows all)")
    if result.rescue:
        console.print(f"rescue DAG: {escape(str(result.rescue))}; run `sheaf run` again to continue from it")


#: condor_submit_dag's options (lower case) that sheaf run has, by its spelling of them
_DAGMAN_SPELLINGS = {
    "-maxjobs": "--maxjobs", "-maxj": "--maxjobs", "-maxidle": "--maxidle", "-maxi": "--maxidle",
    "-maxpre": "--maxpre", "-maxpr": "--maxpre", "-maxpost": "--maxpost", "-maxpo": "--maxpost",
    "-priority": "--priority", "-usedagdir": "--usedagdir", "-batch-name": "--batch-name",
    "-alwaysrunpost": "--always-run-post", "-dontalwaysrunpost": "--dont-always-run-post",
    "-suppress_notification": "--suppress-notification",
    "-dont_suppress_notification": "--dont-suppress-notification", "-f": "--force", "-force": "--force",
    "-autorescue": "--auto-rescue", "-dorescuefrom": "--do-rescue-from", "-rescuefile": "--rescue-file",
    "-load_save": "--load-save", "-dorecovery": "--recovery", "-verbose": "--verbose", "-v": "--verbose",
    "-help": "--help",
}
#: condor_submit_dag's options that sheaf run does not have (refused by name)
_DAGMAN_UNSUPPORTED = frozenset({
    "-outfile_dir", "-config", "-dagman",
    "-debug", "-no_submit", "-no_recurse", "-do_recurse", "-update_submit", "-import_env",
    "-include_env", "-insert_env", "-insert_sub_file", "-append", "-allowversionmismatch",
    "-notification", "-schedd-daemon-ad-file", "-schedd-address-file", "-sub_file",
    "-maxhold", "-lockfile", "-submitmethod", "-valgrind", "-version",
})


class _RunCommand(click.Command):
    """``sheaf run`` reading condor_submit_dag's spellings too: ``-maxjobs 2``, ``-MaxJobs 2``, several
    DAG files (``sheaf run a.dag b.dag``); one of its options sheaf run lacks is refused by name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        valued = {name for param in self.params if isinstance(param, click.Option) and not param.is_flag
                  for name in param.opts}
        out: list[str] = []
        files = 0
        for word in args:
            low = word.lower()
            if out and out[-1] in valued:  # an option's value (--dag x.dag), whatever it looks like
                out.append(word)
            elif low in _DAGMAN_SPELLINGS:
                out.append(_DAGMAN_SPELLINGS[low])
            elif low in _DAGMAN_UNSUPPORTED:
                raise click.UsageError(f"condor_submit_dag option {word} is not supported by sheaf run "
                                       "(sheaf run --help lists what it has)", ctx)
            elif not word.startswith("-") and word.endswith(".dag") and os.path.isfile(word):
                files += 1
                out += [word] if files == 1 else ["--dag", word]  # as condor_submit_dag a.dag b.dag
            else:
                out.append(word)
        return super().parse_args(ctx, out)


@click.command(name="run", cls=_RunCommand)
@click.argument("directory", type=click.Path(exists=True))
@click.option("--dag", "dag_files", multiple=True,
              help="The DAG file, when DIRECTORY holds more than one *.dag; repeated, several DAG files run "
                   "as one DAG (as condor_submit_dag a.dag b.dag), the first naming the run.")
@click.option("--usedagdir", is_flag=True,
              help="Each DAG file's relative paths (submit files, DIR, scripts) start from its own "
                   "directory, where its nodes run (condor_submit_dag -usedagdir); else from DIRECTORY.")
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
@click.option("--force", is_flag=True,
              help="Rename the rescue DAGs <dag>.rescueNNN.old and run the original DAG (condor_submit_dag "
                   "-force).")
@click.option("--auto-rescue", type=click.IntRange(0, 1), default=None,
              help="1: start from the newest rescue DAG, 0: from the original DAG (condor_submit_dag "
                   "-AutoRescue; default DAGMAN_AUTO_RESCUE, else 1).")
@click.option("--do-rescue-from", type=click.IntRange(min=1), default=None,
              help="Start from rescue DAG N; the later ones are renamed .old (condor_submit_dag "
                   "-DoRescueFrom).")
@click.option("--rescue-file", help="Start from this rescue DAG file (a relative name from DIRECTORY); the "
              "rescue DAGs numbered after it (all, when its name has no number) are renamed .old "
              "(condor_submit_dag -RescueFile).")
@click.option("--load-save", help="Start from this save point file (SAVE_POINT_FILE): a bare name is "
              "found in save_files/ beside the DAG, a path from the DAG's directory (condor_submit_dag "
              "-load_save).")
@click.option("--recovery", is_flag=True, help="Start as after a killed run: the nodes the DAG's last run "
              "finished are done, whether it ended or not (condor_submit_dag -DoRecovery).")
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
@click.option("--verbose", is_flag=True, help="condor_submit_dag's -verbose (-v), its error messages in "
              "full: sheaf run's always are, so it changes nothing.")
def command(directory: str, dag_files: tuple[str, ...], maxjobs: int | None, maxidle: int | None,
            maxpre: int | None, maxpost: int | None, pool_config: str | None, priority: int | None,
            backend_name: str, scheduler: str | None, negotiation_interval: float,
            backout_idle: float, always_run_post: bool | None, batch_name: str | None,
            suppress_notification: bool | None, usedagdir: bool, force: bool, auto_rescue: int | None,
            do_rescue_from: int | None, rescue_file: str | None, load_save: str | None,
            recovery: bool, verbose: bool) -> None:
    """Run (or resume) the planned workflow in DIRECTORY on this machine (or --backend).  DIRECTORY may
    be a DAG file instead: it runs from the current directory, as condor_submit_dag FILE does."""
    options = RunOptions(DagmanOptions(tuple(dag_files), maxjobs, maxidle, maxpre, maxpost, priority,
                                       always_run_post, batch_name, suppress_notification, usedagdir,
                                       force=force, rescue_from=do_rescue_from, rescue_file=rescue_file,
                                       load_save=load_save, recovery=recovery,
                                       auto_rescue=None if auto_rescue is None else bool(auto_rescue)),
                         backend_name, pool_config, scheduler, negotiation_interval, backout_idle)
    if backend_name == "htcondor":
        done = hand_to_dagman(directory, options)
        _rich_console().print(f"DAG {done.dag} handed to DAGMan: job {done.cluster} (submit file "
                              f"{done.submit_file}); follow it with condor_q -dag or sheaf status",
                              highlight=False)
        return
    console = None if _plain_stdout() else _rich_console()
    bar = _BarProgress(console) if console is not None and console.is_terminal else None
    try:
        result = run(directory, options, on_progress=bar if bar is not None else _PlainProgress(),
                     on_warning=_warn)
    finally:
        if bar is not None:
            bar.stop()
    render_summary(result, console or _rich_console())
    sys.exit(_exit.of_run(result.succeeded, result.exit_code, result.removed))
