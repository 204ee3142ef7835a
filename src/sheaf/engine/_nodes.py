"""The node record of the state machine, its story, and the error an impossible transition raises.

A node's *story* is the list of its state changes: the very :class:`Change` records the step
journals (when, from, to, attempt, details), told one line each with a short note such as
``return 1`` (:func:`story_line`).  The state machine appends to it on every transition, so an
:class:`InvalidTransition` can say how the node got where it is - the first thing a maintainer asks.

DAGMan's numbers live here too: the ``$RETURN`` values of the ways a job can fail without an exit
code (``dag.h``: -1001 submit failed, -1002 job aborted, -1004 job skipped after a failed PRE script),
the ``$DAG_STATUS`` values (``DagStatus``: 0 ok, 1 error, 2 node failed, 3 abort, 4 removed,
5 cycle, 6 halted) and the proc of a NOOP node's fake job id (:data:`NOOP_PROC`).  So do the
questions asked of the graph and the nodes' states: a node's unmet parents and the futile nodes.
"""

from __future__ import annotations

__all__ = [
    "ACTIVE_STATES",
    "DAG_ABORTED",
    "DAG_CYCLE",
    "DAG_HALTED",
    "DAG_NODES_FAILED",
    "DAG_OK",
    "DAG_REMOVED",
    "NOOP_PROC",
    "RETURN_ABORTED",
    "RETURN_HELD",
    "RETURN_PRE_FAILED",
    "RETURN_SUBMIT_FAILED",
    "SERVICE_REMOVED",
    "STATES",
    "SUBMIT_FAILED_TEXT",
    "InvalidTransition",
    "Node",
    "NodeState",
    "expected_state",
    "futile_nodes",
    "job_error_text",
    "post_error_text",
    "signal_text",
    "story_line",
    "unmet_parents",
]

import signal
from collections.abc import Callable, Mapping
from typing import Literal, get_args

from sheaf.condor import Dag, NodeSpec
from sheaf.engine._events import (
    Change,
    DeferElapsed,
    Details,
    JobExited,
    JobHeld,
    JobReleased,
    JobRemoved,
    JobRequeued,
    JobSuspended,
    ScriptExited,
    SubmitFailed,
)

NodeState = Literal["waiting", "pre_ready", "pre", "pre_deferred", "ready", "submitted",
                    "post_ready", "post", "post_deferred", "done", "failed"]
STATES: tuple[NodeState, ...] = get_args(NodeState)
ACTIVE_STATES = frozenset({"pre_ready", "pre", "pre_deferred", "ready", "submitted", "post_ready",
                           "post", "post_deferred"})

RETURN_SUBMIT_FAILED = -1001  # DAG_ERROR_CONDOR_SUBMIT_FAILED
RETURN_HELD = -1001  # a job that can never run is, to DAGMan, one that could not be submitted
RETURN_ABORTED = -1002  # DAG_ERROR_CONDOR_JOB_ABORTED: the job was removed (periodic_remove)
RETURN_PRE_FAILED = -1004  # DAG_ERROR_JOB_SKIPPED (DAGMAN_ALWAYS_RUN_POST)
DAG_OK, DAG_NODES_FAILED, DAG_ABORTED, DAG_REMOVED, DAG_CYCLE, DAG_HALTED = 0, 2, 3, 4, 5, 6
NOOP_PROC = 2147483647  # Node::NOOP_NODE_PROCID (INT_MAX)
SERVICE_REMOVED = "Removed by DAGMan"  # JOB_ABORTED of a SERVICE node's job removed as the DAG ends


SUBMIT_FAILED_TEXT = "Job submit failed"  # DAGMan's error text of a node whose submission failed
MAX_SIGNAL = 64  # DAGMan tells a job's signal (a negative return down to -64) from its own error values


def signal_text(number: int) -> str:
    """DaemonCore's GetExceptionString: ``signal 9 (Killed)``."""
    try:
        name = signal.strsignal(number)
    except ValueError:
        name = None
    return f"signal {number} ({name})" if name else f"signal {number}"


def job_error_text(cluster: int, proc: int, exit_code: int | None, signo: int | None) -> str:
    """DAGMan's error text of a node whose job proc failed (``Dag::ProcessTerminatedEvent``)."""
    how = f"signal {signo}" if exit_code is None else f"status {exit_code}"
    return f"Job proc ({cluster}.{proc}.0) failed with {how}"


def post_error_text(job_value: int, exit_code: int | None, signo: int | None) -> str:
    """DAGMan's error text of a node whose POST script failed for good: the node's return value
    before the script (``Dag::ProcessPostTermEvent``), then the script's end."""
    if job_value > 0:
        job = f"Job exited with status {job_value}"
    elif -MAX_SIGNAL <= job_value < 0:
        job = f"Job died on signal {-job_value}"
    else:
        job = f"Job failed due to DAGMAN error {job_value}"
    how = f"died on signal {signo}" if exit_code is None else f"failed with status {exit_code}"
    return f"{job} and POST Script {how}"


