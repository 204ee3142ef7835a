"""``sheaf plan``: abstract workflow -> executable workflow in a new submit directory.

Thin: ``sheaf.formats.load_inputs`` reads everything, ``sheaf.planner.plan`` plans,
``sheaf.codegen.write_plan`` writes (atomically, into a directory it creates), this module only
renders what was done: jobs before and after clustering, clusters per technique and aggregator, jobs
per site (a rich table on a terminal, plain ``key: value`` lines otherwise), the planner's notes with
``-v``, warnings on stderr, and last the submit directory it made.  ``-q`` leaves only that last
line; ``--json`` prints pegasus-plan's JSON instead (``_braindump``).  The options are pegasus-plan's
(``_plan_args``).

The submit directory (``sheaf.codegen._layout``): ``--dir`` is a base (default: the current
directory); the plan goes to ``<dir>/<user>/pegasus/<workflow>/runNNNN``, a new number each time,
unless ``--relative-submit-dir`` (else ``--relative-dir``) names it, and then that directory must be
new or empty: a plan never overwrites an earlier one.  With ``pegasus.dir.useTimestamp`` the last part
is the planning time instead of ``runNNNN`` (``_layout.timestamp_name``).  The relative execution
directory -- where jobs run under a site's catalogued shared scratch directory -- is chosen as
pegasus-plan chooses it (``_exec_dir``; ``_layout``'s docstring) and recorded as
``options.exec_dir``.  ``--submit`` starts ``sheaf run`` on it in the background, as pegasus-run does
(``_detach``), and says how to watch it.  ``--deferred`` (how sheaf's
own sub-workflow jobs plan, in their PRE script, as Pegasus's do) replaces the earlier plan in the
named directory -- unless the sub-workflow ran there before, which is then kept and resumed
(``--force-replan`` replans; ``_plan_subwf``) -- and, with ``--submit``, runs it in the foreground.
``--cache``, ``--inherited-rc-files`` and ``--output-map`` are what a parent passes its child.

Bad input of any kind is one message and exit 2 (the group's error boundary), before anything is
written.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import click

from sheaf import __version__, app
from sheaf.app import _braindump
from sheaf.cli import _exit, _pegasus_text
from sheaf.cli._plan_args import (
    PegasusCommand,
    StagingOptions,
    check_reuse,
    cleanup_mode,
    input_dirs,
    refuse,
    split_commas,
    staging_sites,
    workflow_file,
)
from sheaf.cli._plan_subwf import keep_ran_plan as _keep_ran_plan
from sheaf.cli._plan_subwf import read_output_map, with_replica_files
from sheaf.codegen import (
    GROUP_PROPERTY,
    PlanContext,
    PlanFiles,
    check_target,
    named_submit_dir,
    next_run_number,
    runs_parent,
    timestamp_name,
    user_name,
    write_groups,
    write_plan,
)
from sheaf.errors import UsageError
from sheaf.formats import Inputs, load_inputs
from sheaf.planner import DataOptions, ExecutableWorkflow, plan


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"sheaf {__version__} (reads pegasus-plan 5.x command lines)")
        ctx.exit(0)


def _refused(*names: str) -> click.Option:
    """A pegasus-plan option sheaf refuses (``_plan_args.REFUSED``): hidden from --help."""
    return click.Option(list(names), hidden=True, multiple=True, expose_value=False, callback=refuse)


@dataclass(frozen=True, slots=True)
class _Where:
    """Where the plan goes: a named directory, or the next ``runNNNN`` under ``parent``."""

    base: str
    named: str | None
    replace: bool
    stamp: str | None = None  # pegasus.dir.useTimestamp: the run directory's name instead of runNNNN

    def parent(self, workflow: str) -> str:
        return runs_parent(self.base, workflow)


@click.command("plan", cls=PegasusCommand)
@click.argument("workflow", required=False, type=click.Path(dir_okay=False))
@click.option("--dax", type=click.Path(dir_okay=False), help="The workflow (pegasus-plan 4.x's name for it).")
@click.option("-d", "--dir", "directory", type=click.Path(),
              help="Base of the submit directory (default: here): BASE/<user>/pegasus/<workflow>/runNNNN.")
@click.option("--relative-dir", metavar="R", help="Submit directory BASE/R instead of the numbered one.")
@click.option("--relative-submit-dir", metavar="R", help="Submit directory BASE/R (over --relative-dir).")
@click.option("-b", "--basename", help="Name of the per-workflow files (B.dag, ...).")
@click.option("-s", "--sites", multiple=True, metavar="S1,S2", help="Execution sites (comma list).")
@click.option("-o", "--output-sites", multiple=True, metavar="S1,S2", help="Output sites (recorded).")
@click.option("-O", "--output-dir", type=click.Path(file_okay=False), help="Output directory (recorded).")
@click.option("--staging-site", multiple=True, metavar="S=SS,...", help="Staging sites (recorded).")
@click.option("--cleanup", metavar="none|inplace|leaf|constraint", help="Cleanup strategy (recorded).")
@click.option("-n", "--nocleanup", is_flag=True, help="As --cleanup none (pegasus-plan 4.x).")
@click.option("-r", "--randomdir", is_flag=False, flag_value="", default=None, metavar="[=NAME]",
              help="Jobs run in NAME (default <workflow>-0-<uuid>) under each site's shared scratch.")
@click.option("-C", "--cluster", multiple=True, metavar="T1,T2",
              help="Clustering techniques in order: horizontal, label, whole.")
@click.option("-c", "--conf", type=click.Path(dir_okay=False),
              help="Properties file (over ./pegasus.properties).")
@click.option("-D", "defines", multiple=True, metavar="KEY=VALUE", help="Set a property (over --conf).")
@click.option("--tc", type=click.Path(dir_okay=False), help="Transformation catalog (YAML or text).")
@click.option("--sc", type=click.Path(dir_okay=False), help="Site catalog (YAML or XML).")
@click.option("--rc", type=click.Path(dir_okay=False), help="Replica catalog (YAML or text).")
@click.option("--group-size", type=click.IntRange(min=1), metavar="N",
              help="Cut the DAG into group DAGs of about N jobs matched to grid sites as wholes "
                   "(property sheaf.group.size; 1 binds each job).")
@click.option("-I", "--input-dir", multiple=True, metavar="D1,D2", help="Directories holding input files.")
@click.option("-f", "--force", is_flag=True, help="No data reuse: every job runs (sheaf's only way yet).")
@click.option("--force-replan", is_flag=True, help="Replan sub-workflows on retry (sheaf always does).")
@click.option("-R", "--reuse", multiple=True, metavar="DIR1,DIR2",
              help="Data reuse from earlier submit directories (refused: sheaf plans every job).")
@click.option("-S", "--submit", is_flag=True, help="Start the run in the background once planned.")
@click.option("-J", "--json", "as_json", is_flag=True, help="Print pegasus-plan's JSON (the braindump).")
@click.option("-v", "--verbose", count=True, help="Also print the planner's notes.")
@click.option("-q", "--quiet", count=True, help="Print only the submit directory.")
@click.option("-X", "jvm_options", multiple=True, hidden=True)
@click.option("-z", "--deferred", is_flag=True, hidden=True)
@click.option("--as-pegasus-plan", "as_pegasus", is_flag=True, hidden=True)  # the pegasus-plan wrapper's
@click.option("--cache", "caches", multiple=True, metavar="F1,F2",
              help="Replica cache files (an upstream sub-workflow's outputs): preferred over --rc.")
@click.option("--inherited-rc-files", "inherited_rc", multiple=True, metavar="F1,F2",
              help="Replica catalogs a parent workflow passes down: below --rc.")
@click.option("-m", "--output-map", type=click.Path(dir_okay=False),
              help="Where to place outputs (a replica file): copies are made once produced.")
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Print the version.")
def command(**opts: object) -> None:
    """Plan WORKFLOW (default ./workflow.yml) into a new submit directory; options as pegasus-plan's."""
    _plan_command(**opts)  # type: ignore[arg-type]


