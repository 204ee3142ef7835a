"""``sheaf status DIR [-l] [--watch]``: counts per node state and the failed nodes with their reasons.

Reads the run's events database (``sheaf.monitor``), caught up with the journal first, so it is
safe while ``sheaf run`` writes it and correct after a kill -9.  ``-l`` adds pegasus-status's long
view: the tree of sub-workflows with each one's counts, the jobs running now, and held jobs with
their reasons.  ``--watch`` redraws every ``--interval`` seconds until the run ends (Ctrl-C stops
watching, not the run).  Exit code 0 whatever the workflow's state; 2 when DIR has no DAG or no
journal -- except in the moment between ``sheaf plan --submit`` starting the engine and its first
journal record, which is reported as ``starting``.
"""

from __future__ import annotations

import os
import time

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sheaf import app
from sheaf.errors import UsageError
from sheaf.monitor import SubStatus, WorkflowStatus, age, sub_workflows, workflow_status

__all__ = ["command"]

_ORDER = ("done", "failed", "futile", "submitted", "pre", "post", "ready", "pre_ready", "post_ready",
          "pre_deferred", "post_deferred", "waiting")
_FINISHED = ("succeeded", "failed", "interrupted")


def _headline(status: WorkflowStatus) -> Text:
    elapsed = f", {status.elapsed:.1f}s in the latest run" if status.elapsed is not None else ""
    return Text.from_markup(f"workflow {status.dag}: [bold]{status.state}[/] ({status.runs} engine run(s), "
                            f"{status.retries} retries{elapsed})")


def _counts(status: WorkflowStatus) -> Table:
    table = Table("state", "nodes")
    for state in _ORDER:
        if status.counts.get(state):
            table.add_row(state, str(status.counts[state]))
    table.add_row("[bold]total", str(status.total))
    return table


def _tail(status: WorkflowStatus) -> list[Text]:
    out = [Text(f"failed: {name}: {reason or 'unknown'}") for name, reason in status.failed]
    if status.rescue:
        out.append(Text(f"rescue DAG: {os.path.basename(status.rescue)}"))
    return out


def _tree(status: WorkflowStatus, subs: list[SubStatus]) -> Table:
    """pegasus-status -l's table: each (sub-)workflow with its counts, indented by depth."""
    table = Table("workflow", "state", "done", "failed", "running", "waiting", "total", "%",
                  title="workflows")
    table.columns[0].overflow = "fold"
    top = os.path.basename(status.dag)  # the headline names it in full
    for depth, name, st in [(0, top, status), *((s.depth, s.node, s.status) for s in subs)]:
        running = sum(st.counts.get(k, 0) for k in ("submitted", "pre", "post"))
        pct = f"{100.0 * st.counts.get('done', 0) / (st.total or 1):.1f}"
        table.add_row("  " * depth + ("↳ " if depth else "") + name, st.state, str(st.counts.get("done", 0)),
                      str(st.counts.get("failed", 0)), str(running), str(st.counts.get("waiting", 0)),
                      str(st.total), pct)
    return table


def _long(status: WorkflowStatus, subs: list[SubStatus]) -> list[Table | Text]:
    out: list[Table | Text] = [_tree(status, subs)]
    running = Table("job", "try", "id", "host/slot", "running for",
                    title=f"running now ({len(status.running)})")
    for r in status.running:
        running.add_row(r.node, str(r.attempt + 1), r.sched_id or "-", r.where or "-", age(r.since))
    out.append(running)
    if status.held:
        held = Table("job", "hold reason", title=f"held ({len(status.held)})")
        for node, reason in status.held:
            held.add_row(node, reason)
        out.append(held)
    return out


def _view(directory: str, dag_file: str | None, long: bool) -> tuple[WorkflowStatus, Group]:
    status = workflow_status(directory, dag_file)
    parts: list[Table | Text] = [_headline(status), _counts(status), *_tail(status)]
    if long:
        parts += _long(status, sub_workflows(directory, dag_file))
    return status, Group(*parts)


@click.command(name="status")
@click.argument("directory")
@click.option("--dag", "dag_file", help="The DAG file, when DIRECTORY holds more than one *.dag.")
@click.option("-l", "--long", "long", is_flag=True,
              help="Also the sub-workflows' tree, the jobs running now and held jobs (pegasus-status -l).")
@click.option("-w", "--watch", is_flag=True, help="Redraw until the workflow ends.")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              help="Seconds between redraws with --watch.")
def command(directory: str, dag_file: str | None, long: bool, watch: bool, interval: float) -> None:
    """Show the state of the workflow in DIRECTORY (running or finished)."""
    try:
        status, view = _view(directory, dag_file, long)
    except UsageError:
        pid = app.running(directory)
        if pid is None:
            raise
        click.echo(f"workflow in {directory}: starting (sheaf run, pid {pid})")
        return
    for damage in status.damage:
        click.echo(f"sheaf: warning: {damage} (skipped; the counts below may miss what it said)", err=True)
    console = Console(soft_wrap=True, highlight=False)
    if not watch:
        console.print(view)
        return
    try:
        with Live(view, console=console, auto_refresh=False) as live:
            while status.state not in _FINISHED:
                time.sleep(interval)
                status, view = _view(directory, dag_file, long)
                live.update(view, refresh=True)
    except KeyboardInterrupt:
        pass
