"""pegasus-statistics from the events databases of a run and its sub-workflows.

Definitions (pegasus-statistics' legends, applied to sheaf's records):

* **Tasks** are the abstract workflow's jobs (``task``); a task's runs are its ``invocation`` rows
  (a cluster's tasks come from the seqexec/PMC records).  Succeeded/Failed: its last run's exit code
  is 0 / not 0; Incomplete: Total minus both; Retries: runs beyond the first.
* **Jobs** are the DAG's nodes other than sub-workflows, **Sub-Workflows** the SUBDAG and
  sub-workflow jobs: Succeeded/Failed by the node's state, Retries: attempts beyond the first.
  Runs and attempts count over every engine run: a rescue rerun's are retries of the earlier runs'.
* **Workflow wall time**: each engine run's begin to end (the last event, for a run that was
  killed), summed over the runs (a rescue or recovery adds its own), of the top workflow.
* **Cumulative job wall time**: the jobs' runtimes as the jobs report them: the sum of a
  clustered job's task durations, else the job's own; **as seen from submit side**: every attempt
  from submission to its end as the engine saw it.  **Badput**: the same over failed attempts only.
* **Breakdown**: per transformation (full ``namespace::name:version``) and outcome, the runs'
  count, min, max, mean and total runtime.  Auxiliary jobs count under Pegasus's names for them
  (``pegasus::dirmanager``, ``pegasus::transfer``, ``pegasus::cleanup``, ``pegasus::rc-client``);
  sub-workflows under ``condor::dagman``.
* **Hosts**: attempts and task runs per host, with their runtimes.

Hierarchical runs are summed across every sub-workflow that has an events database.
"""

from __future__ import annotations

__all__ = [
    "HostRow",
    "Statistics",
    "SummaryRow",
    "TransformationRow",
    "read_prediction",
    "workflow_statistics",
]

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from sheaf._fields import check_path
from sheaf.monitor._events import RunView
from sheaf.monitor._meta import SUBWORKFLOW_TRANSFORMATION
from sheaf.monitor._status import tree_views

_AUX = {
    "create_dir": "pegasus::dirmanager",
    "stage_in": "pegasus::transfer",
    "stage_out": "pegasus::transfer",
    "inter_site": "pegasus::transfer",
    "cleanup": "pegasus::cleanup",
    "register": "pegasus::rc-client",
    "subworkflow": SUBWORKFLOW_TRANSFORMATION,
    "subdag": SUBWORKFLOW_TRANSFORMATION,
}
_SUB = ("subworkflow", "subdag")


@dataclass(slots=True)
class SummaryRow:
    type: str
    succeeded: int = 0
    failed: int = 0
    incomplete: int = 0
    total: int = 0
    retries: int = 0

    @property
    def total_retries(self) -> int:
        return self.succeeded + self.failed + self.retries

    def add(self, other: SummaryRow) -> None:
        self.succeeded += other.succeeded
        self.failed += other.failed
        self.incomplete += other.incomplete
        self.total += other.total
        self.retries += other.retries


@dataclass(frozen=True, slots=True)
class TransformationRow:
    transformation: str
    type: str  # successful | failed
    count: int
    min: float
    max: float
    mean: float
    total: float


@dataclass(frozen=True, slots=True)
class HostRow:
    host: str
    jobs: int
    job_runtime: float
    tasks: int
    task_runtime: float


