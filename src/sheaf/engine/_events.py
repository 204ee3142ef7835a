"""The vocabulary between the pure state machine and its loop: events, instructions, changes.

Events are past tense (what happened: :class:`JobExited`, :class:`ScriptExited`, ...); instructions
are imperative (what to do next: :class:`Submit`, :class:`RunScript`, :class:`WriteRescue`, ...); a
:class:`Change` is one node state change, journaled before any instruction of its step is carried
out.  All are frozen, slotted records: plain data, no behaviour.

A change's details (:class:`Details`) are a ``TypedDict``: the journal writes them as a JSON object
unchanged (the journal format does not depend on this module), and every key that the journal,
``jobstate.log`` and ``sheaf status`` read is named and typed here, in one place.
"""

from __future__ import annotations

__all__ = [
    "Cancel", "Change", "Defer", "DeferElapsed", "Details", "EngineEvent", "Finish", "Halted", "Instruction",
    "Interrupted", "JobExited", "JobHeld", "JobReleased", "JobRemoved", "JobRequeued", "JobSuspended",
    "KillScript",
    "ProvisionerReady", "RunScript", "ScriptExited", "Step", "Submit", "SubmitFailed", "WriteRescue",
    "WriteSavePoint",
]

from dataclasses import dataclass, field
from typing import Literal, TypedDict

from sheaf._value import value_class

# ---- events (past tense) ---------------------------------------------------------------------

@value_class
class JobExited:
    node: str
    attempt: int
    exit_code: int | None     # a job list's: 0 when it succeeded, else its first failure's
    signal: int | None = None
    reason: str | None = None
    started: float = 0.0
    ended: float = 0.0
    slot: str | None = None
    procs: tuple[int | None, ...] = ()  # a job list's procs' exit codes (None: removed); () for one job
    returned: int | None = None  # a job list's DAGMan return value ($RETURN, ABORT-DAG-ON, UNLESS-EXIT)


@value_class
class JobHeld:
    node: str
    attempt: int
    reason: str


@value_class
class JobSuspended:
    """A proc of the node's job was put on hold (its periodic_hold) and waits, queued, to be
    released (HTCondor's JOB_HELD event)."""

    node: str
    attempt: int
    reason: str
    proc: int = 0
    code: int = 3  # HoldReasonCode (3: the job's policy)
    subcode: int = 0  # HoldReasonSubCode


@value_class
class JobRequeued:
    """A proc of the node's job exited and its OnExitRemove kept it queued: it runs again
    (JOB_EVICTED, "Job terminated and was requeued")."""

    node: str
    attempt: int
    proc: int = 0
    exit_code: int | None = None
    signal: int | None = None
    reason: str = ""


@value_class
class JobReleased:
    """A held proc of the node's job was released (its periodic_release): queued again (JOB_RELEASED)."""

    node: str
    attempt: int
    proc: int = 0
    reason: str = ""


@value_class
class JobRemoved:
    """The node's job was removed (its periodic_remove): HTCondor's JOB_ABORTED."""

    node: str
    attempt: int
    reason: str
    procs: tuple[int | None, ...] = ()  # as JobExited's: a job list whose first failure was a removal


@value_class
class ScriptExited:
    node: str
    kind: Literal["PRE", "POST", "HOLD"]
    attempt: int
    exit_code: int | None
    signal: int | None = None
    error: str | None = None  # why the script could not be started (it then counts as exit 1)


@value_class
class DeferElapsed:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int


@value_class
class SubmitFailed:
    """The attempt could not be submitted (a missing or unreadable submit file or sub-DAG file, a
    description that does not expand): DAGMan's submit failure."""

    node: str
    attempt: int
    reason: str


@value_class
class ProvisionerReady:
    """The PROVISIONER node's job runs: the other nodes may start."""


@value_class
class Halted:
    """The DAG was halted (DAGMan's halt file, ``<primary dag>.halt``, appeared): no PRE script
    starts and no job is submitted any more; jobs in flight and POST scripts finish, then the rescue
    DAG is written and FINAL runs (``DAG_STATUS_HALTED``)."""


