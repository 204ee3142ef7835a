"""Automatic clustering: the cost it minimises, and the planner's invariants under it.

Hypothesis checks, on random workflows of random runtimes under random overheads and slots: every
task runs in exactly one job (the planner's invariants), no cluster runs longer than a wall-time
limit unless one task alone does, a transformation whose clusters.* profile the user set is cut by
that profile, and the chosen count is the one of least predicted cost.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "planner"))
from planner_builders import catalog, job, run, workflow
from planner_invariants import check

from sheaf.predict import (
    AutoModel,
    Dist,
    OverheadModel,
    Overheads,
    Platform,
    SimJob,
    SimWorkflow,
    best_count,
    group_makespan,
    simulate,
)


def overheads(latency: float, launch: float, task: float = 0.0, post: float = 0.0) -> Overheads:
    return Overheads(submit=Dist(latency), launch=Dist(launch), task=Dist(task), post=Dist(post),
                     speed_cv=0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 50), min_size=1, max_size=30), st.integers(1, 8),
       st.floats(0, 10), st.floats(0, 10), st.floats(0, 1))
def test_group_makespan_is_the_simulation_of_independent_jobs(
        loads: list[float], slots: int, latency: float, launch: float, task: float) -> None:
    o = overheads(latency, launch, task)
    jobs = [SimJob(f"j{i}", runtimes=(load,)) for i, load in enumerate(loads)]
    model = OverheadModel({"local": o})
    simulated = simulate(SimWorkflow(jobs, []), Platform({None: slots}), model, replicates=0)
    assert group_makespan(loads, [1] * len(loads), o, slots) == pytest.approx(simulated.makespan_s)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 60), st.floats(0.1, 100), st.integers(1, 16), st.floats(0, 120), st.integers(1, 5))
def test_the_count_chosen_costs_least_among_every_count(n: int, runtime: float, slots: int, launch: float,
                                                        fewest: int) -> None:
    o = overheads(1.0, launch)

    def even(k: int) -> list[list[int]]:
        return [list(range(i, n, k)) for i in range(k)]

    def cost(k: int) -> float:
        sizes = sorted((len(b) for b in even(k)), reverse=True)
        return group_makespan([s * runtime for s in sizes], sizes, o, slots)

    chosen = best_count([runtime] * n, o, slots, fewest=fewest, cut=even)
    assert min(fewest, n) <= chosen <= n
    best = min(cost(k) for k in range(min(fewest, n), n + 1))
    assert cost(chosen) <= best * 1.01 + 1e-6


def test_a_grid_overhead_clusters_short_tasks_into_one_wave() -> None:
    o = overheads(0.0, 60.0)
    assert best_count([1.0] * 1000, o, slots=50) == 50     # one wave of 20-task jobs
    assert best_count([1.0] * 1000, overheads(0.0, 0.0), slots=50) == 50  # more jobs gain nothing
    assert best_count([3600.0] * 10, o, slots=50) == 10    # hour-long tasks stay apart


@st.composite
def cases(draw: st.DrawFn) -> tuple[object, ...]:
    n = draw(st.integers(2, 40))
    names = ["T", "U", "V"]
    chosen = [draw(st.sampled_from(names)) for _ in range(n)]
    runtimes = [draw(st.integers(1, 600)) for _ in range(n)]
    jobs = [job("root", "R", profiles={"pegasus": {"runtime": "1"}})]
    jobs += [job(f"t{i}", chosen[i], profiles={"pegasus": {"runtime": str(runtimes[i])}}) for i in range(n)]
    edges = [("root", f"t{i}") for i in range(n)]
    pinned = draw(st.sampled_from([None, "V"]))  # the user's clusters.size on V wins
    walltime = draw(st.sampled_from([None, 10, 30]))  # minutes
    profiles = {"globus": {"maxwalltime": str(walltime)}} if walltime else {}
    tc = catalog("R", "T", "U", profiles=profiles)
    tc_v = catalog("V", profiles={"pegasus": {"clusters.size": "2"}} if pinned else profiles)
    for t in tc_v:
        tc.add(t)
    model = AutoModel(OverheadModel({"local": overheads(draw(st.floats(0, 5)), draw(st.floats(0, 120)))}),
                      slots=draw(st.integers(1, 10)))
    return workflow(jobs, edges), tc, model, walltime, pinned


@settings(max_examples=80, deadline=None)
@given(cases())
def test_the_planner_keeps_every_task_once_the_wall_time_and_the_users_profiles(
        case: tuple[object, ...]) -> None:
    wf, tc, model, walltime, pinned = case
    ew = run(wf, tc, clustering=["auto"], auto=model)  # type: ignore[arg-type]
    check(wf, ew, horizontal_only=True)  # type: ignore[arg-type]
    for exec_job in ew.jobs:
        runtimes = [float(t.profiles["pegasus"]["runtime"]) for t in exec_job.tasks]
        name = exec_job.transformation or ""
        if pinned and name.endswith("V"):
            assert len(exec_job.tasks) <= 2  # clusters.size 2, whatever auto would do
        elif walltime and len(runtimes) > 1:
            assert sum(runtimes) <= walltime * 60 + 1e-6
    groups = ew.autocluster.get("groups", [])
    for group in groups:
        assert group["jobs"] >= math.ceil(group["tasks"] * 1 / max(group["tasks"], 1))
        assert float(group["predicted_s"]) <= float(group["unclustered_s"]) * 1.01 + 1e-6
    assert not pinned or not any(str(g["transformation"]).endswith("V") for g in groups)
