"""The node status file (``NODE_STATUS_FILE``), in the layout of DAGMan's ``Dag::DumpNodeStatus``.

A sequence of new-syntax ClassAds: one ``DagStatus`` ad (the DAG files, a timestamp, the DAG's
status as an integer with its name in a comment, and the node counters), one ``NodeStatus`` ad per
node (its integer ``NodeStatus``, the status name in a comment, ``StatusDetails``, ``RetryCount``,
``JobProcsQueued``, ``JobProcsHeld``) and a ``StatusEnd`` ad (``EndTime``, ``NextUpdate``)::

    [
      Type = "NodeStatus";
      Node = "B";
      NodeStatus = 7; /* "STATUS_FUTILE" */
      StatusDetails = "Had an ancestor node fail";
      ...
    ]

Status numbers are DAGMan's (``Node::status_t``, which the file format fixes): 0 NOT_READY, 1 READY,
2 PRERUN, 3 SUBMITTED, 4 POSTRUN, 5 DONE, 6 ERROR, 7 FUTILE.  sheaf's node states map onto them:
a node waiting for its parents is NOT_READY, or FUTILE when a node it depends on has failed (it
can never run: DAGMan's ``SetDescendantsToFutile``); a node waiting for its PRE script's turn is
PRERUN, a node waiting for its POST script's turn POSTRUN, as in DAGMan; so is a node whose PRE
script a halt deferred (``ScriptQ::Run`` keeps it PRERUN).  The file written when the run ends shows
nodes still PRERUN, SUBMITTED or POSTRUN as ERROR ("Was STATUS_PRERUN", ...) and counts them failed,
as DAGMan's last ``DumpNodeStatus`` does (their scripts are killed, their jobs removed).

When the file is written (the loop decides; DAGMan's rules): when something changed and at least the
file's update time has passed since the last write, or - with ``ALWAYS-UPDATE`` - even when nothing
changed; always when the run ends or is stopped.  The file is replaced atomically.
"""

from __future__ import annotations

__all__ = ["STATUS_NUMBERS", "StatusSnapshot", "node_status_text"]

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

STATUS_NAMES = ("STATUS_NOT_READY", "STATUS_READY", "STATUS_PRERUN", "STATUS_SUBMITTED", "STATUS_POSTRUN",
                "STATUS_DONE", "STATUS_ERROR", "STATUS_FUTILE")
STATUS_NUMBERS: dict[str, int] = {
    "waiting": 0, "ready": 1, "pre_ready": 2, "pre": 2, "pre_deferred": 2, "submitted": 3,
    "post_ready": 4, "post": 4, "post_deferred": 4, "done": 5, "failed": 6}
FUTILE = 7


@dataclass(frozen=True, slots=True)
class StatusSnapshot:
    """What the file says, gathered by the loop from the state machine and the backend."""

    dag_files: tuple[str, ...]
    states: Mapping[str, str]
    reasons: Mapping[str, str | None]
    retries: Mapping[str, int]  # retries performed per node
    futile: Collection[str]
    pre_done: Collection[str]  # nodes marked DONE in the DAG or its rescue DAG
    started: Collection[str]  # submitted nodes whose job runs (the others are idle)
    noop: Collection[str]
    outcome: tuple[int, str]  # the DAG's status number and its note (see dag_outcome)
    finished: bool
    update_time: float
    job_attrs: Mapping[str, str] = field(default_factory=dict)  # SET_JOB_ATTR: DAGMan's own job ad
    held: Mapping[str, int] = field(default_factory=dict)  # procs on hold now, by node (none: absent)


def dag_outcome(succeeded: bool | None, dag_status: int, interrupted: bool,
                final_pending: bool) -> tuple[int, str]:
    """The DagStatus ad's ``DagStatus`` and note: ``succeeded`` is None while the DAG runs."""
    if succeeded:
        return 5, "success"
    if succeeded is False:
        if dag_status == 5:
            return 6, "cycle"
        return 6, {3: "aborted", 4: "removed"}.get(dag_status, "failed")
    if interrupted:
        return (3 if final_pending else 6), "removed"
    return 3, ""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _stamp(seconds: float) -> str:
    return _quote(time.ctime(seconds))


