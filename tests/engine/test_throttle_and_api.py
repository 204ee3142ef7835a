"""Throttles as objects, random DAGs through the loop (hypothesis), and the pinned public surface."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sheaf.engine
import sheaf.engine._run
import sheaf.monitor
from engine_helpers import FakeBackend, write_dag
from sheaf.engine import DagmanOptions, Exited, Held, run_workflow
from sheaf.engine._throttle import IdleThrottle, Throttle


def test_throttle_capacity_is_validated() -> None:
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="capacity must be an integer >= 0"):
            Throttle("maxjobs", bad)  # type: ignore[arg-type]


def test_throttle_acquire_is_non_blocking_and_counted() -> None:
    t = Throttle("maxpre", 2)
    assert t.try_acquire() and t.try_acquire() and not t.try_acquire()
    assert (t.statistics().borrowed, t.statistics().refused) == (2, 1)
    t.release()
    assert t.try_acquire()
    for _ in range(2):
        t.release()
    with pytest.raises(RuntimeError, match="without a matching acquire"):
        t.release()


def test_zero_means_unlimited() -> None:
    t = Throttle("maxjobs", 0)
    assert all(t.try_acquire() for _ in range(10_000))


def test_idle_throttle_follows_the_backend() -> None:
    t = IdleThrottle("maxidle", 2)
    t.observe(1)
    assert t.try_acquire() and not t.try_acquire()
    t.observe(0)
    assert t.try_acquire()


def test_public_surface_is_pinned() -> None:
    assert sorted(sheaf.engine.__all__) == sorted([
        "ATTEMPT_VARIABLE", "Adopts", "Backend", "BeginRecord", "Change", "ChangeRecord", "Dag", "DagState",
        "DagmanOptions", "Damage", "EndRecord", "Event", "EventTranslator", "Exited", "FileTransfer", "Held",
        "Launch", "Limits", "NodeEvent", "NodeState", "Pollable", "ProcessRecord", "Progress", "Released",
        "Removed", "Replay", "ReportsStarts", "Requeued", "RunResult", "STATES", "SelfRefilling", "Started",
        "Suspended", "dagman_id",
        "expand_launch", "find_dag", "lock_holder", "needs_expansion", "node_description", "parse_dag",
        "parse_submit", "read_journal", "read_records", "rescue_dag_number", "run_workflow", "scan_journal",
        "split_arguments", "split_environment", "state_paths", "stop_in_process",
    ])
    assert sheaf.monitor.__all__ == [
        "Analysis", "EventsLoader", "FailedJob", "FailedTask", "JobTiming", "PlanJob", "PlanProfiles",
        "PlotData", "RunEntry", "RunTimings", "RunView", "Statistics", "SubStatus", "WorkflowStatus", "age",
        "analyze", "braindump", "events_enabled", "format_seconds", "list_runs", "make_server",
        "master_db_path", "open_events", "plan_json", "plot_data", "run_timings", "sub_workflows",
        "task_history", "workflow_statistics", "workflow_status", "write_plots"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), nodes=st.integers(1, 30), maxjobs=st.integers(0, 3))
def test_random_dags_respect_dependencies_retries_and_throttles(tmp_path_factory: pytest.TempPathFactory,
                                                                seed: int, nodes: int, maxjobs: int) -> None:
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("dag")
    names = [f"n{i}" for i in range(nodes)]
    parents = {n: sorted(rng.sample(names[:i], rng.randint(0, min(i, 3)))) for i, n in enumerate(names)}
    retries = {n: rng.randint(0, 2) for n in names}
    body = "".join(f"JOB {n} {n}.sub\nRETRY {n} {retries[n]}\nPRIORITY {n} {rng.randint(0, 5)}\n"
                   for n in names)
    body += "".join(f"PARENT {' '.join(p)} CHILD {n}\n" for n, p in parents.items() if p)
    write_dag(tmp, body)
    backend = FakeBackend(per_wait=rng.randint(1, 4))
    failures = {n: rng.choice([0, 0, 1, 2, 3]) for n in names}
    for n in names:
        backend.script(n, [1] * failures[n])
    peak = 0

    def observe(launch: object) -> None:
        nonlocal peak
        peak = max(peak, len(backend.queue) + 1)

    backend.hook = observe
    result = run_workflow(str(tmp), backend=backend, options=DagmanOptions(maxjobs=maxjobs),
                          handle_signals=False)
    ok = {n for n in names if failures[n] <= retries[n]}
    done: set[str] = set()
    for n in names:  # a node is done iff it and all its ancestors could succeed
        if n in ok and all(p in done for p in parents[n]):
            done.add(n)
    assert result.done == len(done) and result.succeeded == (len(done) == nodes)
    order = backend.nodes()
    first = {n: order.index(n) for n in set(order)}
    for n, position in first.items():
        assert all(p in done and first[p] < position for p in parents[n]), "a child ran before its parents"
        assert order.count(n) == min(failures[n], retries[n]) + 1, "attempts = failures survived + 1"
    assert not maxjobs or peak <= maxjobs


def test_dispatch_order_does_not_depend_on_hash_seed(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("seed")
    body = "".join(f"JOB n{i} n{i}.sub\nCATEGORY n{i} c{i % 3}\nPRIORITY n{i} {i % 4}\n" for i in range(40))
    body += "MAXJOBS c0 1\nMAXJOBS c1 2\n" + "".join(f"PARENT n{i} CHILD n{i + 7}\n" for i in range(0, 30, 3))
    script = textwrap.dedent(f"""
        import shutil, sys, tempfile
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from engine_helpers import FakeBackend, write_dag
        from sheaf.engine import DagmanOptions, run_workflow
        d = Path(tempfile.mkdtemp(dir={str(tmp)!r}))
        write_dag(d, {body!r})
        fake = FakeBackend(per_wait=2)
        run_workflow(str(d), backend=fake, options=DagmanOptions(maxjobs=3), handle_signals=False)
        print(" ".join(fake.nodes()))
    """)
    orders = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "12345")}
    assert len(orders) == 1 and len(orders.pop().split()) == 40


class _SlowBackend(FakeBackend):
    """One exit per wait, each after a pause (a job's run)."""

    def wait(self, timeout: float | None) -> list[Exited | Held]:
        time.sleep(0.002)
        return super().wait(timeout)


class _RefillingBackend(_SlowBackend):
    """... whose queued attempts start by themselves (as the local backend's do)."""

    self_refilling = True


def test_a_turn_carries_many_exits_while_the_backend_refills_itself(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """While the backend has attempts queued, the loop collects exits for a while before it turns,
    so that one journal commit carries many; with nothing queued it turns at once (a chain)."""
    monkeypatch.setattr(sheaf.engine._run, "_BATCH_SECONDS", 60.0)  # bounded by the queue alone
    body = "".join(f"JOB n{i} n.sub\n" for i in range(300))
    write_dag(tmp_path / "wide", body)
    plain = _run(tmp_path / "wide", _SlowBackend(per_wait=1))
    write_dag(tmp_path / "wide2", body)
    batched = _run(tmp_path / "wide2", _RefillingBackend(per_wait=1))
    assert plain.succeeded and batched.succeeded
    assert plain.journal_commits > 40 and batched.journal_commits < 10
    chain = "".join(f"JOB c{i} n.sub\n" for i in range(20)) + "".join(
        f"PARENT c{i} CHILD c{i + 1}\n" for i in range(19))
    write_dag(tmp_path / "chain", chain)
    linked = _run(tmp_path / "chain", _RefillingBackend(per_wait=1))
    assert linked.succeeded and linked.wall_time < 30.0  # each turn at once: nothing was ever queued


def _run(directory: Path, backend: FakeBackend) -> sheaf.engine.RunResult:
    return run_workflow(str(directory), backend=backend, handle_signals=False)
