"""The simulator on workflows whose makespan is known in closed form, and its invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.predict import Dist, OverheadModel, Overheads, Platform, SimJob, SimWorkflow, simulate


def model(**components: float) -> OverheadModel:
    """Constant overheads (cv 0, no run-to-run spread) on the local backend."""
    fixed = Overheads(**{name: Dist(value) for name, value in components.items()}, speed_cv=0.0)
    return OverheadModel({"local": fixed})


def chain(*runtimes: float) -> SimWorkflow:
    jobs = [SimJob(f"j{i}", level=i, runtimes=(r,)) for i, r in enumerate(runtimes)]
    return SimWorkflow(jobs, [(i, i + 1) for i in range(len(jobs) - 1)])


def test_a_chain_costs_its_runtimes_and_every_delay_of_every_job() -> None:
    delays = model(engine=1, submit=2, launch=0.5, task=0.25, post=3)
    p = simulate(chain(10, 20, 30), Platform({None: 4}), delays)
    per_job = 1 + 2 + 0.5 + 0.25 + 3
    assert p.makespan_s == pytest.approx(60 + 3 * per_job)
    assert p.low_s == p.high_s == p.makespan_s  # nothing varies
    assert p.critical_path_s == pytest.approx(p.makespan_s)
    assert p.work_s == 60 and p.overhead_s == pytest.approx(3 * per_job)
    assert [f.level for f in p.levels] == [0, 1, 2]


def test_independent_jobs_wait_for_slots_first_come_first_served() -> None:
    jobs = [SimJob(f"j{i}", runtimes=(10.0,)) for i in range(5)]
    p = simulate(SimWorkflow(jobs, []), Platform({None: 2}), model(submit=1), schedule=True)
    # three waves on two slots: 1 + 10, then 10, then 10
    assert p.makespan_s == pytest.approx(31)
    starts = sorted(start for _, start, _ in p.schedule)
    assert starts == pytest.approx([1, 1, 11, 11, 21])
    assert p.utilisation == pytest.approx(50 / (2 * 31))


def test_a_cluster_runs_its_tasks_one_after_another_each_paying_the_task_cost() -> None:
    seq = SimWorkflow([SimJob("c", runtimes=(1.0, 2.0, 3.0))], [])
    assert simulate(seq, Platform({None: 8}), model(launch=1, task=0.5)).makespan_s == pytest.approx(8.5)
    pmc = SimWorkflow([SimJob("c", runtimes=(4.0, 3.0, 2.0, 2.0, 1.0), parallel=2, cpus=2)], [])
    # longest first onto two cores: 4+2 | 3+2+1 -> 6
    assert simulate(pmc, Platform({None: 8}), model()).makespan_s == pytest.approx(6)


def test_maxjobs_and_a_category_throttle_serialise_submissions() -> None:
    jobs = [SimJob(f"j{i}", runtimes=(5.0,), category="big" if i < 3 else None) for i in range(5)]
    free = simulate(SimWorkflow(jobs, []), Platform({None: 10}), model())
    assert free.makespan_s == pytest.approx(5)
    one_big = simulate(SimWorkflow(jobs, [], category_limits={"big": 1}), Platform({None: 10}), model())
    assert one_big.makespan_s == pytest.approx(15)
    two_at_once = simulate(SimWorkflow(jobs, [], maxjobs=2), Platform({None: 10}), model())
    assert two_at_once.makespan_s == pytest.approx(15)


def test_priority_decides_who_takes_the_only_slot() -> None:
    jobs = [SimJob("low", runtimes=(5.0,)), SimJob("high", runtimes=(7.0,), priority=10)]
    p = simulate(SimWorkflow(jobs, [], maxjobs=1), Platform({None: 1}), model(), schedule=True)
    assert p.schedule[1][1] == 0 and p.schedule[0][1] == pytest.approx(7)


def test_noop_nodes_take_no_slot_and_data_bytes_move_at_the_bandwidth() -> None:
    jobs = [SimJob("noop", noop=True), SimJob("in", bytes=200e6), SimJob("b", runtimes=(1.0,))]
    fixed = OverheadModel({"local": Overheads(bandwidth=100e6, speed_cv=0.0)})
    p = simulate(SimWorkflow(jobs, [(0, 1), (1, 2)]), Platform({None: 1}), fixed)
    assert p.makespan_s == pytest.approx(2 + 1) and p.jobs == 2


def test_memory_limits_how_many_jobs_share_a_site() -> None:
    jobs = [SimJob(f"j{i}", runtimes=(10.0,), memory=600) for i in range(4)]
    p = simulate(SimWorkflow(jobs, []), Platform({None: 4}, memory={None: 1000}), model())
    assert p.makespan_s == pytest.approx(40)


def test_delays_that_vary_give_an_interval_around_the_median() -> None:
    jobs = [SimJob(f"j{i}", runtimes=(10.0,), spread=0.3) for i in range(200)]
    varied = OverheadModel({"local": Overheads(submit=Dist(2.0, 0.8), speed_cv=0.05)})
    p = simulate(SimWorkflow(jobs, []), Platform({None: 20}), varied, replicates=30)
    assert p.low_s < p.makespan_s < p.high_s and p.replicates == 30
    assert simulate(SimWorkflow(jobs, []), Platform({None: 20}), varied, replicates=30) == p  # seeded


@st.composite
def workflows(draw: st.DrawFn) -> SimWorkflow:
    n = draw(st.integers(1, 25))
    runtimes = draw(st.lists(st.floats(0, 100), min_size=n, max_size=n))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    edges = sorted({(a, b) if a < b else (b, a) for a, b in edges if a != b})
    jobs = [SimJob(f"j{i}", runtimes=(r,), priority=draw(st.integers(-2, 2))) for i, r in enumerate(runtimes)]
    return SimWorkflow(jobs, edges, maxjobs=draw(st.integers(0, 4)))


@settings(max_examples=150, deadline=None)
@given(workflows(), st.integers(1, 6), st.floats(0, 5))
def test_bounds_hold_for_any_dag(wf: SimWorkflow, slots: int, overhead: float) -> None:
    p = simulate(wf, Platform({None: slots}), model(submit=overhead), replicates=1)
    busy = sum(job.runtimes[0] for job in wf.jobs)
    assert p.makespan_s >= p.critical_path_s - 1e-6           # no platform beats the longest path
    assert p.makespan_s >= busy / slots - 1e-6                # nor the work spread over every slot
    assert p.makespan_s <= busy + len(wf.jobs) * overhead + 1e-6  # one job at a time is the worst
    if slots >= len(wf.jobs) and not wf.maxjobs:
        assert p.makespan_s == pytest.approx(p.critical_path_s)
    assert 0 <= p.utilisation <= 1 and not math.isnan(p.makespan_s)


@settings(max_examples=100, deadline=None)
@given(workflows(), st.integers(1, 6), st.floats(0, 5, allow_subnormal=False),
       st.floats(0, 3, allow_subnormal=False), st.sampled_from([0.125, 0.5, 2.0, 8.0]))
def test_scaling_every_time_scales_the_makespan(wf: SimWorkflow, slots: int, overhead: float,
                                                dispatch: float, factor: float) -> None:
    """What lets one event-loop run stand for many speed draws: a run whose every delay, runtime and
    dispatch interval is ``factor`` times as long takes ``factor`` times as long (no time in the
    simulation is absolute).  Powers of two scale floats exactly, so ties stay ties."""
    def at(scale: float) -> float:
        fixed = Overheads(submit=Dist(overhead * scale), post=Dist(overhead * scale / 2),
                          dispatch=dispatch * scale, speed_cv=0.0)
        jobs = [SimJob(j.id, runtimes=tuple(r * scale for r in j.runtimes), priority=j.priority)
                for j in wf.jobs]
        scaled = SimWorkflow(jobs, wf.edges, maxjobs=wf.maxjobs)
        model = OverheadModel({"local": fixed})
        return simulate(scaled, Platform({None: slots}), model, replicates=0).makespan_s

    assert at(factor) == factor * at(1.0)


def test_the_run_to_run_spread_alone_gives_the_normal_interval() -> None:
    """Delays fixed, the speed factor varying by 10%: p10 and p90 lie about 1.28 spreads either side."""
    fixed = Overheads(submit=Dist(2.0), speed_cv=0.1)
    p = simulate(chain(10, 20, 30), Platform({None: 1}), OverheadModel({"local": fixed}))
    assert p.low_s / p.makespan_s == pytest.approx(1 - 0.128, abs=0.03)
    assert p.high_s / p.makespan_s == pytest.approx(1 + 0.128, abs=0.03)
