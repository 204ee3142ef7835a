"""What earlier runs say about the next one: task runtimes and the delays around each job.

``task_history(dirs)``: the durations of every successful invocation per transformation (full
``namespace::name:version``), and of every successful data job (stage-in, stage-out, ...) per job
type, over the runs in ``dirs`` -- what ``sheaf predict`` takes a task's runtime from when no
profile gives one.

``run_timings(dir)``: per successful job attempt of one run, the moments the overhead model is
fitted from: when the node became ready (its last parent done; the run's start for a root), was
submitted, started, ended and was done, with its task count, the seconds its tasks ran, and whether
it was some node's last parent.  A node is done at its POST script's end, else at its job's.

Both read the events databases only (a run whose database is missing is caught up from its
journal first; a directory without a run is skipped).
"""

from __future__ import annotations

__all__ = ["JobTiming", "RunTimings", "run_timings", "task_history"]

import os
from collections.abc import Iterable
from dataclasses import dataclass

from sheaf.engine import find_dag, state_paths
from sheaf.errors import UsageError
from sheaf.monitor._events import open_events
from sheaf.planner import DATA_KINDS

_DATA_TYPES = tuple(sorted(DATA_KINDS))


@dataclass(frozen=True, slots=True)
class JobTiming:
    job: str
    type: str
    transformation: str | None
    tasks: int
    task_seconds: float
    ready: float
    submitted: float
    started: float
    ended: float
    done: float
    releases: bool = False  # some node became ready when this one was done (it was its last parent)


@dataclass(frozen=True, slots=True)
class RunTimings:
    directory: str
    started: float
    ended: float
    jobs: tuple[JobTiming, ...]

    @property
    def makespan(self) -> float:
        return self.ended - self.started


def _has_run(directory: str) -> str | None:
    try:
        dag = find_dag(directory)
    except UsageError:
        return None
    return dag if os.path.exists(state_paths(dag)["journal"]) else None


def task_history(directories: Iterable[str]) -> dict[str, list[float]]:
    """Successful invocations' durations per transformation, data jobs' per type (module docstring)."""
    out: dict[str, list[float]] = {}
    for directory in directories:
        dag = _has_run(directory)
        if dag is None:
            continue
        view = open_events(directory, dag)
        try:
            for name, seconds in view.conn.execute(
                    "SELECT transformation, remote_duration FROM invocation "
                    "WHERE exitcode = 0 AND transformation IS NOT NULL"):
                out.setdefault(str(name), []).append(float(seconds))
            marks = ",".join("?" * len(_DATA_TYPES))
            for kind, seconds in view.conn.execute(
                    f"SELECT j.type_desc, i.end - i.start FROM job_instance i JOIN job j USING (job_id) "
                    f"WHERE i.exitcode = 0 AND i.start IS NOT NULL AND i.end IS NOT NULL "
                    f"AND j.type_desc IN ({marks})", _DATA_TYPES):
                out.setdefault(str(kind), []).append(max(0.0, float(seconds)))
        finally:
            view.conn.close()
    return out


_TIMINGS = """
SELECT j.exec_job_id, j.type_desc, j.transformation, i.job_instance_id, i.submitted, i.start, i.end,
       (SELECT count(*) FROM invocation v WHERE v.job_instance_id = i.job_instance_id),
       (SELECT coalesce(sum(v.remote_duration), 0) FROM invocation v
            WHERE v.job_instance_id = i.job_instance_id),
       (SELECT max(s.timestamp) FROM jobstate s WHERE s.job_instance_id = i.job_instance_id
            AND s.state IN ('POST_SCRIPT_TERMINATED', 'POST_SCRIPT_SUCCESS', 'JOB_SUCCESS'))
FROM job_instance i JOIN job j USING (job_id)
WHERE i.exitcode = 0 AND i.submitted IS NOT NULL AND i.start IS NOT NULL AND i.end IS NOT NULL
ORDER BY i.job_instance_id
"""


def run_timings(directory: str) -> RunTimings:
    """The timings of the run in ``directory`` (module docstring); ``UsageError`` without a run."""
    dag = _has_run(directory)
    if dag is None:
        raise UsageError(f"{directory}: no run to calibrate from (no DAG with an engine journal)")
    view = open_events(directory, dag)
    try:
        row = view.one("SELECT coalesce(run_started, started), coalesce(ended, last_time) FROM workflow")
        parents: dict[str, list[str]] = {}
        for parent, child in view.conn.execute("SELECT parent, child FROM job_edge"):
            parents.setdefault(str(child), []).append(str(parent))
        rows = view.conn.execute(_TIMINGS).fetchall()
    finally:
        view.conn.close()
    if not row or row[0] is None or not rows:
        raise UsageError(f"{directory}: the run recorded no finished job to calibrate from")
    start = float(row[0])
    done: dict[str, float] = {}
    for name, _, _, _, _, _, end, _, _, finished in rows:
        done[str(name)] = float(finished if finished is not None else end)
    last_parents = {max(known, key=done.__getitem__) for child in done
                    if (known := [p for p in parents.get(child, ()) if p in done])}
    jobs = []
    for name, kind, transformation, _, submitted, started, end, tasks, seconds, finished in rows:
        ready = max((done[p] for p in parents.get(str(name), ()) if p in done), default=start)
        jobs.append(JobTiming(str(name), str(kind), transformation, int(tasks), float(seconds), ready,
                              float(submitted), float(started), float(end),
                              float(finished if finished is not None else end), str(name) in last_parents))
    ended = max(float(row[1] or 0.0), *(t.done for t in jobs))
    return RunTimings(os.path.abspath(directory), start, ended, tuple(jobs))
