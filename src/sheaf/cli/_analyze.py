"""``sheaf analyze DIR``: pegasus-analyzer's report of a run's failed jobs, from its events databases.

Thin: :func:`sheaf.monitor.analyze` collects, this renders in pegasus-analyzer's layout (a summary
of the jobs' counts, then each failed job's details, its stdout/stderr tails and the command that
reruns it).  Exit 0 whatever the run's outcome; 2 when DIR holds no run.
"""

from __future__ import annotations

import click

from sheaf.monitor import Analysis, FailedJob, analyze

__all__ = ["command", "render"]

_WIDTH = 80


def _banner(text: str, fill: str) -> str:
    return f"{text}".center(_WIDTH, fill) + "\n"


def _pct(n: int, total: int) -> str:
    return f"{n:>6} ({100.0 * n / (total or 1):.2f}%)"


def _summary(a: Analysis) -> str:
    rows = (
        ("Total jobs", a.total),
        ("# jobs succeeded", a.succeeded),
        ("# jobs failed", a.failed),
        ("# jobs held", a.held),
        ("# jobs unsubmitted", a.unsubmitted),
    )
    return (
        _banner("Summary", "*")
        + "\n"
        + f" {'Submit Directory':<19}: {a.submit_dir}\n"
        + f" {'Workflow Status':<19}: {a.state}\n"
        + "".join(f" {name:<19}: {_pct(n, a.total)}\n" for name, n in rows)
        + "\n"
    )


def _job(job: FailedJob) -> str:
    fields = (
        ("last state", "held" if job.held_reason and job.exitcode is None else "failed"),
        ("type", job.type),
        ("transformation", job.transformation),
        ("site", job.site),
        ("host", job.host),
        ("attempts", job.attempts),
        ("exitcode", job.exitcode if job.signal is None else f"killed by signal {job.signal}"),
        ("held reason", job.held_reason),
        ("reason", job.reason),
        ("submit file", job.submit_file),
        ("output file", job.stdout_file),
        ("error file", job.stderr_file),
        ("workflow", job.workflow),
    )
    out = [_banner(job.name, "=") + "\n"]
    out += [f"{name:>15}: {value}\n" for name, value in fields if value not in (None, "")]
    for task in job.tasks:
        out.append(
            f"{'failed task':>15}: {task.task or '-'} ({task.transformation or '-'}) exit code "
            f"{task.exitcode}, {task.duration:.3f} s\n"
        )
    if job.command:
        out.append(f"\nTo re-run this job, use:\n\n    {job.command}\n")
    for label, text in (
        ("submit description", job.submit_text),
        ("stdout", job.stdout_text),
        ("stderr", job.stderr_text),
    ):
        if text and text.strip():
            title = label if label.startswith("submit") else f"{label} (last lines)"
            out.append("\n" + _banner(f" {title} ", "-") + text.rstrip("\n") + "\n")
    return "".join(out) + "\n"


def render(a: Analysis) -> str:
    out = _summary(a)
    if a.jobs:
        out += _banner("Failed jobs' details", "*") + "\n" + "".join(_job(j) for j in a.jobs)
    return out


@click.command(name="analyze")
@click.argument("directory")
@click.option("--dag", "dag_file", help="The DAG file, when DIRECTORY holds more than one *.dag.")
def command(directory: str, dag_file: str | None) -> None:
    """Explain the failed jobs of the run in DIRECTORY (pegasus-analyzer)."""
    click.echo(render(analyze(directory, dag_file)), nl=False)
