"""pegasus-plots from the events databases: a Gantt chart of jobs and tasks, slots in use over time,
and the time per transformation -- as PNG (matplotlib) and as one self-contained HTML file.

The HTML file works offline: the charts are inline SVG (each bar's ``<title>`` is its tooltip) and
the only script is inline (it hides or shows the tasks' rows); nothing is fetched from a network.
Files go to ``DIR/plots/`` (pegasus-plots' default): ``gantt.png``, ``slots.png``,
``breakdown.png`` and ``index.html``; when ``sheaf predict`` left its schedule in ``prediction.json``
(plans of up to 20,000 jobs), ``gantt-predicted.png`` too and the predicted chart on the page, on the
same colours, beside the real one.  Hierarchical runs are drawn whole: a sub-workflow's jobs are
named ``<sub-workflow job>/<job>``.  Times are seconds since the run's first submission.
"""

from __future__ import annotations

__all__ = ["PlotData", "plot_data", "predicted_data", "write_plots"]

import html
import os
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf.errors import UsageError
from sheaf.monitor._statistics import read_prediction, workflow_statistics
from sheaf.monitor._status import tree_views

MAX_TASK_ROWS = 300  # more tasks than this are drawn on their cluster's row: a chart stays readable
_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


@dataclass(frozen=True, slots=True)
class Bar:
    row: str
    start: float
    end: float
    group: str  # the transformation (colour)
    task: bool
    ok: bool


@dataclass(slots=True)
class PlotData:
    label: str
    bars: list[Bar] = field(default_factory=list)
    slots: list[tuple[float, int]] = field(default_factory=list)  # (time, attempts running from then on)
    breakdown: list[tuple[str, float, int]] = field(default_factory=list)  # (transformation, seconds, runs)


_JOBS = """
SELECT j.exec_job_id, coalesce(j.transformation, j.type_desc), i.start, i.end,
       coalesce(i.exitcode, 0) = 0 AND i.signal IS NULL, i.job_instance_id, j.clustered
FROM job_instance i JOIN job j USING (job_id) WHERE i.start IS NOT NULL AND i.end IS NOT NULL
ORDER BY i.start
"""
_TASKS = """
SELECT coalesce(abs_task_id, executable, '-'), coalesce(transformation, executable, '-'), start_time,
       remote_duration, exitcode
FROM invocation WHERE job_instance_id = ? ORDER BY task_submit_seq
"""


def plot_data(directory: str, dag_file: str | None = None) -> PlotData:
    views = tree_views(directory, dag_file)
    try:
        label = str(views[0].one("SELECT dax_label FROM workflow WHERE wf_id = 1")[0] or "")
        bars: list[Bar] = []
        for index, view in enumerate(views):
            prefix = "" if index == 0 else os.path.basename(view.directory) + "/"
            for name, group, start, end, ok, iid, clustered in view.conn.execute(_JOBS).fetchall():
                bars.append(Bar(prefix + name, start, end, group, False, bool(ok)))
                if clustered:  # a cluster's tasks get rows of their own (below, on its row when many)
                    tasks = view.conn.execute(_TASKS, (iid,)).fetchall()
                    bars += [Bar(f"{prefix}{name}:{t}", s, s + d, g, True, c == 0) for t, g, s, d, c in tasks]
        if sum(b.task for b in bars) > MAX_TASK_ROWS:
            bars = [replace(b, row=b.row.rpartition(":")[0]) if b.task else b for b in bars]
    finally:
        for view in views:
            view.conn.close()
    data = PlotData(label, bars)
    if bars:
        origin = min(b.start for b in bars)
        data.bars = [Bar(b.row, b.start - origin, b.end - origin, b.group, b.task, b.ok) for b in bars]
        data.slots = _slots([b for b in data.bars if not b.task])
    stats = workflow_statistics(directory, dag_file)
    totals: dict[str, list[float]] = {}
    for row in stats.transformations:
        entry = totals.setdefault(row.transformation, [0.0, 0])
        entry[0] += row.total
        entry[1] += row.count
    data.breakdown = sorted(((n, v[0], int(v[1])) for n, v in totals.items()), key=lambda r: -r[1])
    return data


def predicted_data(directory: str) -> PlotData | None:
    """The predicted schedule ``sheaf predict`` recorded for ``directory``, as bars; None without one."""
    prediction = read_prediction(directory, schedule=True)
    rows = (prediction or {}).get("schedule")
    if not prediction or not rows:
        return None
    label = (f"predicted by sheaf predict: {prediction['makespan_s']:.1f} s "
             f"(p10-p90 {prediction['low_s']:.1f}-{prediction['high_s']:.1f} s)")
    bars = [Bar(job, float(start), float(end), group, False, True) for job, group, start, end in rows]
    return PlotData(label, bars, _slots(bars))


