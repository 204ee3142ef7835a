"""Workflow status (pegasus-status), read from the events database after catching it up.

Counts are per node state as the journal left it; nodes it never mentions are ``waiting`` (and
``futile`` once a failed ancestor makes them unrunnable, from the DAG's edges in ``job_edge``).
Journal lines the loader could not use are listed in ``damage``; status never refuses to report.
The long view adds what pegasus-status -l shows: the tree of sub-workflows (SUBDAG EXTERNAL nodes
and sub-workflow jobs whose nested run has an events database), each with its counts, the jobs
running now, and held jobs with their reasons.  Reading is safe while the engine appends: the
journal is read up to its last complete line, the database is SQLite in WAL mode.
"""

from __future__ import annotations

__all__ = ["Running", "SubStatus", "WorkflowStatus", "age", "sub_workflows", "tree_views", "workflow_status"]

import glob
import os
import time
from dataclasses import dataclass

from sheaf._fields import check_path
from sheaf.engine import STATES, state_paths
from sheaf.errors import InputError, UsageError
from sheaf.monitor._events import RunView, open_events


@dataclass(frozen=True, slots=True)
class Running:
    node: str
    attempt: int
    sched_id: str | None
    since: float | None
    where: str | None


@dataclass(frozen=True, slots=True)
class WorkflowStatus:
    """A run's status (``sheaf.app.status``, ``sheaf status``), read from its events database.

    ``dag``: the DAG file (absolute).  ``state``: ``not started`` (no engine run yet), ``running``,
    ``interrupted`` (the latest run did not end and no engine holds its lock: it was killed),
    ``succeeded`` or ``failed``.  ``total``: the DAG's nodes.  ``counts``: the nodes per engine state
    (each of ``sheaf.engine.STATES``; nodes never mentioned are ``waiting``), and ``futile``: those
    that can never run (a failed ancestor), when there are any.  ``failed``: (node, reason) of each
    failed node.  ``retries``: the node retries (``RETRY``) over every engine run.  ``runs``: the
    engine runs.  ``source``: where the latest run started from (``fresh``, ``recovery``,
    ``rescue:<file>``), None before any run.  ``elapsed``: the latest run's seconds, from its
    begin to its last event.  ``rescue``: the absolute path of the rescue DAG the latest run wrote
    (as ``RunResult.rescue``), None when it wrote none or has not ended.  ``damage``: a message per
    damaged journal line (skipped: the counts may miss what it said).  ``running``: the nodes whose
    job is submitted now, with attempt, HTCondor id, since when and where.  ``held``: (node, hold
    reason) of each attempt that was held."""

    dag: str
    state: str  # not started | running | interrupted | succeeded | failed
    total: int
    counts: dict[str, int]
    failed: tuple[tuple[str, str | None], ...]
    retries: int
    runs: int
    source: str | None
    elapsed: float | None
    rescue: str | None
    damage: tuple[str, ...] = ()  # damaged journal lines (skipped): counts may miss what they said
    running: tuple[Running, ...] = ()
    held: tuple[tuple[str, str], ...] = ()  # (node, hold reason) of attempts that were held


@dataclass(frozen=True, slots=True)
class SubStatus:
    node: str
    depth: int
    status: WorkflowStatus


def _futile(view: RunView, states: dict[str, str]) -> set[str]:
    """Nodes that can never run: a descendant of a failed node (iterative, no recursion)."""
    children: dict[str, list[str]] = {}
    for parent, child in view.conn.execute("SELECT parent, child FROM job_edge"):
        children.setdefault(parent, []).append(child)
    stack = [n for n, s in states.items() if s == "failed"]
    seen: set[str] = set()
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen and states.get(child, "waiting") == "waiting":
                seen.add(child)
                stack.append(child)
    return seen


def _running(view: RunView) -> tuple[Running, ...]:
    rows = view.conn.execute(
        "SELECT j.exec_job_id, j.attempt, i.sched_id, coalesce(i.start, i.submitted), i.slot FROM job j "
        "LEFT JOIN job_instance i ON i.job_id = j.job_id "
        "AND i.job_submit_seq = j.earlier_attempts + j.attempt + 1 "
        "WHERE j.state = 'submitted' ORDER BY j.exec_job_id")
    return tuple(Running(*row) for row in rows)


