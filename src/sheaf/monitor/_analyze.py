"""pegasus-analyzer from the events databases: why the jobs of a run (and its sub-workflows) failed.

Summary: the jobs' counts -- total, succeeded, failed, held (an attempt the pool put on hold and
removed), unsubmitted (never submitted).  Then, for each failed job, its count of attempts over every
engine run (a rescue rerun's follow the earlier runs') and its last attempt: the state
it ended in, its exit code or signal, the hold reason, the engine's reason, its site and host, the
submit description and its files, the tails of its stdout and stderr (kept by the loader when the
attempt failed, before a retry overwrote them), the failed tasks of a cluster, and the command that
reruns the job by hand.  A failed sub-workflow is followed into its own run.
"""

from __future__ import annotations

__all__ = ["Analysis", "FailedJob", "FailedTask", "analyze"]

import os
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf.monitor._events import RunView
from sheaf.monitor._status import tree_views


@dataclass(frozen=True, slots=True)
class FailedTask:
    task: str | None
    transformation: str | None
    exitcode: int
    duration: float


@dataclass(frozen=True, slots=True)
class FailedJob:
    workflow: str  # the submit directory of the (sub-)workflow the job belongs to
    name: str
    type: str
    transformation: str | None
    site: str | None
    attempts: int
    exitcode: int | None
    signal: int | None
    held_reason: str | None
    reason: str | None
    host: str | None
    submit_file: str | None
    submit_text: str | None
    stdout_file: str | None
    stderr_file: str | None
    stdout_text: str | None
    stderr_text: str | None
    command: str | None
    tasks: tuple[FailedTask, ...] = ()


@dataclass(slots=True)
class Analysis:
    submit_dir: str
    state: str
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    held: int = 0
    unsubmitted: int = 0
    jobs: list[FailedJob] = field(default_factory=list)


_FAILED = """
SELECT j.exec_job_id, j.type_desc, j.transformation, j.site,
       (SELECT count(*) FROM job_instance x WHERE x.job_id = j.job_id),
       i.exitcode, i.signal, i.held_reason, coalesce(i.reason, j.reason), h.hostname, i.submit_file,
       i.submit_text, i.stdout_file, i.stderr_file, i.stdout_text, i.stderr_text, i.command,
       i.job_instance_id, j.subwf_dir
FROM job j
LEFT JOIN job_instance i ON i.job_instance_id = (SELECT max(job_instance_id) FROM job_instance y
                                                 WHERE y.job_id = j.job_id)
LEFT JOIN host h USING (host_id)
WHERE j.state = 'failed' ORDER BY j.job_id
"""  # FailedJob's fields in order, then the attempt's id and the sub-workflow's place


def _tasks(view: RunView, iid: int | None) -> tuple[FailedTask, ...]:
    if iid is None:
        return ()
    rows = view.conn.execute(
        "SELECT abs_task_id, transformation, exitcode, remote_duration FROM invocation "
        "WHERE job_instance_id = ? AND exitcode != 0 ORDER BY task_submit_seq",
        (iid,),
    )
    return tuple(FailedTask(*row) for row in rows)


def _failed(view: RunView) -> list[FailedJob]:
    out = []
    for row in view.conn.execute(_FAILED).fetchall():
        *fields, iid, sub = row
        values: tuple[Any, ...] = (view.directory, *fields, _tasks(view, iid))
        job = FailedJob(*values)
        if job.type in ("subworkflow", "subdag") and job.command is None:
            where = os.path.dirname(sub) if job.type == "subdag" else view.directory
            dag = f" --dag {sub}" if job.type == "subdag" else ""
            job = replace(job, command=f"sheaf run {where}{dag}")
        out.append(job)
    return out


def _count(view: RunView, result: Analysis) -> None:
    total, done, failed, unsubmitted = view.one(
        "SELECT count(*), coalesce(sum(state = 'done'), 0), coalesce(sum(state = 'failed'), 0), "
        "coalesce(sum(NOT EXISTS (SELECT 1 FROM job_instance i WHERE i.job_id = job.job_id)), 0) FROM job"
    )
    held = view.one("SELECT count(DISTINCT job_id) FROM job_instance WHERE held_reason IS NOT NULL")[0]
    result.total += int(total)
    result.succeeded += int(done)
    result.failed += int(failed)
    result.unsubmitted += int(unsubmitted)
    result.held += int(held)


def analyze(directory: str, dag_file: str | None = None) -> Analysis:
    """The failed jobs of the run in ``directory`` and of its sub-workflows."""
    views = tree_views(directory, dag_file)
    top = views[0]
    try:
        ended, ok = top.one("SELECT ended, succeeded FROM workflow WHERE wf_id = 1") or (None, None)
        state = "running" if ended is None else ("succeeded" if ok else "failed")
        result = Analysis(top.directory, state)
        for view in views:
            _count(view, result)
            result.jobs.extend(_failed(view))
    finally:
        for view in views:
            view.conn.close()
    return result
