"""The vocabulary between the pure state machine and its loop: events, instructions, changes.

Events are past tense (what happened: :class:`JobExited`, :class:`ScriptExited`, ...); instructions
are imperative (what to do next: :class:`Submit`, :class:`RunScript`, :class:`WriteRescue`, ...); a
:class:`Change` is one node state change, journaled before any instruction of its step is carried
out.  All are frozen, slotted records: plain data, no behaviour.
"""

from __future__ import annotations

__all__ = [
    "Cancel", "Change", "Defer", "DeferElapsed", "EngineEvent", "Finish", "Instruction", "Interrupted",
    "JobExited", "JobHeld", "KillScript", "RunScript", "ScriptExited", "Step", "Submit", "WriteRescue",
]

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# ---- events (past tense) ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JobExited:
    node: str
    attempt: int
    exit_code: int | None
    signal: int | None = None
    reason: str | None = None
    started: float = 0.0
    ended: float = 0.0
    slot: str | None = None


@dataclass(frozen=True, slots=True)
class JobHeld:
    node: str
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True)
class ScriptExited:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int
    exit_code: int | None
    signal: int | None = None


@dataclass(frozen=True, slots=True)
class DeferElapsed:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int


@dataclass(frozen=True, slots=True)
class Interrupted:
    reason: str


EngineEvent = JobExited | JobHeld | ScriptExited | DeferElapsed | Interrupted


# ---- instructions (imperative) -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Submit:
    node: str
    attempt: int
    cluster: int
    priority: int


@dataclass(frozen=True, slots=True)
class RunScript:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int
    argv: tuple[str, ...]
    cwd: str


@dataclass(frozen=True, slots=True)
class Defer:
    node: str
    kind: Literal["PRE", "POST"]
    attempt: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Cancel:
    node: str
    attempt: int


@dataclass(frozen=True, slots=True)
class KillScript:
    node: str
    kind: Literal["PRE", "POST"]


@dataclass(frozen=True, slots=True)
class WriteRescue:
    done: tuple[str, ...]
    retries_left: tuple[tuple[str, int], ...]
    failed: int


@dataclass(frozen=True, slots=True)
class Finish:
    succeeded: bool
    dag_status: int  # $DAG_STATUS: 0 ok, 2 nodes failed, 3 aborted, 4 removed
    exit_code: int  # what DAGMan would exit with (ABORT-DAG-ON RETURN, else 0/1)


Instruction = Submit | RunScript | Defer | Cancel | KillScript | WriteRescue | Finish


@dataclass(frozen=True, slots=True)
class Change:
    """One journaled state change: ``node`` went from ``start`` to ``finish`` at ``time``."""

    time: float
    node: str
    start: str
    finish: str
    attempt: int
    info: Mapping[str, Any] | None = None


@dataclass(slots=True)
class Step:
    changes: list[Change] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
