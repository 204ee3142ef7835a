"""``sheaf status DIR``: counts per node state and the failed nodes with their reasons.

Reads the engine's journal (append-only, complete lines only), so it is safe while ``sheaf run``
writes it.  Exit code 0 whatever the workflow's state; 2 when DIR has no DAG or no journal -- except
in the moment between ``sheaf plan --submit`` starting the engine and its first journal record,
which is reported as ``starting``.
"""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from sheaf.cli import _detach
from sheaf.errors import UsageError
from sheaf.monitor import workflow_status

__all__ = ["command"]

_ORDER = ("done", "failed", "futile", "submitted", "pre", "post", "ready", "pre_ready", "post_ready",
          "pre_deferred", "post_deferred", "waiting")


@click.command(name="status")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--dag", "dag_file", help="The DAG file, when DIRECTORY holds more than one *.dag.")
def command(directory: str, dag_file: str | None) -> None:
    """Show the state of the workflow in DIRECTORY (running or finished)."""
    try:
        status = workflow_status(directory, dag_file)
    except UsageError:
        pid = _detach.running(directory)
        if pid is None:
            raise
        click.echo(f"workflow in {directory}: starting (sheaf run, pid {pid})")
        return
    for damage in status.damage:
        click.echo(f"sheaf: warning: {damage} (skipped; the counts below may miss what it said)", err=True)
    console = Console(soft_wrap=True)
    elapsed = f", {status.elapsed:.1f}s in the latest run" if status.elapsed is not None else ""
    console.print(f"workflow {status.dag}: [bold]{status.state}[/] ({status.runs} engine run(s), "
                  f"{status.retries} retries{elapsed})", highlight=False)
    table = Table("state", "nodes")
    for state in _ORDER:
        if status.counts.get(state):
            table.add_row(state, str(status.counts[state]))
    table.add_row("[bold]total", str(status.total))
    console.print(table)
    for name, reason in status.failed:
        console.print(f"failed: {name}: {reason or 'unknown'}", highlight=False)
    if status.rescue:
        console.print(f"rescue DAG: {status.rescue}")