@value_class
class Interrupted:
    """The engine was told to stop (SIGTERM/SIGINT: DAGMan's ``condor_rm``)."""

    reason: str


EngineEvent = (JobExited | JobHeld | JobSuspended | JobReleased | JobRequeued | JobRemoved | SubmitFailed
               | ScriptExited
               | DeferElapsed | Interrupted | Halted | ProvisionerReady)


# ---- instructions (imperative) -----------------------------------------------------------------

@value_class
class Submit:
    node: str
    attempt: int
    cluster: int
    priority: int  # the effective priority: the node's PRIORITY plus the DAG's own (DAGMan's rule)
    dag_status: int = 0  # $(DAG_STATUS) and $(FAILED_COUNT) at submission (the FINAL node reads them)
    failed_count: int = 0


@value_class
class RunScript:
    node: str
    kind: Literal["PRE", "POST", "HOLD"]
    attempt: int
    argv: tuple[str, ...]
    cwd: str
    debug: tuple[str, str] | None = None  # SCRIPT DEBUG: (file, STDOUT | STDERR | ALL)


@value_class
class Defer:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int
    seconds: float


@value_class
class Cancel:
    node: str
    attempt: int


@value_class
class KillScript:
    node: str
    kind: Literal["PRE", "POST"]


@value_class
class WriteRescue:
    done: tuple[str, ...]
    retries_left: tuple[tuple[str, int], ...]
    failed: int


@value_class
class WriteSavePoint:
    """SAVE_POINT_FILE: the node starts for the first time; the DAG's state as it starts."""

    node: str
    done: tuple[str, ...]
    failed: tuple[str, ...]


@value_class
class Finish:
    succeeded: bool
    dag_status: int  # $DAG_STATUS: 0 ok, 2 nodes failed, 3 aborted, 4 removed, 5 cycle
    exit_code: int  # what DAGMan would exit with (ABORT-DAG-ON RETURN, else 0/1)


Instruction = Submit | RunScript | Defer | Cancel | KillScript | WriteRescue | WriteSavePoint | Finish


# What the state machine says about one change (journaled as a JSON object).  The functional form
# because one key, ``return``, is a Python keyword.
Details = TypedDict("Details", {
    "return": int,  # the node's value after this change (the job's, a script's, a failure's)
    "exit": int,  # the job's end (JobExited) ...
    "signal": int,
    "reason": str,
    "started": float,
    "ended": float,
    "slot": str,
    "cluster": int,  # the ClusterId of a submission
    "noop": bool,  # a NOOP node's job: nothing was submitted
    "submit_failed": bool,  # the submission failed ($RETURN is -1001)
    "script": Literal["PRE", "POST"],
    "error": str,  # the script could not be started: why (its return is 1)
    "skipped": bool,  # PRE_SKIP
    "retry": int,  # the attempt number the node retries with
    "why": str,  # why the node failed, was cancelled or stopped
    "removal": str,  # a cancelled job: the reason its removal gives (JOB_ABORTED), as DAGMan's condor_rm
    "cancelled": bool,
    "abort": bool,  # ABORT-DAG-ON
    "held": str,  # a proc of the job went on hold, for this reason (the node stays submitted)
    "hold_code": int,  # ... with this HoldReasonCode
    "hold_subcode": int,  # ... and HoldReasonSubCode
    "released": bool,  # a held proc was released (the node stays submitted)
    "release_reason": str,  # ... for this reason
    "proc": int,  # the proc a hold or release is about
    "removed": bool,  # the job was removed (periodic_remove, DAGMAN_MAX_JOB_HOLDS): JOB_ABORTED
    "requeued": str,  # a proc exited and its OnExitRemove queued it again, for this reason (JOB_EVICTED)
}, total=False)


@value_class
class Change:
    """One journaled state change: ``node`` went from ``start`` to ``finish`` at ``time``."""

    time: float
    node: str
    start: str
    finish: str
    attempt: int
    info: Details | None = None


@dataclass(slots=True)
class Step:
    changes: list[Change] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    # DAGMAN_MAX_SUBMITS_PER_INTERVAL cut the submissions short while ready nodes could still be
    # submitted under the throttles: the loop turns again at once instead of waiting for events
    more: bool = False
