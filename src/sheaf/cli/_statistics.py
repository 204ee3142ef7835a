"""``sheaf statistics DIR [--json|--csv]``: pegasus-statistics' summary, breakdown and host tables.

Thin: :func:`sheaf.monitor.workflow_statistics` computes, this renders.  The text tables use
pegasus-statistics' headings and duration wording (summary.txt, breakdown.txt); ``--json`` is one
object; ``--csv`` is one CSV table per section, each after a ``# section`` line.  Exit 0; 2 when DIR
holds no run.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import click

from sheaf.monitor import Statistics, format_seconds, workflow_statistics

__all__ = ["command"]

_SUMMARY = ("Type", "Succeeded", "Failed", "Incomplete", "Total", "Retries", "Total+Retries")
_SUMMARY_WIDTHS = (15, 10, 8, 12, 10, 10, 13)
_BREAKDOWN = (
    "Transformation",
    "Type",
    "Count",
    "Min (runtime)",
    "Max (runtime)",
    "Mean (runtime)",
    "Total (runtime)",
)
_HOSTS = ("Host", "Jobs", "Job runtime (sec)", "Tasks", "Task runtime (sec)")


def _table(
    header: tuple[str, ...], rows: list[tuple[str, ...]], widths: tuple[int, ...] | None = None
) -> str:
    if widths is None:
        widths = tuple(max(len(str(c)) for c in col) + 1 for col in zip(header, *rows, strict=False))
    return "".join(
        "".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=False)).rstrip() + "\n"
        for row in (header, *rows)
    )


def _sections(s: Statistics) -> dict[str, tuple[tuple[str, ...], list[tuple[str, ...]]]]:
    return {
        "summary": (
            _SUMMARY,
            [
                (
                    r.type,
                    str(r.succeeded),
                    str(r.failed),
                    str(r.incomplete),
                    str(r.total),
                    str(r.retries),
                    str(r.total_retries),
                )
                for r in s.summary
            ],
        ),
        "breakdown": (
            _BREAKDOWN,
            [
                (
                    t.transformation,
                    t.type,
                    str(t.count),
                    f"{t.min:.3f}",
                    f"{t.max:.3f}",
                    f"{t.mean:.3f}",
                    f"{t.total:.3f}",
                )
                for t in s.transformations
            ],
        ),
        "hosts": (
            _HOSTS,
            [
                (h.host, str(h.jobs), f"{h.job_runtime:.3f}", str(h.tasks), f"{h.task_runtime:.3f}")
                for h in s.hosts
            ],
        ),
    }


def render_text(s: Statistics) -> str:
    sections = _sections(s)
    line = "-" * sum(_SUMMARY_WIDTHS) + "\n"
    out = [
        f"# {s.wf_uuid} ({s.label}){f' across {s.workflows} workflows' if s.workflows > 1 else ''}\n",
        line,
        _table(*sections["summary"], _SUMMARY_WIDTHS),
        line,
        "\n",
    ]
    times = (
        ("Workflow wall time", s.wall_time),
        ("Cumulative job wall time", s.job_wall_time),
        ("Cumulative job wall time as seen from submit side", s.submit_wall_time),
        ("Cumulative job badput wall time", s.badput),
        ("Cumulative job badput wall time as seen from submit side", s.submit_badput),
    )
    out += [f"{name:<57}: {format_seconds(value)}\n" for name, value in times]
    if s.predicted is not None:
        p = s.predicted
        said = (f"{format_seconds(p['makespan_s'])} (p10 {format_seconds(p['low_s'])}, "
                f"p90 {format_seconds(p['high_s'])})")
        if s.wall_time and p["makespan_s"] > 0:
            said += f"; measured / predicted {s.wall_time / p['makespan_s']:.2f}"
        out.append(f"{'Predicted makespan (sheaf predict)':<57}: {said}\n")
    out += [
        "\n# Transformation statistics (breakdown)\n",
        _table(*sections["breakdown"]),
        "\n# Job instances and invocations per host\n",
        _table(*sections["hosts"]),
    ]
    return "".join(out)


def render_csv(s: Statistics) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for name, (header, rows) in _sections(s).items():
        buffer.write(f"# {name}\n")
        writer.writerow(header)
        writer.writerows(rows)
    buffer.write("# time\n")
    writer.writerow(("stat", "value (sec)"))
    writer.writerows(
        (
            ("workflow_wall_time", s.wall_time),
            ("cumulative_job_walltime", s.job_wall_time),
            ("cumulative_job_walltime_from_submit_side", s.submit_wall_time),
            ("cumulative_job_badput_walltime", s.badput),
            ("cumulative_job_badput_walltime_from_submit_side", s.submit_badput),
        )
    )
    return buffer.getvalue()


def render_json(s: Statistics) -> str:
    data = dataclasses.asdict(s)
    for row, obj in zip(data["summary"], s.summary, strict=True):
        row["total_retries"] = obj.total_retries
    return json.dumps(data, indent=2)


@click.command(name="statistics")
@click.argument("directory")
@click.option("--dag", "dag_file", help="The DAG file, when DIRECTORY holds more than one *.dag.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV tables, one per section.")
def command(directory: str, dag_file: str | None, as_json: bool, as_csv: bool) -> None:
    """Summary and breakdown of the run in DIRECTORY (pegasus-statistics)."""
    stats = workflow_statistics(directory, dag_file)
    click.echo(
        render_json(stats) if as_json else render_csv(stats) if as_csv else render_text(stats), nl=False
    )
