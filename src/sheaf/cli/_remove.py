"""``sheaf remove DIR``: stop the workflow running in DIR, as pegasus-remove (``condor_rm`` of DAGMan).

Sends SIGTERM (``sheaf.app.stop``) to the engine that ``sheaf plan --submit`` (or the ``pegasus-run``
shim) started in the background, or to the ``sheaf run`` of the directory or DAG file started in a
terminal, or to the Python process running it with ``sheaf.app.run``: the engine cancels the running
jobs, runs the FINAL node and records the run as failed, so ``sheaf run DIR`` can resume it later.
Nothing running there is a usage error (exit 2).
"""

from __future__ import annotations

import click

from sheaf import app

__all__ = ["command"]


@click.command(name="remove")
@click.argument("directory", type=click.Path(exists=True))
def command(directory: str) -> None:
    """Stop the workflow running in DIRECTORY, or of the DAG file DIRECTORY (its FINAL node still runs)."""
    pid = app.stop(directory)
    click.echo(f"stopping the workflow in {directory} (SIGTERM to its engine, pid {pid})")