def story_line(change: Change) -> str:
    """One line of a node's story."""
    note = note_of(change.info)
    note = f" ({note})" if note else ""
    return f"{change.time:.3f} {change.start}->{change.finish} #{change.attempt}{note}"


_NOTE_KEYS = ("return", "cluster", "retry", "why", "script")


def note_of(info: Details | None) -> str:
    """The few details worth keeping in a story (the journal keeps them all)."""
    if not info:
        return ""
    found = info.items()  # a TypedDict is a dict at run time
    return ", ".join(f"{k} {v}" for k, v in found if k in _NOTE_KEYS)


class InvalidTransition(RuntimeError):
    """A transition (or an event) the state machine has no rule for: a bug, never bad input."""

    def __init__(self, node: str, start: str, finish: str, history: list[Change], *,
                 attempt: int = 0, reason: str | None = None) -> None:
        self.node, self.start, self.finish, self.history = node, start, finish, history
        self.attempt, self.reason = attempt, reason
        trail = "; ".join(story_line(c) for c in history[-20:]) or "(no changes yet)"
        why = f", last reason: {reason}" if reason else ""
        super().__init__(f"node {node!r} (attempt {attempt}{why}): impossible transition {start} -> "
                         f"{finish}; its story: {trail}")


class Node:
    """One node's run-time record (its spec is the parsed DAG's, shared and never changed)."""

    __slots__ = (
        "attempt",
        "cluster",
        "error_text",
        "held_procs",
        "history",
        "job_failed",
        "job_return",
        "max_retries",
        "name",
        "order",
        "poisoned",
        "pre_return",
        "prio",
        "procs",
        "reason",
        "seq",
        "spec",
        "state",
        "times_held",
        "token",
        "unless_exit",
        "unmet",
        "value",
    )

    def __init__(self, spec: NodeSpec, order: int, dag_priority: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.order = order  # declaration order (the order DAGMan starts the initially ready nodes)
        self.prio = spec.priority + dag_priority  # DAGMan's effective priority
        self.seq = 0  # place among nodes of equal priority in its queue (see ReadyQueues.queue_ready)
        self.state: NodeState = "waiting"
        self.attempt = 0
        self.max_retries = spec.retries  # RETRY's count; a rescue DAG's retries left (DagState)
        self.unless_exit = spec.unless_exit  # RETRY's UNLESS-EXIT value; a rescue DAG's, where it names one
        self.unmet = 0
        self.history: list[Change] = []  # its story: the changes journaled
        self.job_return: int | None = None  # DAGMan's return value of the node's job ($RETURN)
        self.job_failed = False  # whether the job (list) failed: a list may succeed with a nonzero return
        self.procs: tuple[int | None, ...] = ()  # a job list's procs' exit codes (JobExited.procs)
        self.pre_return: int | None = None
        self.cluster = 0
        self.reason: str | None = None
        self.error_text: str | None = None  # DAGMan's words for its failure (node status StatusDetails)
        self.token = False  # holds a maxjobs/category token while submitted
        self.poisoned = False  # a submit failure: no more retries (DAGMan's PoisonRetries)
        self.value: int | None = None  # the node's exit value (the last component's)
        self.held_procs: set[int] = set()  # procs of the current attempt's job on hold now
        self.times_held = 0  # holds of the node's jobs, all attempts (DAGMan's _timesHeld)

    def key(self) -> tuple[int, int, str]:
        return (-self.prio, self.seq, self.name)


def expected_state(event: JobExited | JobHeld | JobSuspended | JobReleased | JobRequeued | JobRemoved
                   | SubmitFailed | ScriptExited | DeferElapsed) -> NodeState:
    """The state a node is in when ``event`` about its current attempt arrives."""
    match event:
        case JobExited() | JobHeld() | JobSuspended() | JobReleased() | JobRequeued() | JobRemoved() \
                | SubmitFailed():
            return "submitted"
        case ScriptExited(kind="PRE"):
            return "pre"
        case ScriptExited():
            return "post"
        case DeferElapsed(kind="PRE"):
            return "pre_deferred"
        case _:
            return "post_deferred"


def unmet_parents(dag: Dag, nodes: Mapping[str, Node], name: str) -> int:
    """The parents ``name`` still waits for: those not done, but a failed parent of a WEAK edge is
    finished, which is all its child needs."""
    weak = dag.weak
    return sum(1 for p in dag.parents[name] if nodes[p].state != "done"
               and not (nodes[p].state == "failed" and (p, name) in weak))


def futile_nodes(dag: Dag, state_of: Callable[[str], str]) -> set[str]:
    """Nodes waiting for a parent that failed, directly or through other waiting nodes: they can
    never run (iterative, each node visited once).  A failed node's WEAK children are not futile
    (it finished, which is all they need); a futile node's children all are (it never ran)."""
    futile: set[str] = set()
    stack = [n for n in dag.nodes if state_of(n) == "failed"]
    while stack:
        parent = stack.pop()
        for child in dag.children[parent]:
            if (parent, child) in dag.weak and parent not in futile:
                continue
            if child not in futile and state_of(child) == "waiting":
                futile.add(child)
                stack.append(child)
    return futile