def _slots(jobs: list[Bar]) -> list[tuple[float, int]]:
    """The number of attempts running, as a step function (a sweep over start/end points)."""
    points = sorted([(b.start, 1) for b in jobs] + [(b.end, -1) for b in jobs])
    out: list[tuple[float, int]] = [(0.0, 0)]
    running = 0
    for when, step in points:
        running += step
        if out[-1][0] == when:
            out[-1] = (when, running)
        else:
            out.append((when, running))
    return out


def _colours(data: PlotData, *more: PlotData) -> dict[str, str]:
    groups = sorted({b.group for d in (data, *more) for b in d.bars} | {n for n, _, _ in data.breakdown})
    return {g: _COLOURS[i % len(_COLOURS)] for i, g in enumerate(groups)}


# ---- HTML (inline SVG) ----------------------------------------------------------------------------


def _svg_gantt(data: PlotData, colours: dict[str, str], chart: str = "gantt") -> str:
    rows = list(dict.fromkeys(b.row for b in data.bars))
    index = {r: i for i, r in enumerate(rows)}
    end = max((b.end for b in data.bars), default=1.0) or 1.0
    width, left, h = 900, 260, 14
    scale = (width - left - 10) / end
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(rows) * h + 30}" '
         f'id="{chart}" role="img" aria-label="Gantt chart of jobs and tasks">')
    ]
    for r in rows:
        task = ":" in r.split("/")[-1]
        y = index[r] * h
        out.append(
            f'<text x="4" y="{y + 11}" font-size="10" class="{"task" if task else "job"}">'
            f"{html.escape(r[-40:])}</text>"
        )
    for b in data.bars:
        y = index[b.row] * h + 2
        x, w = left + b.start * scale, max(1.0, (b.end - b.start) * scale)
        stroke = "" if b.ok else ' stroke="#d00" stroke-width="2"'
        out.append(
            f'<rect class="{"task" if b.task else "job"}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
            f'height="{h - 4}" fill="{colours[b.group]}"{stroke}><title>{html.escape(b.row)} '
            f"({html.escape(b.group)}): {b.start:.3f}-{b.end:.3f} s{'' if b.ok else ', failed'}"
            "</title></rect>"
        )
    out.append(
        f'<text x="{left}" y="{len(rows) * h + 20}" font-size="10">0 s</text>'
        f'<text x="{width - 60}" y="{len(rows) * h + 20}" font-size="10">{end:.2f} s</text></svg>'
    )
    return "".join(out)


def _svg_slots(data: PlotData) -> str:
    width, height = 900, 200
    end = max((t for t, _ in data.slots), default=1.0) or 1.0
    top = max((n for _, n in data.slots), default=1) or 1
    points = []
    following = [*data.slots[1:], (end, 0)] if data.slots else []
    for (t, n), (t2, _) in zip(data.slots, following, strict=True):
        y = height - 20 - n / top * (height - 40)
        points += [
            f"{40 + t / end * (width - 50):.1f},{y:.1f}",
            f"{40 + t2 / end * (width - 50):.1f},{y:.1f}",
        ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" id="slots" role="img" '
        f'aria-label="slots in use over time"><polyline fill="none" stroke="#4e79a7" stroke-width="2" '
        f'points="{" ".join(points)}"/><text x="2" y="24" font-size="10">{top}</text>'
        f'<text x="2" y="{height - 20}" font-size="10">0</text>'
        f'<text x="{width - 60}" y="{height - 4}" font-size="10">{end:.2f} s</text></svg>'
    )


def _svg_breakdown(data: PlotData, colours: dict[str, str]) -> str:
    width, h, left = 900, 18, 260
    top = max((s for _, s, _ in data.breakdown), default=1.0) or 1.0
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(data.breakdown) * h + 10}" '
         'id="breakdown" role="img" aria-label="time per transformation">')
    ]
    for i, (name, seconds, runs) in enumerate(data.breakdown):
        w = max(1.0, seconds / top * (width - left - 120))
        out.append(
            f'<text x="4" y="{i * h + 13}" font-size="11">{html.escape(name[-40:])}</text>'
            f'<rect x="{left}" y="{i * h + 3}" width="{w:.1f}" height="{h - 6}" fill="{colours[name]}">'
            f"<title>{html.escape(name)}: {seconds:.3f} s in {runs} run(s)</title></rect>"
            f'<text x="{left + w + 4:.1f}" y="{i * h + 13}" font-size="11">{seconds:.2f} s</text>'
        )
    return "".join(out) + "</svg>"


