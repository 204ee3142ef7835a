"""``sheaf plan``: parse pegasus-plan's options (``_plan_args``), call ``sheaf.app.plan``, render.

The rendering: jobs before and after clustering, clusters per technique and aggregator, jobs per site
(a rich table on a terminal, plain ``key: value`` lines otherwise), the planner's notes with ``-v``,
warnings on stderr, and last the submit directory it made.  ``-q`` leaves only that last line;
``--json`` prints pegasus-plan's JSON instead (the braindump).  ``--submit`` starts ``sheaf run`` on
the plan in the background, as pegasus-run does (``sheaf.app.submit``), and says how to watch it; with
``--deferred`` (how sheaf's own sub-workflow jobs plan, in their PRE script) it runs in the foreground.
Bad input of any kind is one message and exit 2 (the group's error boundary), before anything is
written.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping

import click

from sheaf import __version__, app
from sheaf.app import PlanRequest, PlanResult
from sheaf.cli import _exit, _pegasus_text
from sheaf.cli._plan_args import PegasusCommand, dash_d, refuse
from sheaf.codegen import PlanFiles
from sheaf.monitor import format_seconds
from sheaf.planner import ExecutableWorkflow
from sheaf.predict import BACKENDS


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"sheaf {__version__} (reads pegasus-plan 5.x command lines)")
        ctx.exit(0)


def _refused(*names: str) -> click.Option:
    """A pegasus-plan option sheaf refuses (``_plan_args.REFUSED``): hidden from --help."""
    return click.Option(list(names), hidden=True, multiple=True, expose_value=False, callback=refuse)


@click.command("plan", cls=PegasusCommand)
@click.argument("workflow", required=False, type=click.Path(dir_okay=False))
@click.option("--dax", type=click.Path(dir_okay=False), help="The workflow (pegasus-plan 4.x's name for it).")
@click.option("--dir", "directory", type=click.Path(),
              help="Base of the submit directory (default: here): BASE/<user>/pegasus/<workflow>/runNNNN.")
@click.option("-d", "short_d", type=click.Path(), metavar="BASE|FILE",
              help="As --dir; an existing FILE is pegasus-plan's -d, the deprecated --dax (with a warning).")
@click.option("--relative-dir", metavar="R", help="Submit directory BASE/R instead of the numbered one.")
@click.option("--relative-submit-dir", metavar="R", help="Submit directory BASE/R (over --relative-dir).")
@click.option("-b", "--basename", help="Name of the per-workflow files (B.dag, ...).")
@click.option("-s", "--sites", multiple=True, metavar="S1,S2", help="Execution sites (comma list).")
@click.option("-o", "--output-sites", multiple=True, metavar="S1,S2",
              help="Output sites: outputs marked stage_out are delivered to each one's storage directory.")
@click.option("-O", "--output-dir", type=click.Path(file_okay=False),
              help="Output directory: outputs are delivered here (site label local).")
@click.option("--staging-site", multiple=True, metavar="S=SS,...",
              help="Staging site of each execution site (condorio and nonsharedfs).")
@click.option("--cleanup", metavar="none|inplace|leaf|constraint",
              help="Cleanup strategy (default inplace; constraint is planned as inplace).")
@click.option("-n", "--nocleanup", is_flag=True, help="As --cleanup none (pegasus-plan 4.x).")
@click.option("-r", "--randomdir", is_flag=False, flag_value="", default=None, metavar="[=NAME]",
              help="Jobs run in NAME (default <workflow>-0-<uuid>) under each site's shared scratch.")
@click.option("-C", "--cluster", multiple=True, metavar="T1,T2",
              help="Clustering techniques in order: horizontal, label, whole, auto (chosen by the predicted "
                   "makespan under --backend's overheads).")
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
              help="--cluster auto: whose overheads the jobs pay.")
@click.option("--slots", type=click.IntRange(min=1),
              help="--cluster auto: CPUs per site (default: the backend's, as sheaf predict's).")
@click.option("--pool-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="--cluster auto, backend local: the local pool's configuration (as sheaf run's).")
@click.option("--overhead", type=click.FloatRange(min=0), metavar="SECONDS",
              help="--cluster auto: a mean per-job overhead of SECONDS on every site.")
@click.option("--overheads", "overheads_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="--cluster auto: an overhead model file (as sheaf predict's).")
@click.option("-c", "--conf", type=click.Path(dir_okay=False),
              help="Properties file (over ./pegasus.properties).  pegasus-plan's -c is --cache: a "
                   "replica catalog given here is read as properties, with a warning.")
@click.option("-D", "defines", multiple=True, metavar="KEY=VALUE", help="Set a property (over --conf).")
@click.option("--tc", type=click.Path(dir_okay=False), help="Transformation catalog (YAML or text).")
@click.option("--sc", type=click.Path(dir_okay=False), help="Site catalog (YAML or XML).")
@click.option("--rc", type=click.Path(dir_okay=False), help="Replica catalog (YAML or text).")
@click.option("-t", "--transformations-dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Each file in DIR is a stageable transformation on site local (catalog entries win).")
@click.option("--group-size", type=click.IntRange(min=1), metavar="N",
              help="Cut the DAG into group DAGs of about N jobs matched to grid sites as wholes "
                   "(property sheaf.group.size; 1 binds each job).")
@click.option("-I", "--input-dir", multiple=True, metavar="D1,D2", help="Directories holding input files.")
@click.option("-f", "--force", is_flag=True,
              help="No data reuse: every job runs, even where the replica catalog has its outputs.")
@click.option("--force-replan", is_flag=True, help="Replan sub-workflows on retry (sheaf always does).")
@click.option("-R", "--reuse", multiple=True, metavar="DIR1,DIR2",
              help="Data reuse from the outputs earlier runs in these submit directories registered.")
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


for _names in (("-j", "--job-prefix"), ("-F", "--forward"), ("--rescue",),
               ("-g", "--group")):
    command.params.append(_refused(*_names))


def _plan_command(*, workflow: str | None, dax: str | None, directory: str | None, short_d: str | None,
                  relative_dir: str | None, relative_submit_dir: str | None, basename: str | None,
                  sites: tuple[str, ...], output_sites: tuple[str, ...], output_dir: str | None,
                  staging_site: tuple[str, ...], cleanup: str | None, nocleanup: bool, randomdir: str | None,
                  cluster: tuple[str, ...], conf: str | None, defines: tuple[str, ...], tc: str | None,
                  sc: str | None, rc: str | None, input_dir: tuple[str, ...], force: bool, force_replan: bool,
                  reuse: tuple[str, ...], submit: bool, as_json: bool, verbose: int, quiet: int,
                  jvm_options: tuple[str, ...], deferred: bool, caches: tuple[str, ...],
                  inherited_rc: tuple[str, ...], output_map: str | None,
                  group_size: int | None, as_pegasus: bool, transformations_dir: str | None, backend: str,
                  slots: int | None, pool_config: str | None, overhead: float | None,
                  overheads_file: str | None) -> None:
    dax, directory, d_warning = dash_d(short_d, workflow, dax, directory)
    request = PlanRequest(workflow, dax, directory, relative_dir, relative_submit_dir, basename, sites,
                          output_sites, output_dir, staging_site, cleanup, nocleanup, randomdir, cluster,
                          conf, defines, tc, sc, rc, input_dir, force, force_replan, reuse, deferred, caches,
                          inherited_rc, output_map, group_size, jvm_options, transformations_dir,
                          tuple(sys.argv[1:]), backend=backend, slots=slots, pool_config=pool_config,
                          overhead=overhead, overheads_file=overheads_file)
    told: list[str] = []
    prog = "pegasus-plan" if as_pegasus else "sheaf"  # the program the user ran leads its messages

    def warn(text: str) -> None:
        told.append(text)
        click.echo(f"{prog}: warning: {text}", err=True)

    if d_warning:
        warn(d_warning)
    result = app.plan(request, on_warning=warn)
    if result.kept:
        click.echo(f"{prog}: the sub-workflow in {result.directory} ran before: resuming it, not replanning "
                   "(--force-replan replans)", err=True)
        click.echo(f"submit directory: {result.directory}")
        if submit:
            _run_here(result.directory)
        return
    for warning in result.warnings:
        if warning not in told:
            click.echo(f"{prog}: warning: {warning}", err=True)
    level = verbose - quiet
    if as_json:
        click.echo(_json_text(result))
    elif level >= 0:
        _render(result)
    if level > 0 and not as_json:
        for note in result.notes:
            click.echo(f"note: {note}")
    _after(result.directory, submit=submit, foreground=deferred, as_json=as_json, as_pegasus=as_pegasus)


def _json_text(result: PlanResult) -> str:
    return app.braindump_json(dict(result.braindump))


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
        if as_pegasus and as_json:  # the run started as pegasus-run --json starts one: its JSON alone
            return
        say(f"started: sheaf run {directory} (pid {pid}, log {os.path.join(directory, app.RUN_LOG)})")
        say(_pegasus_text.started(directory) if as_pegasus else f"watch it with: sheaf status {directory}")
    else:
        say(_pegasus_text.planned(directory) if as_pegasus else f"run it with: sheaf run {directory}")


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def _rows(result: PlanResult, exec_wf: ExecutableWorkflow, files: PlanFiles) -> list[tuple[str, str]]:
    clusters = [job for job in exec_wf.jobs if job.type == "cluster"]
    by_kind = Counter(f"{job.technique or 'cluster'}/{job.aggregator}" for job in clusters)
    tasks = sum(len(job.tasks) for job in clusters)
    kinds = f" ({_counts(by_kind)})" if by_kind else ""
    return [
        ("workflow", exec_wf.name),
        ("abstract jobs", str(result.abstract_jobs)),
        ("executable jobs", f"{sum(files.job_types.values())} ({_counts(files.job_types)})"),
        ("clusters", f"{len(clusters)} holding {tasks} tasks{kinds}"),
        ("clustering", ",".join(exec_wf.clustering) or "none"),
        ("edges", str(files.edges)),
        ("directory", files.directory),
        ("dag", os.path.basename(files.dag)),
        ("time", f"load+plan {result.plan_seconds:.2f}s, write {result.write_seconds:.2f}s"),
        *_auto_rows(exec_wf),
    ]


def _group_text(group: Mapping[str, object]) -> str:
    return (f"level {group['level']} {group['transformation']} on {group['site']}: {group['tasks']} tasks "
            f"-> {group['jobs']} jobs")


def _auto_rows(exec_wf: ExecutableWorkflow) -> list[tuple[str, str]]:
    """What automatic clustering chose, and the predicted makespans clustered and not."""
    auto = exec_wf.autocluster
    if "predicted_makespan_s" not in auto:
        return []
    rows = [("auto clusters", _group_text(g)) for g in auto.get("groups", ())]
    said = (f"{format_seconds(auto['predicted_makespan_s'])} against "
            f"{format_seconds(auto['unclustered_makespan_s'])} unclustered "
            f"({auto['slots']} slots, {auto['backend']} overheads)")
    rows.append(("predicted makespan", said))
    return rows


def _site_rows(exec_wf: ExecutableWorkflow) -> list[tuple[str, int, int, int]]:
    """Per site, the jobs that run the workflow's tasks (the data jobs are counted by type above)."""
    per: dict[str, list[int]] = {}
    for job in exec_wf.jobs:
        if not job.tasks:
            continue
        counts = per.setdefault(job.site or "-", [0, 0, 0])
        counts[0] += 1
        counts[1] += job.type == "cluster"
        counts[2] += len(job.tasks)
    return [(site, jobs, clusters, tasks) for site, (jobs, clusters, tasks) in sorted(per.items())]


def _render(result: PlanResult) -> None:
    exec_wf, files = result.executable, result.files
    assert exec_wf is not None and files is not None
    rows = _rows(result, exec_wf, files)
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
    sys.exit(_exit.of_run(result.succeeded, result.exit_code, result.removed))