@dataclass(slots=True)
class Statistics:
    """pegasus-statistics of a run and its sub-workflows (``sheaf.app.statistics``, ``sheaf
    statistics``); the module docstring defines each figure.

    ``label``: the workflow's name (its plan's label); ``wf_uuid``: its id (the plan's, else the
    first run's).  ``workflows``: the events databases summed (the run's and its sub-workflows').
    ``summary``: the Tasks, Jobs and Sub-Workflows rows, in that order.  ``wall_time``: the
    workflow wall time, seconds (None before any run).  ``job_wall_time``, ``submit_wall_time``:
    the cumulative job wall time, as the jobs report it and as seen from the submit side;
    ``badput``, ``submit_badput``: the same over failed attempts.  ``transformations``: the
    breakdown per transformation and outcome.  ``hosts``: the attempts and task runs per host.
    ``predicted``: what ``sheaf predict`` recorded before the run (``prediction.json``: makespan,
    interval, backend, slots), None when it did not."""

    label: str
    wf_uuid: str
    workflows: int
    summary: list[SummaryRow]
    wall_time: float | None
    job_wall_time: float = 0.0
    submit_wall_time: float = 0.0
    badput: float = 0.0
    submit_badput: float = 0.0
    transformations: list[TransformationRow] = field(default_factory=list)
    hosts: list[HostRow] = field(default_factory=list)
    predicted: dict[str, Any] | None = None  # prediction.json: what ``sheaf predict`` said before the run


def read_prediction(directory: str, schedule: bool = False) -> dict[str, Any] | None:
    """``prediction.json`` of a submit directory (``sheaf predict`` writes it): its makespan and interval,
    backend and slots, and with ``schedule`` the predicted schedule's ``[job, group, start, end]`` rows
    that are well formed; None when absent or not such a record."""
    try:
        with open(os.path.join(directory, "prediction.json"), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    keys = ("makespan_s", "low_s", "high_s")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), int | float) for k in keys):
        return None
    out = {k: data[k] for k in (*keys, "backend", "slots", "predicted_at") if k in data}
    rows = data.get("schedule")
    if schedule and isinstance(rows, list):
        out["schedule"] = [row for row in rows if isinstance(row, list) and len(row) == 4
                           and isinstance(row[0], str) and isinstance(row[1], str)
                           and all(isinstance(v, int | float) and math.isfinite(v) for v in row[2:])]
    return out


#: the jobs of sub-workflows: their rows are Sub-Workflows, and their tasks (``condor::dagman``, a child's
#: planner) are no Tasks, as pegasus-statistics counts tasks and jobs without them
_SUB_JOBS = "type_desc IN ('subworkflow', 'subdag')"


def _tasks(view: RunView) -> SummaryRow:
    total = int(view.one(f"SELECT count(*) FROM task t JOIN job j USING (job_id) WHERE NOT j.{_SUB_JOBS}")[0])
    runs = view.conn.execute(
        "SELECT v.abs_task_id, v.exitcode FROM invocation v JOIN job_instance i USING (job_instance_id) "
        f"JOIN job j USING (job_id) WHERE v.abs_task_id IS NOT NULL AND NOT j.{_SUB_JOBS} "
        "ORDER BY v.invocation_id"
    )
    last: dict[str, int] = {}
    count = 0
    for task, code in runs:
        last[task] = code
        count += 1
    ok = sum(1 for c in last.values() if c == 0)
    failed = len(last) - ok
    total = max(total, len(last))
    return SummaryRow("Tasks", ok, failed, total - ok - failed, total, count - len(last))


def _jobs(view: RunView, sub: bool) -> SummaryRow:
    where = _SUB_JOBS if sub else f"NOT ({_SUB_JOBS})"
    ok, failed, total = view.one(
        f"SELECT coalesce(sum(state = 'done'), 0), coalesce(sum(state = 'failed'), 0), "
        f"count(*) FROM job WHERE {where}"
    )
    attempts, tried = view.one(
        f"SELECT count(*), count(DISTINCT i.job_id) FROM job_instance i "
        f"JOIN job j USING (job_id) WHERE {where}"
    )
    row = SummaryRow(
        "Sub-Workflows" if sub else "Jobs",
        int(ok),
        int(failed),
        0,
        int(total),
        int(attempts) - int(tried),
    )
    row.incomplete = row.total - row.succeeded - row.failed
    return row