for _names in (("-j", "--job-prefix"), ("-t", "--transformations-dir"), ("-F", "--forward"), ("--rescue",),
               ("-g", "--group")):
    command.params.append(_refused(*_names))


def _plan_command(*, workflow: str | None, dax: str | None, directory: str | None,
                  relative_dir: str | None, relative_submit_dir: str | None, basename: str | None,
                  sites: tuple[str, ...], output_sites: tuple[str, ...], output_dir: str | None,
                  staging_site: tuple[str, ...], cleanup: str | None, nocleanup: bool, randomdir: str | None,
                  cluster: tuple[str, ...], conf: str | None, defines: tuple[str, ...], tc: str | None,
                  sc: str | None, rc: str | None, input_dir: tuple[str, ...], force: bool, force_replan: bool,
                  reuse: tuple[str, ...], submit: bool, as_json: bool, verbose: int, quiet: int,
                  jvm_options: tuple[str, ...], deferred: bool, caches: tuple[str, ...],
                  inherited_rc: tuple[str, ...], output_map: str | None,
                  group_size: int | None, as_pegasus: bool) -> None:
    warnings = [f"-X{option}: a Java VM option; sheaf runs no JVM, ignored" for option in jvm_options]
    path, base = workflow_file(workflow, dax, directory, warnings)
    named = relative_submit_dir or relative_dir
    if deferred and named is None:
        raise UsageError("--deferred replans into a named submit directory: give --relative-submit-dir")
    where = _Where(os.path.abspath(base or "."), named, deferred)
    if named is not None:
        target = os.path.realpath(named_submit_dir(where.base, named))
        check_target(target, deferred)  # first: a directory a workflow runs in is refused, never kept
        if deferred and not force_replan and _keep_ran_plan(target, submit):
            return
    check_reuse(reuse)
    staging = StagingOptions(staging_sites(staging_site), split_commas(output_sites),
                             os.path.abspath(output_dir) if output_dir else None,
                             cleanup_mode(cleanup, nocleanup), randomdir)
    inputs_dirs = input_dirs(input_dir)
    started = time.perf_counter()
    inputs = _load(path, conf, defines, tc, sc, rc)
    if named is None and inputs.properties.get_bool("pegasus.dir.useTimestamp"):
        extended = inputs.properties.get_bool("pegasus.dir.timestamp.extended")
        where = replace(where, stamp=timestamp_name(time.time(), extended=extended))
    inputs = replace(inputs, rc=with_replica_files(
        inputs.rc, split_commas(caches), split_commas(inherited_rc),
        inputs.properties.get_bool("pegasus.catalog.replica.cache.asrc", False)))
    data = DataOptions(output_dir=staging.output_dir, staging_sites=staging.staging_sites,
                       cleanup=staging.cleanup or "inplace", force=force, rc_file=inputs.paths.get("rc"),
                       cwd=os.getcwd(), input_dir=os.pathsep.join(inputs_dirs) or None)
    exec_wf = _plan(inputs, split_commas(sites), staging.output_sites, split_commas(cluster), data)
    record = {**staging.record(), "input_dirs": list(inputs_dirs), "force": force,
              "force_replan": force_replan, "basename": basename}
    context = PlanContext(os.getcwd(), {key: os.path.abspath(value) for key in ("tc", "sc", "rc")
                                        if (value := inputs.paths.get(key))},
                          split_commas(sites), read_output_map(output_map), inputs.tc)
    planned = time.perf_counter()
    dump: dict[str, object] = {}

    wf_uuid = str(uuid.uuid4())

    def extras(files: PlanFiles) -> dict[str, str]:
        dump.update(_braindump.braindump(workflow=exec_wf.name, workflow_file=path, base=where.base,
                                         submit_dir=files.directory, dag=files.dag, user=user_name(),
                                         argv=sys.argv[1:], wf_uuid=wf_uuid))
        return {"braindump.yml": _braindump.yaml_text(dump)}

    exec_dir = _exec_dir(where, exec_wf.name, relative_dir, randomdir, basename, wf_uuid)
    size = group_size or _group_property(inputs.properties.get(GROUP_PROPERTY))
    collector = inputs.properties.get("sheaf.collector.file")

    def grouped(staging: str, files: PlanFiles) -> None:
        assert size is not None
        write_groups(files.directory, size, dag_name=os.path.basename(files.dag), collector=collector,
                     staging=staging)

    files = _write(exec_wf, where, basename, extras, record, exec_dir, context,
                   grouped if size is not None else None)
    written = time.perf_counter()
    for warning in [*warnings, *exec_wf.warnings, *files.warnings]:
        click.echo(f"sheaf: warning: {warning}", err=True)
    level = verbose - quiet
    if as_json:
        click.echo(_braindump.json_text(dump))
    elif level >= 0:
        _render(_rows(inputs, exec_wf, files, planned - started, written - planned), exec_wf, files)
    if level > 0 and not as_json:
        for note in exec_wf.notes:
            click.echo(f"note: {note}")
    _after(files.directory, submit=submit, foreground=deferred, as_json=as_json, as_pegasus=as_pegasus)


