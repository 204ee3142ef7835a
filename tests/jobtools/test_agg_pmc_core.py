"""The PMC scheduler core, without processes: feed workers and results, check the assignments."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.formats._pmcdag import PmcDag, PmcTask
from sheaf.jobtools._pmc_core import Scheduler


def _dag(tasks: list[PmcTask], edges: Sequence[tuple[str, str]] = ()) -> PmcDag:
    return PmcDag({t.name: t for t in tasks}, tuple(edges))


def _t(name: str, memory: int = 0, cpus: int = 1, tries: int | None = None, priority: int = 0) -> PmcTask:
    return PmcTask(name, ("/bin/true",), memory, cpus, tries, priority)


def test_priority_then_readiness_order_and_deferral() -> None:
    dag = _dag([_t("low", priority=-5), _t("big", priority=9, memory=80), _t("mid"), _t("high", priority=3)])
    s = Scheduler(dag, (), default_tries=1)
    s.add_worker(1, "h", memory=100, cpus=4)
    s.add_worker(2, "h", memory=100, cpus=4)
    first = s.schedule()
    assert [(a.rank, a.task.name) for a in first] == [(1, "big"), (2, "high")]
    s.finished(1, True)
    assert [a.task.name for a in s.schedule()] == ["mid"]
    s.finished(2, True)
    assert [a.task.name for a in s.schedule()] == ["low"]


def test_a_task_that_does_not_fit_now_lets_a_smaller_one_run() -> None:
    dag = _dag([_t("a", memory=60), _t("b", memory=60, priority=5), _t("c", memory=30)])
    s = Scheduler(dag, (), default_tries=1)
    for rank in (1, 2, 3):
        s.add_worker(rank, "h", memory=100, cpus=8)
    assert sorted(a.task.name for a in s.schedule()) == ["b", "c"]  # "a" deferred: 60 + 60 > 100


def test_retries_failure_and_descendants() -> None:
    dag = _dag([_t("a", tries=2), _t("b"), _t("c")], [("a", "b"), ("b", "c")])
    s = Scheduler(dag, (), default_tries=1)
    s.add_worker(1, "h", 0, 1)
    assert [a.attempt for a in s.schedule()] == [1]
    assert not s.finished(1, False).final
    assert [a.attempt for a in s.schedule()] == [2]
    outcome = s.finished(1, False)
    assert outcome.final and not outcome.success
    assert s.schedule() == [] and s.is_finished() and not s.succeeded_all()


def test_lost_worker_requeues_without_using_a_try() -> None:
    s = Scheduler(_dag([_t("a")]), (), default_tries=1)
    s.add_worker(1, "h", 0, 1)
    s.add_worker(2, "h", 0, 1)
    (a,) = s.schedule()
    assert s.worker_lost(a.rank) == "a"
    (again,) = s.schedule()
    assert again.rank != a.rank and again.attempt == 1
    s.finished(again.rank, True)
    assert s.is_finished() and s.succeeded_all()


def test_rescue_done_tasks_release_children_and_unrunnable() -> None:
    dag = _dag([_t("a"), _t("b", cpus=4)], [("a", "b")])
    s = Scheduler(dag, {"a"}, default_tries=1)
    s.add_worker(1, "h", 0, 2)
    assert s.unrunnable() == "b"
    s.add_worker(2, "bigger", 0, 4)
    assert s.unrunnable() is None
    assert [(a.rank, a.task.name) for a in s.schedule()] == [(2, "b")]


def test_set_affinity_binds_contiguous_cpus() -> None:
    dag = _dag([_t("x", cpus=2), _t("y", cpus=2), _t("z", cpus=1)])
    s = Scheduler(dag, (), default_tries=1, set_affinity=True)
    for rank in (1, 2, 3):
        s.add_worker(rank, "h", 0, 5)
    got = {a.task.name: a.bindings for a in s.schedule()}
    assert got == {"x": (0, 1), "y": (2, 3), "z": ()}


def test_max_failures_stops_new_work() -> None:
    s = Scheduler(_dag([_t("a"), _t("b"), _t("c")]), (), default_tries=1, max_failures=1)
    s.add_worker(1, "h", 0, 1)
    s.schedule()
    s.finished(1, False)
    assert s.stopped() and s.schedule() == [] and s.is_finished()


@st.composite
def _case(draw: st.DrawFn) -> tuple[PmcDag, int, int]:
    n = draw(st.integers(1, 25))
    names = [f"t{i}" for i in range(n)]
    tasks = [_t(name, memory=draw(st.integers(0, 100)), cpus=draw(st.integers(1, 4)),
                priority=draw(st.integers(-3, 3)), tries=draw(st.integers(1, 3))) for name in names]
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(
        lambda e: e[0] < e[1]).map(lambda e: (names[e[0]], names[e[1]])), unique=True, max_size=40))
    return _dag(tasks, edges), draw(st.integers(1, 4)), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=100, deadline=None)
@given(_case())
def test_random_runs_keep_every_invariant(case: tuple[PmcDag, int, int]) -> None:
    dag, workers, seed = case
    rng = random.Random(seed)
    s = Scheduler(dag, (), default_tries=1)
    for rank in range(1, workers + 1):
        s.add_worker(rank, f"h{rank % 2}", memory=100, cpus=4)
    parents = {name: {p for p, c in dag.edges if c == name} for name in dag.tasks}
    done_order: list[str] = []
    while not s.is_finished():
        for a in s.schedule():
            assert parents[a.task.name] <= s.done  # never before its parents
            assert a.task.name not in s.done and a.attempt <= (a.task.tries or 1)
        for host in s.hosts.values():  # resources never oversubscribed
            assert host.memory_free >= 0 and host.cpus_free >= 0
        assert s.running, "ready work left but nothing running: the scheduler is stuck"
        rank = rng.choice(sorted(s.running))
        if rng.random() < 0.1 and len(s.slot_host) > 1:
            s.worker_lost(rank)
            continue
        outcome = s.finished(rank, rng.random() < 0.7)
        if outcome.success:
            done_order.append(outcome.name)
    assert len(done_order) == len(set(done_order))  # done at most once
    blocked = s.failed_tasks | {c for p, c in dag.edges if p in s.failed_tasks}
    if not blocked and s.slot_host:
        assert s.succeeded_all()
