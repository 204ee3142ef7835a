"""``sheaf plan``: abstract workflow -> executable workflow on disk (DAGMan files and ``plan.json``).

Thin: ``sheaf.formats.load_inputs`` reads everything, ``sheaf.planner.plan`` plans,
``sheaf.codegen.write_plan`` writes (atomically), this module only renders what was done: jobs
before and after clustering, clusters per technique and aggregator, jobs per site (a rich table on a
terminal, plain ``key: value`` lines otherwise), the planner's notes with ``-v``, warnings on stderr.
``--submit`` then runs the plan on the embedded engine (``sheaf run``'s ``run_planned``).

DIR is checked before anything is read, so a non-empty DIR without ``--force`` fails at once (exit
2, nothing written).  Bad input of any kind is one message and exit 2 (the group's error boundary).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence

import click

from sheaf.cli import _exit
from sheaf.codegen import PlanFiles, check_target, write_plan
from sheaf.errors import UsageError
from sheaf.formats import Inputs, load_inputs
from sheaf.planner import ExecutableWorkflow, plan


def _split(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@click.command("plan")
@click.argument("workflow", type=click.Path(dir_okay=False))
@click.option("-d", "--dir", "directory", required=True, type=click.Path(file_okay=False),
              help="Directory to write the plan into (new or empty; see --force).")
@click.option("-s", "--sites", multiple=True, metavar="S1,S2", help="Execution sites (comma list).")
@click.option("-o", "--output-sites", multiple=True, metavar="S", help="Output sites (recorded in the plan).")
@click.option("-C", "--cluster", multiple=True, metavar="T1,T2",
              help="Clustering techniques in order: horizontal, label, whole.")
@click.option("-c", "--conf", type=click.Path(dir_okay=False),
              help="Properties file (over ./pegasus.properties).")
@click.option("-D", "defines", multiple=True, metavar="KEY=VALUE", help="Set a property (over --conf).")
@click.option("--tc", type=click.Path(dir_okay=False), help="Transformation catalog (YAML or text).")
@click.option("--sc", type=click.Path(dir_okay=False), help="Site catalog (YAML or XML).")
@click.option("--rc", type=click.Path(dir_okay=False), help="Replica catalog (YAML or text).")
@click.option("--input-dir", type=click.Path(file_okay=False),
              help="Directory holding the workflow's input files.")
@click.option("-v", "--verbose", count=True, help="Also print the planner's notes.")
@click.option("--force", is_flag=True,
              help="Replace an earlier plan in DIR (only once the new one is complete).")
@click.option("--submit", is_flag=True, help="Run the plan on the embedded engine once written.")
def command(workflow: str, directory: str, sites: tuple[str, ...], output_sites: tuple[str, ...],
            cluster: tuple[str, ...], conf: str | None, defines: tuple[str, ...], tc: str | None,
            sc: str | None, rc: str | None, input_dir: str | None, verbose: int, force: bool,
            submit: bool) -> None:
    """Plan WORKFLOW into DIR: the files HTCondor DAGMan (or sheaf run) runs, and plan.json."""
    check_target(os.path.realpath(directory), force)
    if input_dir is not None and not os.path.isdir(input_dir):
        raise UsageError(f"--input-dir {input_dir}: no such directory")
    started = time.perf_counter()
    inputs = _load(workflow, conf, defines, tc, sc, rc)
    exec_wf = _plan(inputs, _split(sites), _split(output_sites), _split(cluster))
    exec_wf.input_dir = exec_wf.input_dir or (os.path.abspath(input_dir) if input_dir else None)
    exec_wf.site_catalog = exec_wf.site_catalog or inputs.sc
    exec_wf.replica_catalog = exec_wf.replica_catalog or inputs.rc
    planned = time.perf_counter()
    files = write_plan(exec_wf, directory, force=force)
    written = time.perf_counter()
    for warning in [*exec_wf.warnings, *files.warnings]:
        click.echo(f"sheaf: warning: {warning}", err=True)
    _render(_rows(inputs, exec_wf, files, planned - started, written - planned), exec_wf, files)
    if verbose:
        for note in exec_wf.notes:
            click.echo(f"note: {note}")
    if submit:
        _submit(files.directory)


def _load(workflow: str, conf: str | None, defines: tuple[str, ...], tc: str | None, sc: str | None,
          rc: str | None) -> Inputs:
    warnings: list[str] = []
    try:
        inputs = load_inputs(workflow, conf=conf, defines=defines, tc=tc, sc=sc, rc=rc)
        warnings = inputs.warnings
    finally:
        for warning in warnings:
            click.echo(f"sheaf: warning: {warning}", err=True)
    return inputs


def _plan(inputs: Inputs, sites: tuple[str, ...], output_sites: tuple[str, ...],
          clustering: tuple[str, ...]) -> ExecutableWorkflow:
    return plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc, properties=inputs.properties,
                sites=sites or None, output_sites=output_sites, clustering=clustering)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def _rows(inputs: Inputs, exec_wf: ExecutableWorkflow, files: PlanFiles, plan_s: float,
          write_s: float) -> list[tuple[str, str]]:
    clusters = [job for job in exec_wf.jobs if job.type == "cluster"]
    by_kind = Counter(f"{job.technique or 'cluster'}/{job.aggregator}" for job in clusters)
    tasks = sum(len(job.tasks) for job in clusters)
    kinds = f" ({_counts(by_kind)})" if by_kind else ""
    return [
        ("workflow", exec_wf.name),
        ("abstract jobs", str(len(inputs.workflow.jobs))),
        ("executable jobs", f"{sum(files.job_types.values())} ({_counts(files.job_types)})"),
        ("clusters", f"{len(clusters)} holding {tasks} tasks{kinds}"),
        ("clustering", ",".join(exec_wf.clustering) or "none"),
        ("edges", str(files.edges)),
        ("directory", files.directory),
        ("dag", os.path.basename(files.dag)),
        ("time", f"load+plan {plan_s:.2f}s, write {write_s:.2f}s"),
    ]


def _site_rows(exec_wf: ExecutableWorkflow) -> list[tuple[str, int, int, int]]:
    per: dict[str, list[int]] = {}
    for job in exec_wf.jobs:
        counts = per.setdefault(job.site or "-", [0, 0, 0])
        counts[0] += 1
        counts[1] += job.type == "cluster"
        counts[2] += len(job.tasks)
    return [(site, *counts) for site, counts in sorted(per.items())]  # type: ignore[misc]


def _render(rows: list[tuple[str, str]], exec_wf: ExecutableWorkflow, files: PlanFiles) -> None:
    sites = _site_rows(exec_wf)
    if not sys.stdout.isatty():
        for key, value in rows:
            click.echo(f"{key}: {value}")
        for site, jobs, clusters, tasks in sites:
            click.echo(f"site {site}: {jobs} jobs, {clusters} clusters, {tasks} tasks")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{exec_wf.name}: planned", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    per_site = Table(title="per site")
    for name in ("site", "jobs", "clusters", "tasks"):
        per_site.add_column(name, justify="left" if name == "site" else "right")
    for site, jobs, clusters, tasks in sites:
        per_site.add_row(site, str(jobs), str(clusters), str(tasks))
    console.print(per_site)


def _submit(directory: str) -> None:
    from rich.console import Console

    from sheaf.cli._run import render_summary, run_planned

    result = run_planned(directory)
    render_summary(result, Console())
    sys.exit(_exit.of_run(result.succeeded, result.exit_code))