def _wall_time(view: RunView) -> float | None:
    rows = view.conn.execute("SELECT state, timestamp FROM workflowstate ORDER BY rowid").fetchall()
    last = view.one("SELECT last_time FROM workflow WHERE wf_id = 1")
    total, begun = 0.0, None
    for state, stamp in rows:
        if state == "WORKFLOW_STARTED":
            if begun is not None and last:
                total += max(0.0, stamp - begun)  # a run that was killed: up to the next one
            begun = stamp
        elif begun is not None:
            total += stamp - begun
            begun = None
    if begun is not None and last and last[0] is not None:
        total += max(0.0, float(last[0]) - begun)
    return total if rows else None


_RUNS = """
SELECT coalesce(j.transformation, ''), j.type_desc, coalesce(i.local_duration, 0),
       (coalesce(i.exitcode, 0) != 0 OR i.signal IS NOT NULL), coalesce(h.hostname, '-'),
       (SELECT count(*) FROM invocation v WHERE v.job_instance_id = i.job_instance_id)
FROM job_instance i JOIN job j USING (job_id) LEFT JOIN host h USING (host_id)
WHERE i.end IS NOT NULL
"""


def _add_times(
    view: RunView, stats: Statistics, runs: dict[tuple[str, bool], list[float]], hosts: dict[str, list[float]]
) -> None:
    for tr, kind, local, bad, host, tasks in view.conn.execute(_RUNS):
        stats.submit_wall_time += local
        stats.submit_badput += local if bad else 0.0
        entry = hosts.setdefault(host, [0, 0.0, 0, 0.0])
        entry[0] += 1
        entry[1] += local
        if tasks:
            continue  # its tasks are counted below, as the job reported them
        stats.job_wall_time += local
        stats.badput += local if bad else 0.0
        runs.setdefault((_AUX.get(kind) or tr or "-", not bad), []).append(local)
    for tr, seconds, code, host in view.conn.execute(
        "SELECT coalesce(v.transformation, v.executable, '-'), v.remote_duration, v.exitcode, "
        "coalesce(h.hostname, '-') FROM invocation v LEFT JOIN host h USING (host_id)"
    ):
        stats.job_wall_time += seconds
        stats.badput += seconds if code else 0.0
        runs.setdefault((tr, code == 0), []).append(seconds)
        entry = hosts.setdefault(host, [0, 0.0, 0, 0.0])
        entry[2] += 1
        entry[3] += seconds


def workflow_statistics(directory: str, dag_file: str | None = None) -> Statistics:
    """The statistics of the run in ``directory`` and its sub-workflows."""
    check_path("directory", directory)
    views = tree_views(directory, dag_file)
    try:
        top = views[0]
        label, uuid = top.one("SELECT dax_label, wf_uuid FROM workflow WHERE wf_id = 1") or ("", "")
        summary = [SummaryRow("Tasks"), SummaryRow("Jobs"), SummaryRow("Sub-Workflows")]
        stats = Statistics(str(label or ""), str(uuid or ""), len(views), summary, _wall_time(top))
        runs: dict[tuple[str, bool], list[float]] = {}
        hosts: dict[str, list[float]] = {}
        for view in views:
            for row, part in zip(summary, (_tasks(view), _jobs(view, False), _jobs(view, True)), strict=True):
                row.add(part)
            _add_times(view, stats, runs, hosts)
    finally:
        for view in views:
            view.conn.close()
    stats.transformations = [
        TransformationRow(
            name, "successful" if ok else "failed", len(v), min(v), max(v), sum(v) / len(v), sum(v)
        )
        for (name, ok), v in sorted(runs.items(), key=lambda kv: (kv[0][0], not kv[0][1]))
    ]
    stats.hosts = [HostRow(h, int(v[0]), v[1], int(v[2]), v[3]) for h, v in sorted(hosts.items())]
    stats.predicted = read_prediction(os.path.dirname(top.dag))
    return stats