def _exec_dir(where: _Where, workflow: str, relative_dir: str | None, randomdir: str | None,
              basename: str | None, wf_uuid: str) -> Callable[[str], str]:
    """pegasus-plan's relative execution directory (``_layout``), given the submit directory made:
    ``--randomdir`` over ``--relative-dir`` over the default relative submit directory."""
    if randomdir is not None:
        name = randomdir or f"{basename or workflow + '-0'}-{wf_uuid}"
        return lambda _final: name
    if relative_dir is not None:
        return lambda _final: relative_dir
    if where.named is None:
        return lambda final: os.path.relpath(final, where.base)
    parent = where.parent(workflow)  # under --relative-submit-dir: the numbered name Pegasus would pick
    default = where.stamp or f"run{next_run_number(parent):04d}"
    return lambda _final: os.path.relpath(os.path.join(parent, default), where.base)


def _group_property(value: str | None) -> int | None:
    if value is None or not value.strip():
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise UsageError(f"{GROUP_PROPERTY} must be a positive integer, got {value!r}")
    return int(value)


def _write(exec_wf: ExecutableWorkflow, where: _Where, basename: str | None,
           extras: object, record: Mapping[str, object], exec_dir: Callable[[str], str],
           context: PlanContext, finish: Callable[[str, PlanFiles], None] | None) -> PlanFiles:
    """``write_plan`` into the named or the next numbered directory; ``finish`` (``--group-size``)
    reshapes the plan in the staging directory, before it takes its place."""
    if where.named is not None:
        target = named_submit_dir(where.base, where.named)
        return write_plan(exec_wf, target, replace=where.replace, basename=basename,
                          extra_files=extras, options=record, exec_dir=exec_dir,  # type: ignore[arg-type]
                          context=context, finish=finish)
    return write_plan(exec_wf, where.parent(exec_wf.name), numbered=True, run_name=where.stamp,
                      basename=basename, extra_files=extras, options=record,  # type: ignore[arg-type]
                      exec_dir=exec_dir, context=context, finish=finish)


