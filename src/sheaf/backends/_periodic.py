"""The job policy of the schedd for the local backend: ``periodic_hold``, ``periodic_release`` and
``periodic_remove`` (with ``periodic_hold_reason``/``periodic_hold_subcode``).

The schedd evaluates a job's policy every ``PERIODIC_EXPR_INTERVAL`` seconds (default 60) against the
job's ad plus the attributes it keeps for the job: ``JobStatus`` (1 idle, 2 running, 5 held),
``EnteredCurrentStatus``, ``QDate``, ``JobStartDate`` (first start), ``JobCurrentStartDate``,
``RemoteWallClockTime`` (all runs so far), ``NumJobStarts`` (and ``NumShadowStarts``, ``JobRunCount``:
a shadow per start), ``NumHolds``, ``ImageSize`` (KiB) and
``MemoryUsage`` (MiB) of the running job's process tree, and ``HoldReason``/``HoldReasonCode``/
``HoldReasonSubCode`` while held.  The order is ``UserPolicy::AnalyzePolicy``'s: a job not held is
held when ``PeriodicHold`` is true; a held job is released when ``PeriodicRelease`` is true; then any
job is removed when ``PeriodicRemove`` is true.  An expression is true when it evaluates to true or
to a non-zero number (undefined and errors are false), as the schedd's ``EvalBool``.

When a job exits, the shadow's order follows (``UserPolicy::AnalyzePolicy`` with
``PERIODIC_THEN_EXIT``, :func:`decide_at_exit`), against the ad with ``ExitBySignal``, ``ExitCode`` or
``ExitSignal`` and ``NumJobCompletions``: ``PeriodicHold`` holds, ``PeriodicRemove`` removes,
``OnExitHold`` holds (``OnExitHoldReason``/``OnExitHoldSubCode``), and an ``OnExitRemove`` that is
false (or 0) puts the job back in the queue to run again (its ``max_retries``, ``success_exit_code``
and ``retry_until`` are condor_submit's parts of that expression); else the job leaves the queue.

Before those, a running job is held when it has run for its ``AllowedJobDuration`` seconds (submit
``allowed_job_duration``; hold code 46) or for more than its ``AllowedExecuteDuration`` (``allowed_execute_
duration``; code 47) in this run, with HTCondor's reasons ("The job exceeded allowed job duration of
01:30"); a backend checks these when they fall due (:func:`duration_due`), as the shadow's timer does,
not only every ``PERIODIC_EXPR_INTERVAL``.

Only launches whose ad has one of these expressions are tracked (:func:`has_policy`), so a run
without them pays nothing.  Times are the backend's clock (wall-clock seconds).
"""

from __future__ import annotations

__all__ = ["HELD", "HOLD_CODE_JOB_POLICY", "IDLE", "RUNNING", "Action", "JobRecord", "decide",
           "decide_at_exit", "duration_due", "has_policy", "policy_interval"]

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sheaf._fields import INT_MAX, INT_MIN
from sheaf.classad import ClassAd, unparse
from sheaf.engine import Launch

IDLE, RUNNING, HELD = 1, 2, 5
_POLICY = ("PeriodicHold", "PeriodicRelease", "PeriodicRemove", "OnExitHold", "OnExitRemove",
           "AllowedJobDuration", "AllowedExecuteDuration")
HOLD_CODE_JOB_POLICY = 3  # CONDOR_HOLD_CODE::JobPolicy
#: (attribute, CONDOR_HOLD_CODE, HTCondor's words, whether reaching the limit is enough)
_DURATIONS = (("AllowedJobDuration", 46, "allowed job duration", True),
              ("AllowedExecuteDuration", 47, "allowed execute duration", False))


