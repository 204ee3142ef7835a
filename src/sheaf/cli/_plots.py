"""``sheaf plots DIR [--output DIR]``: pegasus-plots' charts of a run, from its events databases.

Thin: :func:`sheaf.monitor.write_plots` draws, this prints the files written (PNG, and one
self-contained HTML file that works offline).  Exit 0; 2 when DIR holds no run.
"""

from __future__ import annotations

import click

from sheaf.monitor import write_plots

__all__ = ["command"]


@click.command(name="plots")
@click.argument("directory")
@click.option("--dag", "dag_file", help="The DAG file, when DIRECTORY holds more than one *.dag.")
@click.option("-o", "--output", help="Where to write the files (default: DIRECTORY/plots).")
def command(directory: str, dag_file: str | None, output: str | None) -> None:
    """Gantt chart, slots in use and time per transformation of the run in DIRECTORY."""
    for path in write_plots(directory, dag_file, output):
        click.echo(path)