_SCRIPT = """
document.getElementById('tasks').addEventListener('change', function (e) {
  document.querySelectorAll('#gantt .task').forEach(function (n) {
    n.style.display = e.target.checked ? '' : 'none'; });
});
"""


def render_html(data: PlotData, predicted: PlotData | None = None) -> str:
    colours = _colours(data, *((predicted,) if predicted else ()))
    title = html.escape(f"sheaf plots: {data.label}")
    forecast = (f"<h2>Jobs over time, {html.escape(predicted.label)}</h2>"
                f"{_svg_gantt(predicted, colours, 'gantt-predicted')}" if predicted else "")
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>'
        "<style>body{font-family:sans-serif;margin:1em}h2{font-size:1.1em}</style></head><body>"
        f"<h1>{title}</h1><h2>Jobs and tasks over time</h2>"
        '<label><input type="checkbox" id="tasks" checked> show the tasks of clustered jobs</label><br>'
        f"{_svg_gantt(data, colours)}{forecast}<h2>Slots in use over time</h2>{_svg_slots(data)}"
        f"<h2>Time per transformation</h2>{_svg_breakdown(data, colours)}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


# ---- PNG (matplotlib) -----------------------------------------------------------------------------


def _png(data: PlotData, out_dir: str, predicted: PlotData | None = None) -> list[str]:
    import matplotlib  # here: heavy, and only ``sheaf plots`` needs it

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    colours = _colours(data, *((predicted,) if predicted else ()))
    written = [_png_gantt(plt, data, colours, out_dir, "gantt.png", f"{data.label}: jobs and tasks")]
    if predicted is not None:
        written.append(_png_gantt(plt, predicted, colours, out_dir, "gantt-predicted.png",
                                  f"{data.label}: jobs, {predicted.label}"))
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.step([t for t, _ in data.slots], [n for _, n in data.slots], where="post")
    ax.set_xlabel("seconds")
    ax.set_ylabel("slots in use")
    written.append(_save(fig, out_dir, "slots.png"))
    fig, ax = plt.subplots(figsize=(10, max(2.0, 0.35 * len(data.breakdown) + 1)))
    ax.barh(
        [n for n, _, _ in data.breakdown],
        [s for _, s, _ in data.breakdown],
        color=[colours[n] for n, _, _ in data.breakdown],
    )
    ax.invert_yaxis()
    ax.set_xlabel("seconds (all runs)")
    written.append(_save(fig, out_dir, "breakdown.png"))
    plt.close("all")
    return written


def _png_gantt(plt: Any, data: PlotData, colours: dict[str, str], out_dir: str, name: str, title: str) -> str:
    rows = list(dict.fromkeys(b.row for b in data.bars))
    index = {r: i for i, r in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(10, max(2.0, 0.25 * len(rows) + 1)))
    by_row: dict[str, list[Bar]] = {}
    for b in data.bars:
        by_row.setdefault(b.row, []).append(b)
    for row, bars in by_row.items():  # one call per row: 10^4 bars draw in a second
        thin = 0.25 if any(b.task for b in bars) and not all(b.task for b in bars) else 0.4
        ax.broken_barh([(b.start, max(b.end - b.start, 1e-6)) for b in bars], (index[row] - thin, 2 * thin),
                       facecolors=[colours[b.group] for b in bars],
                       edgecolors=["red" if not b.ok else "none" for b in bars])
    ax.set_yticks(range(len(rows)), [r[-40:] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first job started")
    ax.set_title(title)
    return _save(fig, out_dir, name)


def _save(fig: object, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(path + ".tmp", dpi=100, format="png")  # type: ignore[attr-defined]
    os.replace(path + ".tmp", path)  # never a half-written picture
    return path


def write_plots(directory: str, dag_file: str | None = None, out_dir: str | None = None) -> list[str]:
    """Write the plots of the run in ``directory``; returns the files written."""
    data = plot_data(directory, dag_file)
    out_dir = out_dir or os.path.join(directory, "plots")
    predicted = predicted_data(directory)
    text = render_html(data, predicted)  # the page made before any file is written
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"{out_dir}: not a directory, the plots cannot be written there")
    os.makedirs(out_dir, exist_ok=True)
    written = _png(data, out_dir, predicted)
    page = os.path.join(out_dir, "index.html")
    with open(page + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(page + ".tmp", page)
    return [*written, page]