def _after(directory: str, *, submit: bool, foreground: bool, as_json: bool, as_pegasus: bool) -> None:
    """The closing lines: the submit directory, then how to run it or watch the run just started --
    played as pegasus-plan (``as_pegasus``), pegasus-plan's and pegasus-run's own lines, which
    scripts written for Pegasus read (``_pegasus_text``)."""
    say = (lambda text: click.echo(text, err=True)) if as_json else click.echo
    if not as_json:
        click.echo(f"submit directory: {directory}")
    if submit and foreground:
        _run_here(directory)
    elif submit:
        pid = app.submit(directory)
        say(f"started: sheaf run {directory} (pid {pid}, log {os.path.join(directory, app.RUN_LOG)})")
        say(_pegasus_text.started(directory) if as_pegasus else f"watch it with: sheaf status {directory}")
    else:
        say(_pegasus_text.planned(directory) if as_pegasus else f"run it with: sheaf run {directory}")


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
          clustering: tuple[str, ...], data: DataOptions) -> ExecutableWorkflow:
    return plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc, properties=inputs.properties,
                sites=sites or None, output_sites=output_sites, clustering=clustering, data=data)


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


def _run_here(directory: str) -> None:
    from rich.console import Console

    from sheaf.cli._run import render_summary

    result = app.run(directory)
    render_summary(result, Console())
    sys.exit(_exit.of_run(result.succeeded, result.exit_code))
