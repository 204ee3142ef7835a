"""Workflow status from the engine's journal, safe while an engine is appending to it.

The journal is append-only and every record is one line; a reader takes the complete lines it
finds (a line still being written has no newline yet and is ignored), so ``sheaf status`` needs
no lock and never blocks or disturbs a running engine.  Counts are per node state; nodes the
journal never mentions are ``waiting`` (and ``futile`` once a failed ancestor makes them unrunnable
- computed from the DAG file when it still parses).  Damaged journal lines (``sheaf.engine``
validates every record) are skipped and listed in ``damage``; status never refuses to report.
"""

from __future__ import annotations

__all__ = ["WorkflowStatus", "workflow_status"]

import fcntl
import os
from dataclasses import dataclass

from sheaf.engine import STATES, find_dag, parse_dag, read_journal, state_paths
from sheaf.errors import InputError, UsageError


@dataclass(frozen=True, slots=True)
class WorkflowStatus:
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


def _engine_alive(lock_path: str) -> bool:
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _futile(dag_path: str, states: dict[str, str]) -> set[str]:
    """Nodes that can never run: a descendant of a failed node (iterative, no recursion)."""
    try:
        dag = parse_dag(dag_path)
    except InputError:
        return set()
    stack = [n for n, s in states.items() if s == "failed" and n in dag.children]
    seen: set[str] = set()
    while stack:
        for child in dag.children[stack.pop()]:
            if child not in seen and states.get(child, "waiting") == "waiting":
                seen.add(child)
                stack.append(child)
    return seen


def workflow_status(directory: str, dag_file: str | None = None) -> WorkflowStatus:
    dag_path = find_dag(directory, dag_file)
    paths = state_paths(dag_path)
    if not os.path.exists(paths["journal"]):
        raise UsageError(f"{directory}: no engine journal yet ({paths['journal']}); run `sheaf run` first")
    replay = read_journal(paths["journal"])
    states = {n: r.state for n, r in replay.nodes.items()}
    counts: dict[str, int] = dict.fromkeys(STATES, 0)
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    counts["waiting"] += max(0, replay.total - len(states))
    futile = _futile(dag_path, states) if counts["failed"] else set()
    if futile:
        counts["futile"] = len(futile)
        counts["waiting"] -= len(futile)
    failed = tuple((n, r.reason) for n, r in replay.nodes.items() if r.state == "failed")
    if replay.ended is not None:
        state = "succeeded" if replay.ended.succeeded else "failed"
    elif replay.epochs == 0:
        state = "not started"
    else:
        state = "running" if _engine_alive(paths["lock"]) else "interrupted"
    elapsed = (replay.last_time - replay.run_started) if replay.run_started and replay.last_time else None
    rescue = replay.ended.rescue if replay.ended is not None else None
    damage = tuple(d.describe(paths["journal"]) for d in replay.damage)
    return WorkflowStatus(dag_path, state, replay.total, counts, failed, replay.retries, replay.epochs,
                          replay.source, elapsed, rescue, damage)
