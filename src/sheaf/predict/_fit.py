"""Fitting the overhead model of a backend from what earlier runs recorded.

Each observation is one successful job attempt: when its node became ready, was submitted, started,
ended and was done, its task count and the seconds its tasks ran.  Per component:

- ``engine``: submitted - ready;
- ``submit``: started - submitted, over the attempts that found a slot free (a wait for a slot is
  the simulation's, not the model's);
- ``launch`` and ``task``: the slot time beyond the tasks, ``ended - started - task_seconds``, fitted
  as ``launch + task * tasks`` by least squares over the jobs that ran tasks (with one task count
  only, ``task`` keeps the base model's value, or less when the whole excess is less); plus, in
  ``launch``, the median *turnover* of a slot:
  for the attempts that waited for one, their start minus the last end before it, in which the
  freed slot does no work -- unless the site's scheduler was the limit:
- ``dispatch``: the mean interval between two starts while jobs waited, when it is more than half as
  long again as the slots alone explain (the jobs' mean slot time over the most that ran at once);
  else 0;
- ``post``: done - ended, over the attempts that were some node's last parent.

Each component's mean and coefficient of variation are taken after dropping the slowest 1% (a
stall of the machine is not the backend's overhead).  ``speed_cv`` and ``bandwidth`` keep the base
model's values.
"""

from __future__ import annotations

__all__ = ["Timing", "fit_overheads", "peak_concurrency"]

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from sheaf.predict._overheads import Dist, Overheads


class Timing(Protocol):
    @property
    def tasks(self) -> int: ...
    @property
    def task_seconds(self) -> float: ...
    @property
    def ready(self) -> float: ...
    @property
    def submitted(self) -> float: ...
    @property
    def started(self) -> float: ...
    @property
    def ended(self) -> float: ...
    @property
    def done(self) -> float: ...
    @property
    def releases(self) -> bool: ...


def _dist(values: Sequence[float]) -> Dist | None:
    kept = sorted(max(0.0, v) for v in values if math.isfinite(v))
    if not kept:
        return None
    kept = kept[:max(1, math.ceil(len(kept) * 0.99))]
    mean = sum(kept) / len(kept)
    if mean <= 0:
        return Dist(0.0)
    var = sum((v - mean) ** 2 for v in kept) / len(kept)
    return Dist(mean, math.sqrt(var) / mean)


def _waits(timings: Sequence[Timing]) -> tuple[list[float], list[float]]:
    """(latencies of the attempts that found a slot free, turnovers of those that waited for one).
    An attempt found a slot free when fewer than the slots' count of the attempts submitted before
    it (first come, first served) had not ended by its submission: its latency is started -
    submitted.  One that waited started when a slot freed: its turnover is started - the last end
    before it."""
    ends = sorted(t.ended for t in timings)
    slots = max(1, peak_concurrency(timings))
    free, turnover = [], []
    for ahead, t in enumerate(sorted(timings, key=lambda t: (t.submitted, t.started))):
        if ahead - bisect.bisect_right(ends, t.submitted) < slots:
            free.append(t.started - t.submitted)
        else:
            freed = bisect.bisect_right(ends, t.started)
            turnover.append(max(0.0, t.started - ends[freed - 1]) if freed else 0.0)
    return free, turnover


def peak_concurrency(timings: Sequence[Timing]) -> int:
    """The most attempts running at once: the slots a run had, as far as it filled them."""
    # to the microsecond the records keep: a start at its slot's previous end is not an overlap
    moments = sorted([(round(t.started, 6), 1) for t in timings]
                     + [(round(t.ended, 6), -1) for t in timings])
    running = peak = 0
    for _, change in moments:
        running += change
        peak = max(peak, running)
    return peak


def _dispatch(timings: Sequence[Timing]) -> float:
    """The site's interval between starts, when the scheduler and not the slots held jobs back."""
    order = sorted(timings, key=lambda t: t.started)
    waited = [b.started - a.started for a, b in itertools.pairwise(order) if b.submitted < a.started]
    if not waited:
        return 0.0
    interval = sum(waited) / len(waited)
    slot_bound = sum(t.ended - t.started for t in timings) / len(timings) / max(1, peak_concurrency(timings))
    return interval if interval > 1.5 * slot_bound else 0.0


def _releasing(timings: Sequence[Timing]) -> Sequence[Timing]:
    """The attempts whose node's end released another: the delays the DAG's progress waited for
    (an engine batches the ends it hears while busy, which delays no child that waits for a later
    one); all of them when none released any."""
    releasing = [t for t in timings if t.releases]
    return releasing or timings


def _launch_task(timings: Sequence[Timing], base: Overheads) -> tuple[Dist | None, Dist | None]:
    rows = [(t.tasks, t.ended - t.started - t.task_seconds) for t in timings if t.tasks > 0]
    if not rows:
        return None, None
    counts = {n for n, _ in rows}
    if len(counts) == 1:  # launch and task cannot be told apart: task keeps the base model's value,
        # unless the jobs' whole excess is less than their tasks' share of it would be
        n = counts.pop()
        excess = max(0.0, sum(y for _, y in rows) / len(rows))
        task = min(base.task.mean, excess / n)
        launch = _dist([y - task * n for n, y in rows])
        return launch, (None if task == base.task.mean else Dist(task, base.task.cv))
    n_mean = sum(n for n, _ in rows) / len(rows)
    y_mean = sum(y for _, y in rows) / len(rows)
    sxx = sum((n - n_mean) ** 2 for n, _ in rows)
    slope = max(0.0, sum((n - n_mean) * (y - y_mean) for n, y in rows) / sxx)
    launch = _dist([y - slope * n for n, y in rows])
    per_task = _dist([(y - (launch.mean if launch else 0.0)) / n for n, y in rows])
    return launch, (Dist(slope, per_task.cv) if per_task is not None else Dist(slope))


def fit_overheads(timings: Sequence[Timing], base: Overheads, source: str) -> Overheads:
    """``base`` with every component the observations determine fitted from them (module docstring)."""
    if not timings:
        return base
    changes: dict[str, Any] = {}
    free, turnover = _waits(timings)
    for name, values in (("engine", [t.submitted - t.ready for t in timings]),
                         ("submit", free),
                         ("post", [t.done - t.ended for t in _releasing(timings)])):
        fitted = _dist(values)
        if fitted is not None:
            changes[name] = fitted
    launch, task = _launch_task(timings, base)
    dispatch = _dispatch(timings)
    # the median: an attempt that waited may find its slot freed before its own latency is over
    gap = statistics.median(turnover) if turnover and not dispatch else 0.0
    changes["dispatch"] = dispatch
    if launch is not None:
        changes["launch"] = Dist(launch.mean + gap, launch.cv)
    if task is not None:
        changes["task"] = task
    return replace(base, source=source, **changes)
