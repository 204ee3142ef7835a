"""Calibration inverts the simulation: a run simulated under known overheads, read back as the
events database would record it, gives those overheads again."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.monitor import JobTiming
from sheaf.predict import (
    Dist,
    OverheadModel,
    Overheads,
    Platform,
    SimJob,
    SimWorkflow,
    fit_overheads,
    simulate,
)


def observed(wf: SimWorkflow, slots: int, o: Overheads) -> list[JobTiming]:
    p = simulate(wf, Platform({None: slots}), OverheadModel({"local": o}), replicates=0, schedule=True)
    parents: dict[int, list[int]] = {}
    for a, b in wf.edges:
        parents.setdefault(b, []).append(a)
    done = [node_done for _, _, node_done in p.schedule]
    # summed as the simulation sums a job's slot time, so that an end and the start it frees tie exactly
    ended = [start + (o.launch.mean + len(job.runtimes) * o.task.mean + sum(job.runtimes))
             for job, (_, start, _) in zip(wf.jobs, p.schedule, strict=True)]
    last = {max(ps, key=lambda q: done[q]) for ps in parents.values()}
    ready = [max((done[q] for q in parents.get(j, ())), default=0.0) for j in range(len(wf.jobs))]
    return [JobTiming(job.id, "compute", None, len(job.runtimes), sum(job.runtimes), ready[j],
                      p.schedule[j][0], p.schedule[j][1], ended[j], done[j], j in last)
            for j, job in enumerate(wf.jobs)]


def fan(n: int, runtime: float, per_cluster: int) -> SimWorkflow:
    jobs = [SimJob("root", runtimes=(1.0,))]
    jobs += [SimJob(f"c{i}", level=1, runtimes=(runtime,) * (1 + i % per_cluster)) for i in range(n)]
    jobs.append(SimJob("merge", level=2, runtimes=(1.0,)))
    edges = [(0, i + 1) for i in range(n)] + [(i + 1, n + 1) for i in range(n)]
    return SimWorkflow(jobs, edges)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 5), st.floats(0, 3), st.floats(0, 0.5), st.floats(0, 2), st.integers(1, 6))
def test_the_fit_recovers_the_delays_a_simulated_run_was_made_with(submit: float, launch: float, task: float,
                                                                   post: float, slots: int) -> None:
    truth = Overheads(submit=Dist(submit), launch=Dist(launch), task=Dist(task), post=Dist(post),
                      speed_cv=0.0)
    fitted = fit_overheads(observed(fan(30, 2.0, 4), slots, truth), Overheads(), "test")
    assert fitted.submit.mean == pytest.approx(submit, abs=1e-6)
    assert fitted.post.mean == pytest.approx(post, abs=1e-6)
    # a job that waits may find its slot freed before its own latency is over: that wait is read as
    # the slot's turnover, so the slot time is recovered to within the latency's share of it
    assert fitted.launch.mean + fitted.task.mean * 2 == pytest.approx(launch + task * 2, rel=0.1, abs=1e-6)
    assert fitted.dispatch == 0.0


@pytest.mark.parametrize("dispatch", [0.5, 1.0, 3.0])
def test_a_scheduler_that_starts_one_job_a_pass_is_told_from_slots(dispatch: float) -> None:
    truth = Overheads(submit=Dist(0.2), launch=Dist(0.05), dispatch=dispatch, speed_cv=0.0)
    fitted = fit_overheads(observed(fan(40, 0.1, 1), 8, truth), Overheads(), "test")
    assert fitted.dispatch == pytest.approx(dispatch, rel=0.05)
    assert fitted.launch.mean == pytest.approx(0.05, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 0.01), st.floats(0, 0.01), st.integers(1, 6))
def test_single_task_jobs_recover_their_whole_slot_time_even_below_the_default_task_cost(
        launch: float, task: float, slots: int) -> None:
    """With one task a job, launch and task cannot be told apart; their sum is what the jobs paid,
    not the base model's per-task cost when the jobs paid less than it."""
    truth = Overheads(submit=Dist(0.1), launch=Dist(launch), task=Dist(task), speed_cv=0.0)
    fitted = fit_overheads(observed(fan(30, 1.0, 1), slots, truth), Overheads(task=Dist(0.004)), "test")
    assert fitted.launch.mean + fitted.task.mean == pytest.approx(launch + task, rel=0.1, abs=2e-4)
