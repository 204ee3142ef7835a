"""``sheaf validate``: load a workflow with its properties and catalogs, check it, print a summary.

Thin by design: ``sheaf.formats.load_inputs`` finds and reads everything (catalog discovery as in
the command-line contract (``docs/command-line.md``)), ``sheaf.formats.validate_inputs`` runs the model's
rules and locates an
error in the files; this module only renders.  Warnings go to stderr, the summary to stdout (a rich
table on a terminal, plain ``key: value`` lines otherwise).  Bad input is an ``InputError`` that the
group's error boundary (``_app.py``) prints as one line with exit code 2.
"""

from __future__ import annotations

import sys

import click

from sheaf import app
from sheaf.formats import Inputs, load_inputs, validate_inputs
from sheaf.model import Summary


@click.command("validate")
@click.argument("workflow", type=click.Path(dir_okay=False))
@click.option("-c", "--conf", type=click.Path(dir_okay=False),
              help="Properties file (over ./pegasus.properties).")
@click.option("-D", "defines", multiple=True, metavar="KEY=VALUE", help="Set a property (over --conf).")
@click.option("--tc", type=click.Path(dir_okay=False), help="Transformation catalog (YAML or text).")
@click.option("--sc", type=click.Path(dir_okay=False), help="Site catalog (YAML or XML).")
@click.option("--rc", type=click.Path(dir_okay=False), help="Replica catalog (YAML or text).")
def command(workflow: str, conf: str | None, defines: tuple[str, ...], tc: str | None, sc: str | None,
            rc: str | None) -> None:
    """Check WORKFLOW (Pegasus 5.0 YAML, DAX 3 or WfCommons JSON) and print a summary."""
    warnings: list[str] = []
    try:
        inputs = load_inputs(workflow, conf=conf, defines=defines, tc=tc, sc=sc, rc=rc,
                             env_defaults=app.pegasus_variables())
        warnings = inputs.warnings
        _, _, summary = validate_inputs(inputs)
    finally:
        for warning in warnings:
            click.echo(f"sheaf: warning: {warning}", err=True)
    _render(summary, inputs)


def _rows(summary: Summary, inputs: Inputs) -> list[tuple[str, str]]:
    rows = [
        ("workflow", summary.name),
        ("jobs", f"{summary.jobs} ({summary.compute_jobs} compute, {summary.subworkflow_jobs} sub-workflow)"),
        ("files", str(summary.files)),
        ("edges", str(summary.edges)),
        ("levels", str(summary.levels)),
        ("transformations", str(summary.transformations)),
        ("sites", ", ".join(summary.sites) or "-"),
    ]
    for key, label in (("tc", "transformation catalog"), ("sc", "site catalog"), ("rc", "replica catalog"),
                       ("properties", "properties")):
        rows.append((label, inputs.paths.get(key) or "-"))
    return rows


def _render(summary: Summary, inputs: Inputs) -> None:
    rows = _rows(summary, inputs)
    if not sys.stdout.isatty():
        for key, value in rows:
            click.echo(f"{key}: {value}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary.name}: valid", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)
