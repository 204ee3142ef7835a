"""``sheaf predict DIR`` and ``sheaf calibrate RUN_DIR...``: a plan's makespan before it runs.

Thin: :func:`sheaf.app.predict` and :func:`sheaf.app.calibrate` compute, this renders.  ``--json``
prints one object (``makespan_s``, ``low_s``, ``high_s``, ``jobs``, ``critical_path_s``,
``utilisation``, the per-level breakdown, the ``slots`` and where they came from (``slots_source``),
``memory_mb``, each transformation's runtime source, the overheads used).
"""

from __future__ import annotations

import json

import click

from sheaf import app
from sheaf.monitor import format_seconds
from sheaf.predict import BACKENDS

__all__ = ["calibrate_command", "command"]


def _render(result: app.PredictResult) -> str:
    p = result.prediction
    overheads = result.model.for_site(None, result.backend)
    head = (f"predicted makespan: {format_seconds(p.makespan_s)} (p10 {format_seconds(p.low_s)}, "
            f"p90 {format_seconds(p.high_s)}; {p.replicates} sampled runs)")
    memory = f", {result.memory_mb:.0f} MB" if result.memory_mb > 0 else ""
    platform = (f"platform: {result.slots} slots{memory} ({result.slots_source}), backend {result.backend}, "
                f"overheads {overheads.source} (a single-task job pays {overheads.per_job:.3g} s)")
    jobs = (f"jobs: {p.jobs} running {p.tasks} tasks; critical path {format_seconds(p.critical_path_s)}; "
            f"utilisation {p.utilisation:.0%}")
    split = f"time in tasks {format_seconds(p.work_s)}, in overheads {format_seconds(p.overhead_s)}"
    header = f"{'level':>5} {'jobs':>7} {'tasks':>7} {'work':>14} {'overheads':>14} {'start':>12} {'end':>12}"
    lines = [head, platform, jobs, split, "", header]
    lines += [f"{f.level:>5} {f.jobs:>7} {f.tasks:>7} {format_seconds(f.work_s):>14} "
              f"{format_seconds(f.overhead_s):>14} {format_seconds(f.start_s):>12} "
              f"{format_seconds(f.end_s):>12}" for f in p.levels]
    if result.sources:
        lines += ["", "runtimes from:"]
        lines += [f"  {name}: {source}" for name, source in sorted(result.sources.items())]
    lines += list(result.notes)
    return "\n".join(lines)


@click.command("predict")
@click.argument("directory", type=click.Path(exists=True))
@click.option("--dag", "dag_file", metavar="FILE", help="The DAG to predict, when DIR holds several.")
@click.option("--slots", type=click.IntRange(min=1),
              help="CPUs on every site (default: the backend's: the local pool's, a Slurm cluster's by "
                   "sinfo, else this machine's).")
@click.option("--pool-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="The local pool's configuration (as sheaf run --pool-config): its slots' CPUs and memory.")
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
              help="Whose overheads the jobs pay.")
@click.option("--overhead", type=click.FloatRange(min=0), metavar="SECONDS",
              help="A mean per-job overhead (submit, queue, post) of SECONDS on every site.")
@click.option("--overheads", "overheads_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="An overhead model file (JSON, per backend and site).")
@click.option("--calibrate", multiple=True, type=click.Path(file_okay=False), metavar="RUN_DIR",
              help="Fit the backend's overheads from this earlier run (repeatable); saved for later.")
@click.option("--no-history", is_flag=True, help="Do not read task runtimes from earlier runs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sampled runs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(directory: str, dag_file: str | None, slots: int | None, pool_config: str | None, backend: str,
            overhead: float | None, overheads_file: str | None, calibrate: tuple[str, ...], no_history: bool,
            seed: int, as_json: bool) -> None:
    """Predict how long the plan in DIR (or the DAG file DIRECTORY) will take to run: a simulation of
    its jobs on the platform.

    Task runtimes come from their pegasus runtime profile (a WfCommons trace's runtimeInSeconds), else
    from the runs of that transformation in earlier runs' events databases, else 60 s; each job pays the
    backend's overheads (submit and queue, launch, per-task start-up, post), each a distribution."""
    options = app.PredictOptions(slots=slots, pool_config=pool_config, backend=backend, overhead=overhead,
                                 overheads_file=overheads_file, calibrate=calibrate,
                                 history=not no_history, seed=seed, record=True, dag_file=dag_file)
    result = app.predict(directory, options)
    click.echo(json.dumps(result.to_json(), indent=1) if as_json else _render(result))


@click.command("calibrate")
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
              help="The backend these runs ran on.")
@click.option("--json", "as_json", is_flag=True, help="Print the fitted overheads as JSON.")
def calibrate_command(runs: tuple[str, ...], backend: str, as_json: bool) -> None:
    """Fit a backend's overheads from earlier runs and save them for sheaf predict and --cluster auto."""
    model = app.calibrate(runs, backend)
    fitted = model.for_site(None, backend)
    if as_json:
        click.echo(json.dumps(fitted.to_json(), indent=1))
        return
    for name in ("engine", "submit", "launch", "task", "post"):
        dist = getattr(fitted, name)
        click.echo(f"{name:<7} mean {dist.mean:.4g} s, cv {dist.cv:.2f}")
    click.echo(f"saved to {app.overheads_path()} ({fitted.source})")