@dataclass(slots=True)
class JobRecord:
    launch: Launch
    qdate: float
    entered: float
    status: int = IDLE
    starts: int = 0
    first_start: float | None = None
    current_start: float | None = None
    wall: float = 0.0  # RemoteWallClockTime of the runs that ended
    holds: int = 0
    hold_reason: str = ""
    hold_code: int = HOLD_CODE_JOB_POLICY
    hold_subcode: int = 0
    completions: int = 0  # NumJobCompletions: the runs that exited

    def started(self, now: float) -> None:
        self.status, self.entered, self.starts, self.current_start = RUNNING, now, self.starts + 1, now
        self.first_start = now if self.first_start is None else self.first_start

    def stopped(self, now: float, status: int) -> None:
        if self.status == RUNNING and self.current_start is not None:
            self.wall += now - self.current_start
        self.status, self.entered = status, now

    def hold(self, now: float, reason: str, subcode: int, code: int = HOLD_CODE_JOB_POLICY) -> None:
        """Put on hold now (its run, if any, over) for ``reason``."""
        self.stopped(now, HELD)
        self.holds, self.hold_reason = self.holds + 1, reason
        self.hold_code, self.hold_subcode = code, subcode

    def ad(self, now: float, memory_mb: float | None) -> ClassAd:
        ad = self.launch.job_ad.copy()
        running = self.status == RUNNING and self.current_start is not None
        run = now - self.current_start if running and self.current_start is not None else 0.0
        values: dict[str, object] = {
            "JobStatus": self.status, "EnteredCurrentStatus": int(self.entered), "QDate": int(self.qdate),
            # one shadow a start on one machine: HTCondor's NumShadowStarts (JobRunCount its old name)
            "NumJobStarts": self.starts, "NumShadowStarts": self.starts, "JobRunCount": self.starts,
            "NumHolds": self.holds, "NumJobCompletions": self.completions,
            "RemoteWallClockTime": float(self.wall + run),
        }
        if self.first_start is not None:
            values["JobStartDate"] = int(self.first_start)
        if self.current_start is not None:
            values["JobCurrentStartDate"] = int(self.current_start)
        if memory_mb is not None:
            values["MemoryUsage"], values["ImageSize"] = int(memory_mb + 0.5), int(memory_mb * 1024)
        if self.status == HELD:
            values.update(HoldReason=self.hold_reason, HoldReasonCode=self.hold_code,
                          HoldReasonSubCode=self.hold_subcode)
        for name, value in values.items():
            ad[name] = value
        return ad


#: (what, reason, hold code, subcode)
Action = tuple[Literal["hold", "release", "remove", "requeue"], str, int, int]


def has_policy(ad: ClassAd) -> bool:
    return any(ad.get_expr(name) is not None for name in _POLICY)


def policy_interval(config: Mapping[str, str]) -> float:
    """``PERIODIC_EXPR_INTERVAL`` (seconds; fractions allowed, for tests), default 60."""
    try:
        value = float(config.get("PERIODIC_EXPR_INTERVAL", "60").strip() or "60")
    except ValueError:
        return 60.0
    return value if value > 0 else 60.0


def _true(ad: ClassAd, name: str) -> bool:
    if ad.get_expr(name) is None:
        return False
    try:
        value = ad.eval(name)
    except Exception:  # noqa: BLE001 - an expression that cannot be evaluated is false, as EvalBool's
        return False
    if isinstance(value, bool):
        return value
    return isinstance(value, int | float) and value != 0


def _fired(ad: ClassAd, name: str) -> tuple[str, int, int]:
    """The schedd's reason and subcode for a policy expression that fired (``UserPolicy::FiringReason``):
    the job's ``<name>Reason`` when it evaluates to a non-empty string, else "The job attribute <name>
    expression '<expr>' evaluated to TRUE"; the subcode is ``<name>SubCode`` when it is a number."""
    reason = ad.eval(name + "Reason") if ad.get_expr(name + "Reason") is not None else None
    subcode = ad.eval(name + "SubCode") if ad.get_expr(name + "SubCode") is not None else 0
    if not (isinstance(reason, str) and reason):
        reason = f"The job attribute {name} expression '{unparse(ad.lookup(name))}' evaluated to TRUE"
    number = isinstance(subcode, int | float) and not isinstance(subcode, bool)
    return reason, HOLD_CODE_JOB_POLICY, _c_int(subcode) if number else 0