def _status(view: RunView) -> WorkflowStatus:
    row = view.one("SELECT total, epochs, source, run_started, last_time, ended, succeeded, rescue, retries "
                   "FROM workflow WHERE wf_id = 1")
    total, epochs, source, run_started, last_time, ended, succeeded, rescue, retries = row or (
        0, 0, None, None, None, None, None, None, 0)
    states = dict(view.conn.execute("SELECT exec_job_id, state FROM job WHERE state != 'waiting'").fetchall())
    counts: dict[str, int] = dict.fromkeys(STATES, 0)
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    counts["waiting"] = max(0, int(total or 0) - len(states))
    futile = _futile(view, states) if counts["failed"] else set()
    if futile:
        counts["futile"] = len(futile)
        counts["waiting"] -= len(futile)
    failed = tuple(view.conn.execute("SELECT exec_job_id, reason FROM job WHERE state = 'failed' "
                                     "ORDER BY job_id").fetchall())
    if ended is not None:
        state = "succeeded" if succeeded else "failed"
    elif not epochs:
        state = "not started"
    else:
        state = "running" if view.engine_alive() else "interrupted"
    elapsed = (float(last_time) - float(run_started)) if run_started and last_time else None
    damage = tuple(f"{view.journal}: damaged record at byte offset {o} (line {n}): {why}"
                   for o, n, why in view.conn.execute("SELECT offset, line, why FROM damage ORDER BY offset"))
    held = tuple(view.conn.execute(
        "SELECT j.exec_job_id, i.held_reason FROM job_instance i JOIN job j USING (job_id) "
        "WHERE i.held_reason IS NOT NULL ORDER BY i.job_instance_id").fetchall())
    # the journal names the rescue DAG by its file name; it is written beside the DAG
    rescue_path = os.path.join(os.path.dirname(view.dag), rescue) if rescue else None
    return WorkflowStatus(view.dag, state, int(total or 0), counts, failed, int(retries or 0),
                          int(epochs or 0), source, elapsed, rescue_path, damage, _running(view), held)


def workflow_status(directory: str, dag_file: str | None = None) -> WorkflowStatus:
    """The status of the run in ``directory`` (``dag_file``: its DAG, else the one ``*.dag`` there),
    after catching its events database up with the journal; ``UsageError`` when there is no such
    directory or DAG.  A run that has not started is ``not started``: status never refuses to report."""
    check_path("directory", directory)
    view = open_events(directory, dag_file)
    try:
        return _status(view)
    finally:
        view.conn.close()


def _children(view: RunView) -> list[tuple[str, str, str | None]]:
    """``(node, directory, dag file)`` of each sub-workflow that has run (has a journal)."""
    out: list[tuple[str, str, str | None]] = []
    for node, kind, where in view.conn.execute(
            "SELECT exec_job_id, type_desc, subwf_dir FROM job WHERE subwf_dir IS NOT NULL ORDER BY job_id"):
        if kind == "subdag" or where.endswith(".dag"):
            dag = _latest_rescue(where) if where.endswith(".gdag") else where
            out.append((node, os.path.dirname(dag), dag))
        else:
            out.extend((node, found, None) for found in sorted(glob.glob(where)))
    return out


def _latest_rescue(gdag: str) -> str:
    """A group DAG's latest rescue that has started (``<gdag>.rN`` with a journal): a group backed
    out of a site runs on from there, with the nodes it kept done (``sheaf.backends.grid``)."""
    started = [(int(path.rsplit(".r", 1)[1]), path) for path in glob.glob(glob.escape(gdag) + ".r*")
               if path.rsplit(".r", 1)[1].isdigit() and os.path.exists(state_paths(path)["journal"])]
    return max(started)[1] if started else gdag


def _children_of(directory: str, dag_file: str | None) -> list[tuple[str, str, str | None]]:
    view = open_events(directory, dag_file)
    try:
        return _children(view)
    finally:
        view.conn.close()


def sub_workflows(directory: str, dag_file: str | None = None) -> list[SubStatus]:
    """Every sub-workflow under the run in ``directory`` that has started, depth first (an iterative
    walk), each with its status and depth (1 for a child of the top workflow)."""
    out: list[SubStatus] = []
    stack = [(node, d, g, 1) for node, d, g in reversed(_children_of(directory, dag_file))]
    while stack:
        node, where, dag, level = stack.pop()
        try:
            status = workflow_status(where, dag)
            children = _children_of(where, dag)
        except (UsageError, InputError):  # not started yet: nothing to show
            continue
        out.append(SubStatus(node, level, status))
        stack.extend((n, d, g, level + 1) for n, d, g in reversed(children))
    return out


def tree_views(directory: str, dag_file: str | None = None) -> list[RunView]:
    """The caught-up events databases of the run in ``directory`` and of its sub-workflows, the top
    one first; the caller closes them."""
    views = [open_events(directory, dag_file)]
    views.extend(open_events(os.path.dirname(s.status.dag), s.status.dag)
                 for s in sub_workflows(directory, dag_file))
    return views


def age(since: float | None) -> str:
    if since is None:
        return "-"
    seconds = max(0, int(time.time() - since))
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