_PENDING = (2, 3, 4)  # PRERUN, SUBMITTED, POSTRUN


def _number(s: StatusSnapshot, name: str, state: str) -> int:
    """The node's status number; in the last file of a run that ended with nodes still pending (a
    halted DAG's deferred PRE scripts, jobs an abort removes) DAGMan writes them as ERROR."""
    number = FUTILE if name in s.futile else STATUS_NUMBERS[state]
    return 6 if s.finished and number in _PENDING else number


def _counts(s: StatusSnapshot) -> list[tuple[str, int]]:
    numbers = [_number(s, n, state) for n, state in s.states.items()]
    tally = [numbers.count(i) for i in range(8)]
    idle = sum(1 for n, state in s.states.items() if state == "submitted" and n not in s.started
               and n not in s.noop)
    held = sum(s.held.values())
    if s.finished:  # the jobs still queued are being removed
        held = idle = 0
    return [("NodesTotal", len(numbers)), ("NodesDone", tally[5]), ("NodesPre", tally[2]),
            ("NodesQueued", tally[3]), ("NodesPost", tally[4]), ("NodesReady", tally[1]),
            ("NodesUnready", tally[0]), ("NodesFutile", tally[7]), ("NodesFailed", tally[6]),
            ("JobProcsHeld", held), ("JobProcsIdle", idle)]


def _node_ad(s: StatusSnapshot, name: str, state: str) -> list[str]:
    number = _number(s, name, state)
    was = FUTILE if name in s.futile else STATUS_NUMBERS[state]
    note = ""
    if number == 6 and was in _PENDING:
        note = f"Was {STATUS_NAMES[was]}"
    elif number == 3:
        note = "not_idle" if name in s.started or name in s.noop else "idle"
    elif number == 6:
        note = s.reasons.get(name) or ""
    elif number == FUTILE:
        note = "Had an ancestor node fail"
    elif number == 5 and name in s.pre_done:
        note = "User defined as DONE"
    queued = int(number == 3 and name not in s.noop)
    held = 0 if number == 6 else s.held.get(name, 0)
    return ["[", '  Type = "NodeStatus";', f"  Node = {_quote(name)};",
            f"  NodeStatus = {number}; /* {_quote(STATUS_NAMES[number])} */",
            f"  StatusDetails = {_quote(note)};", f"  RetryCount = {s.retries.get(name, 0)};",
            f"  JobProcsQueued = {queued};", f"  JobProcsHeld = {held};", "]"]


def node_status_text(s: StatusSnapshot, now: float) -> str:
    number, note = s.outcome
    files = ",\n".join(f"    {_quote(f)}" for f in s.dag_files)
    lines = ["[", '  Type = "DagStatus";', "  DagFiles = {", files, "  };",
             f"  Timestamp = {int(now)}; /* {_stamp(now)} */",
             f"  DagStatus = {number}; /* {_quote(f'{STATUS_NAMES[number]} ({note})')} */"]
    for key, value in _counts(s):
        lines.append(f"  {key} = {value};" + (" /* includes held */" if key == "JobProcsIdle" else ""))
    lines.extend(f"  {name} = {value};" for name, value in s.job_attrs.items())
    lines.append("]")
    for name, state in s.states.items():
        lines += _node_ad(s, name, state)
    following = 0 if s.finished else int(now + s.update_time)
    lines += ["[", '  Type = "StatusEnd";', f"  EndTime = {int(now)}; /* {_stamp(now)} */",
              f"  NextUpdate = {following}; /* {_stamp(following) if following else _quote('none')} */", "]"]
    return "\n".join(lines) + "\n"