def _c_int(value: float) -> int:
    """A subcode as the schedd's ``EvalInteger`` makes it: a real truncated by C's ``(int)`` cast, which
    on x86 makes a NaN, infinite or out-of-range one INT_MIN."""
    if isinstance(value, int):
        return value
    return int(value) if math.isfinite(value) and INT_MIN <= value < INT_MAX + 1 else INT_MIN


def decide(record: JobRecord, now: float, memory_mb: float | None = None) -> Action | None:
    """What the schedd does to the job now, by the order in the module docstring."""
    ad = record.ad(now, memory_mb)
    if record.status == RUNNING and record.current_start is not None:
        for name, code, words, reached in _DURATIONS:
            limit = _seconds(ad, name)
            ran = now - record.current_start
            if limit is not None and (ran >= limit if reached else ran > limit):
                return ("hold", f"The job exceeded {words} of {_short_time(limit)}", code, 0)
    if record.status != HELD and _true(ad, "PeriodicHold"):
        return ("hold", *_fired(ad, "PeriodicHold"))
    if record.status == HELD and _true(ad, "PeriodicRelease"):
        return ("release", *_fired(ad, "PeriodicRelease"))
    if _true(ad, "PeriodicRemove"):
        return ("remove", *_fired(ad, "PeriodicRemove"))
    return None


def duration_due(record: JobRecord) -> float | None:
    """When the running job's ``AllowedJobDuration`` or ``AllowedExecuteDuration`` holds it (the
    backend's clock), None when it has neither or is not running."""
    if record.status != RUNNING or record.current_start is None:
        return None
    limits = [limit + (0.0 if reached else 0.5) for name, _, _, reached in _DURATIONS
              if (limit := _seconds(record.launch.job_ad, name)) is not None]
    return record.current_start + min(limits) if limits else None


def _seconds(ad: ClassAd, name: str) -> int | None:
    """The whole seconds ``name`` evaluates to, as the schedd's ``LookupInteger`` reads them (None
    when unset or not a number)."""
    if ad.get_expr(name) is None:
        return None
    try:
        value = ad.eval(name)
    except Exception:  # noqa: BLE001 - an expression that cannot be evaluated sets no limit
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def _short_time(seconds: int) -> str:
    """HTCondor's ``format_time_short``: ``ddd+hh:mm:ss`` without its leading blanks, zeros, ``+`` and
    the first ``:`` after them (90 -> ``01:30``, 3600 -> ``1:00:00``, 1 -> ``00:01``)."""
    days, rest = divmod(max(seconds, 0), 86400)
    text = f"{days:3d}+{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    start = 0
    while start < len(text) and text[start] in " 0+":
        start += 1
    return text[start + (text[start:start + 1] == ":"):]


def decide_at_exit(record: JobRecord, now: float, exit_code: int | None, sig: int | None) -> Action | None:
    """What the shadow does with a job that exited (the module docstring's order); None: it leaves the
    queue.  Counts the completion and stops the record's run."""
    record.completions += 1
    ad = record.ad(now, None)
    ad["ExitBySignal"] = sig is not None
    if sig is not None:
        ad["ExitSignal"] = sig
    else:
        ad["ExitCode"] = exit_code or 0
    record.stopped(now, IDLE)
    for name, what in (("PeriodicHold", "hold"), ("PeriodicRemove", "remove"), ("OnExitHold", "hold")):
        if _true(ad, name):
            return (what, *_fired(ad, name))  # type: ignore[return-value]
    if ad.get_expr("OnExitRemove") is not None:
        try:
            value = ad.eval("OnExitRemove")
        except Exception:  # noqa: BLE001 - an expression that cannot be evaluated removes, as the shadow's
            return None
        if isinstance(value, bool | int | float) and not value:
            expr = unparse(ad.lookup("OnExitRemove"))
            return ("requeue", f"The job attribute OnExitRemove expression '{expr}' evaluated to FALSE",
                    HOLD_CODE_JOB_POLICY, 0)
    return None
