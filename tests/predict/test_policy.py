"""The simulator's scheduling policy against the engine's own state machine, event by event.

Random small DAGs with priorities, categories with MAXJOBS, NOOP nodes, a DAG-wide maxjobs and
depth-first submission are run twice with fixed job durations and no overheads: by the engine's ``DagState``
(each Submit instruction starting a job that exits ``duration`` later, its JobExited fed back in time
order) and by the simulator on unlimited slots.  Every node must be submitted at the same moment.
"""

from __future__ import annotations

import heapq
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_machines import machine, submits
from sheaf.engine._state import JobExited, Limits
from sheaf.predict import Dist, OverheadModel, Overheads, Platform, SimJob, SimWorkflow, simulate

ZERO = OverheadModel({"local": Overheads(engine=Dist(0.0), speed_cv=0.0)})


@st.composite
def dags(draw: st.DrawFn) -> tuple[str, SimWorkflow, Limits]:
    n = draw(st.integers(1, 14))
    # distinct durations: no two jobs end at the same moment, so the order of events is the same
    durations = draw(st.lists(st.integers(1, 10_000), min_size=n, max_size=n, unique=True))
    edges = sorted({(a, b) for a, b in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                                                     max_size=2 * n)) if a < b})
    priorities = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    categories = draw(st.lists(st.sampled_from([None, "a", "b"]), min_size=n, max_size=n))
    limits = {"a": draw(st.integers(0, 2)), "b": draw(st.integers(0, 3))}
    maxjobs, depth_first = draw(st.integers(0, 3)), draw(st.booleans())
    noop = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    lines = [f"JOB n{i} n{i}.sub{' NOOP' if noop[i] else ''}" for i in range(n)]
    lines += [f"PRIORITY n{i} {p}" for i, p in enumerate(priorities) if p]
    lines += [f"CATEGORY n{i} {c}" for i, c in enumerate(categories) if c]
    lines += [f"MAXJOBS {c} {v}" for c, v in limits.items() if v]
    lines += [f"PARENT n{a} CHILD n{b}" for a, b in edges]
    jobs = [SimJob(f"n{i}", runtimes=(durations[i] / 1000,), priority=priorities[i], category=categories[i],
                   noop=noop[i]) for i in range(n)]
    wf = SimWorkflow(jobs, edges, maxjobs=maxjobs, category_limits={c: v for c, v in limits.items() if v},
                     depth_first=depth_first)
    return "\n".join(lines) + "\n", wf, Limits(maxjobs=maxjobs, depth_first=depth_first)


def engine_submissions(tmp_path: Path, text: str, wf: SimWorkflow, limits: Limits) -> dict[str, float]:
    m = machine(tmp_path, text, limits)
    duration = {job.id: job.runtimes[0] for job in wf.jobs}
    when: dict[str, float] = {}
    running: list[tuple[float, str]] = []
    now = 0.0
    step = m.start()
    while True:
        for node in submits(step):
            when[node] = now
            heapq.heappush(running, (now + duration[node], node))
        if step.more:
            step = m.advance([])
            continue
        if not running:
            return when
        now, node = heapq.heappop(running)
        step = m.advance([JobExited(node, 0, 0)])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dags())
def test_every_node_is_submitted_when_the_engine_submits_it(tmp_path: Path,
                                                           case: tuple[str, SimWorkflow, Limits]) -> None:
    text, wf, limits = case
    expected = engine_submissions(tmp_path, text, wf, limits)
    p = simulate(wf, Platform({None: len(wf.jobs)}), ZERO, replicates=1, schedule=True)
    got = {job.id: p.schedule[i][0] for i, job in enumerate(wf.jobs) if not job.noop}
    assert got == pytest.approx(expected)
