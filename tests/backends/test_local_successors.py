"""The C thread's reaping and successors (``_cspawn`` with ``reap=True``, ``_successors``), for real:
exits as the Python reaper reported them, a successor started in its predecessor's claim without
the engine's loop, cancelled successors, kills racing the reaper, priorities and free slots."""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from sheaf.backends import MachineLimits, Pool
from sheaf.backends.local import LocalBackend, _spawner
from sheaf.backends.local._spawner import CSpawner, ExitResult, SpawnRequest, SpawnResult
from sheaf.engine import Exited

from .contract import collect, exited, make_launch, unread_fifo, wait_for

MODULE = _spawner._compiled()
pytestmark = pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
ENV = {"PATH": "/usr/bin:/bin"}


def backend_for(tmp_path: Path, config: str = "NUM_CPUS = 1\nMEMORY = 2048\n") -> LocalBackend:
    pool = Pool(config)
    local = LocalBackend(pool, limits=MachineLimits(pool.config, path=tmp_path / "limits.sqlite"))
    assert local._spawner is not None  # the C threads reap
    return local


def running(local: LocalBackend, key: str) -> None:
    """Let the backend hear that ``key`` started (successors are bound to running jobs)."""
    wait_for(lambda: local.wait(0.01) == [] and key in local._jobs)


def reaper() -> CSpawner[str]:
    assert MODULE is not None
    return CSpawner(time.time, MODULE, reap=True)


def results_until(spawner: CSpawner[str], count: int) -> list[SpawnResult[str] | ExitResult[str]]:
    results: list[SpawnResult[str] | ExitResult[str]] = []
    deadline = time.monotonic() + 30.0
    while len(results) < count:
        assert time.monotonic() < deadline, results
        select.select([spawner.wakeup], [], [], 1.0)
        results.extend(spawner.results())
    return results


def sh(tmp: Path, tag: str, script: str, cpus: frozenset[int] | None = None) -> SpawnRequest[str]:
    return SpawnRequest(tag, ["/bin/sh", "-c", script], ENV, str(tmp), f"{tag}.out", f"{tag}.out", cpus)


# -- the C thread alone ------------------------------------------------------------------------------

def test_exit_statuses_signals_and_peak_memory_are_what_wait4_says(tmp_path: Path) -> None:
    spawner = reaper()
    try:
        spawner.submit(sh(tmp_path, "code", "exit 3"))
        spawner.submit(sh(tmp_path, "signal", "kill -TERM $$"))
        big = SpawnRequest("big", [sys.executable, "-c", "b = b'x' * (200 * 2**20)"], ENV, str(tmp_path),
                           "big.out", "big.out", None)
        spawner.submit(big)
        results = results_until(spawner, 6)
    finally:
        assert spawner.close() == []
    starts = {r.tag: r for r in results if isinstance(r, SpawnResult)}
    exits = {r.tag: r for r in results if isinstance(r, ExitResult)}
    assert all(r.spawned is not None and r.spawned.pidfd == -1 for r in starts.values())  # it reaps
    assert os.waitstatus_to_exitcode(exits["code"].status) == 3
    assert os.WIFSIGNALED(exits["signal"].status) and os.WTERMSIG(exits["signal"].status) == signal.SIGTERM
    assert exits["big"].maxrss_kb > 200 * 1024
    assert all(exits[tag].since >= starts[tag].since for tag in exits)


def test_a_successor_starts_as_its_predecessor_is_reaped_on_the_same_cpus(tmp_path: Path) -> None:
    cpus = frozenset({max(os.sched_getaffinity(0))})
    spawner = reaper()
    try:
        first = spawner.submit(sh(tmp_path, "first", "sleep 0.2; exit 4", cpus))
        results = results_until(spawner, 1)
        report = "grep Cpus_allowed_list /proc/self/status"
        assert spawner.follow(first, sh(tmp_path, "second", report, cpus)) is not None
        time.sleep(1.0)  # nobody takes the results meanwhile: the thread carries on by itself
        results += results_until(spawner, 3)
    finally:
        assert spawner.close() == []
    assert [(type(r).__name__, r.tag) for r in results] == [
        ("SpawnResult", "first"), ("ExitResult", "first"),
        ("SpawnResult", "second"), ("ExitResult", "second")]
    assert os.waitstatus_to_exitcode(results[1].status) == 4  # type: ignore[union-attr]
    assert results[2].since >= results[1].since
    assert (tmp_path / "second.out").read_text().split() == ["Cpus_allowed_list:", str(min(cpus))]


def test_a_successor_of_a_reaped_child_is_refused_and_an_unfollowed_one_never_runs(tmp_path: Path) -> None:
    spawner = reaper()
    try:
        gone = spawner.submit(sh(tmp_path, "gone", "true"))
        running = spawner.submit(sh(tmp_path, "running", "sleep 0.3"))
        results = results_until(spawner, 3)  # both started, "gone" reaped
        assert spawner.follow(gone, sh(tmp_path, "late", "touch late")) is None
        handle = spawner.follow(running, sh(tmp_path, "never", "touch never"))
        assert handle is not None and spawner.unfollow(handle)
        assert not spawner.unfollow(handle)
        results += results_until(spawner, 1)
        time.sleep(0.3)
        assert spawner.results() == []
    finally:
        assert spawner.close() == []
    assert {r.tag for r in results} == {"gone", "running"}
    assert not (tmp_path / "never").exists() and not (tmp_path / "late").exists()


def test_a_failed_successor_hands_its_turn_to_the_next(tmp_path: Path) -> None:
    spawner = reaper()
    try:
        first = spawner.submit(sh(tmp_path, "first", "sleep 0.2"))
        results = results_until(spawner, 1)
        program = str(tmp_path / "no-such-program")
        missing = SpawnRequest("missing", [program], ENV, str(tmp_path), "m", "m", None)
        assert spawner.follow(first, missing) is not None
        assert spawner.follow(first, sh(tmp_path, "third", "true")) is not None
        results += results_until(spawner, 4)
    finally:
        assert spawner.close() == []
    assert [(type(r).__name__, r.tag) for r in results] == [
        ("SpawnResult", "first"), ("ExitResult", "first"), ("SpawnResult", "missing"),
        ("SpawnResult", "third"), ("ExitResult", "third")]
    failed = results[2]
    assert isinstance(failed, SpawnResult) and failed.spawned is None
    assert "no-such-program" in str(failed.error)


def test_kill_reaches_a_running_group_and_nothing_once_reaped(tmp_path: Path) -> None:
    spawner = reaper()
    try:
        handle = spawner.submit(sh(tmp_path, "long", "sleep 30 & wait"))
        results = results_until(spawner, 1)
        assert spawner.kill(handle, signal.SIGKILL)
        results += results_until(spawner, 1)
        assert not spawner.kill(handle, signal.SIGKILL)  # reaped: its group id may be anyone's now
    finally:
        assert spawner.close() == []
    assert isinstance(results[1], ExitResult) and os.WTERMSIG(results[1].status) == signal.SIGKILL


def test_close_kills_and_reaps_what_runs_and_drops_bound_successors(tmp_path: Path) -> None:
    spawner = reaper()
    handle = spawner.submit(sh(tmp_path, "long", "sleep 30"))
    results = results_until(spawner, 1)
    assert spawner.follow(handle, sh(tmp_path, "next", "touch next")) is not None
    left = spawner.close()
    assert [(type(r).__name__, r.tag) for r in left] == [("ExitResult", "long")]
    assert isinstance(results[0], SpawnResult) and results[0].spawned is not None
    with pytest.raises(ProcessLookupError):
        os.kill(results[0].spawned.pid, 0)
    assert not (tmp_path / "next").exists()


# -- through the local backend -------------------------------------------------------------------------

def test_successors_start_without_the_engine_loop(tmp_path: Path) -> None:
    """One slot, three launches: the second and third are bound to the first and run while nobody
    calls ``wait`` -- the slot is refilled by the C thread, not by the engine's loop."""
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sleep", "0.5"]))
        running(local, "a#0")
        for name in ("b", "c"):
            local.submit(make_launch(tmp_path, name, ["/bin/sh", "-c", f"echo {name} > {name}.mark"]))
        assert local.idle() == 2 and local.running() == 1
        wait_for((tmp_path / "c.mark").exists)  # no wait() called
        events = collect(local, 3)
        assert local.idle() == 0 and local.running() == 0
        assert local.pool.statistics()["static_claimed"] + local.pool.statistics()["dynamic_slots"] == 0
    assert all(exited(e).exit_code == 0 for e in events.values())
    assert exited(events["a#0"]).ended <= exited(events["b#0"]).started <= exited(events["b#0"]).ended


def test_started_reports_each_successor_once(tmp_path: Path) -> None:
    with backend_for(tmp_path) as local:
        for name in "abcd":
            local.submit(make_launch(tmp_path, name, ["/bin/true"]))
        collect(local, 4)
        assert sorted(s.key for s in local.started()) == ["a#0", "b#0", "c#0", "d#0"]
        assert local.started_total == 4


def test_a_cancelled_successor_never_runs(tmp_path: Path) -> None:
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sleep", "0.3"]))
        local.submit(make_launch(tmp_path, "b", ["/bin/sh", "-c", "touch b.mark"]))
        local.submit(make_launch(tmp_path, "c", ["/bin/sh", "-c", "touch c.mark"]))
        local.cancel("b#0")
        events = collect(local, 2)
    assert sorted(events) == ["a#0", "c#0"]
    assert not (tmp_path / "b.mark").exists() and (tmp_path / "c.mark").exists()


def test_a_successor_cancelled_after_it_started_is_killed_without_an_event(tmp_path: Path) -> None:
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sh", "-c", "sleep 0.3"]))
        running(local, "a#0")
        local.submit(make_launch(tmp_path, "b", ["/bin/sh", "-c", "echo $$ > b.pid; exec sleep 30"]))
        wait_for(lambda: (tmp_path / "b.pid").exists() and (tmp_path / "b.pid").read_text().endswith("\n"))
        local.cancel("b#0")  # the engine has not even seen a's exit: b is still "bound" to it here
        pid = int((tmp_path / "b.pid").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        local.submit(make_launch(tmp_path, "c", ["/bin/true"]))  # the slot is free again
        events = collect(local, 2)
    assert sorted(events) == ["a#0", "c#0"]


def test_cancel_of_a_job_the_c_thread_reaped_already(tmp_path: Path) -> None:
    """The kill races with the reaper: the job ended and was reaped, its exit not yet taken."""
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sh", "-c", "sleep 0.3; touch a.mark"]))
        running(local, "a#0")
        local.submit(make_launch(tmp_path, "b", ["/bin/true"]))
        wait_for((tmp_path / "a.mark").exists)
        time.sleep(0.2)  # a is reaped by now, b started in its slot
        local.cancel("a#0")
        events = collect(local, 1)
        assert local.wait(0.2) == []
    assert sorted(events) == ["b#0"]


def test_a_running_job_with_successors_is_cancelled_and_its_successors_still_run(tmp_path: Path) -> None:
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sleep", "30"]))
        running(local, "a#0")
        local.submit(make_launch(tmp_path, "b", ["/bin/true"]))
        assert "b#0" in local._successors.bound
        begin = time.monotonic()
        local.cancel("a#0")
        assert time.monotonic() - begin < 10.0
        events = collect(local, 1)
    assert sorted(events) == ["b#0"]


def test_a_more_urgent_launch_goes_before_the_bound_ones(tmp_path: Path) -> None:
    with backend_for(tmp_path) as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sleep", "0.3"]))
        running(local, "a#0")
        local.submit(make_launch(tmp_path, "b", ["/bin/true"]))
        local.submit(make_launch(tmp_path, "c", ["/bin/true"]))
        local.submit(make_launch(tmp_path, "urgent", ["/bin/true"], priority=10))
        events = {k: exited(e) for k, e in collect(local, 4).items()}
    assert events["a#0"].ended <= events["urgent#0"].started <= events["b#0"].started <= events["c#0"].started


def test_a_slot_freed_elsewhere_takes_a_launch_bound_behind_a_long_job(tmp_path: Path) -> None:
    """Two slots: a launch bound behind a long job goes back to the queue when the other slot frees."""
    with backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 2048\n") as local:
        local.submit(make_launch(tmp_path, "long", ["/bin/sleep", "5"]))
        local.submit(make_launch(tmp_path, "short", ["/bin/sleep", "0.3"]))
        running(local, "long#0")
        running(local, "short#0")
        for name in "bcd":
            local.submit(make_launch(tmp_path, name, ["/bin/true"]))
        assert local._successors.bound["b#0"].chain is local._jobs["long#0"].chain
        events = collect(local, 4)
        assert "long#0" not in events
        local.cancel("long#0")
    assert all(isinstance(e, Exited) and e.exit_code == 0 for e in events.values())


def test_memory_is_policed_by_pid_and_the_kill_is_reported(tmp_path: Path) -> None:
    hungry = "import time; block = b'x' * (400 * 2**20); time.sleep(5)"
    with backend_for(tmp_path, "NUM_CPUS = 1\nMEMORY = 4096\n") as local:
        local.submit(make_launch(tmp_path, "hungry", [sys.executable, "-c", hungry], ad="RequestMemory = 100",
                                 env=dict(os.environ)))
        running(local, "hungry#0")
        local.submit(make_launch(tmp_path, "after", ["/bin/true"], ad="RequestMemory = 100"))
        events = collect(local, 2)
    event = exited(events["hungry#0"])
    assert event.signal == 9 and event.reason is not None and "exceeded request 100 MB" in event.reason
    assert exited(events["after#0"]).exit_code == 0


@pytest.mark.parametrize("stream", ["stdout", "stderr", "stdin"])
def test_a_successor_whose_output_is_a_fifo_does_not_hold_up_the_reaping(tmp_path: Path, stream: str) -> None:
    """A successor that may block in its spawn (a FIFO with no peer as its output, its error apart
    from its output, or its input) goes to the spawner thread; the reapers go on reporting the
    other slot's exits meanwhile."""
    peer = os.O_WRONLY if stream == "stdin" else os.O_RDONLY  # what lets the job's open through
    with unread_fifo(tmp_path, 20.0, peer) as fifo, \
            backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 2048\n") as local:
        local.submit(make_launch(tmp_path, "a", ["/bin/sleep", "0.3"]))
        local.submit(make_launch(tmp_path, "x", ["/bin/sleep", "1.0"]))
        running(local, "a#0")
        running(local, "x#0")
        blocked = make_launch(tmp_path, "blocked", ["/bin/true"])
        local.submit(dataclasses.replace(blocked, **{stream: str(fifo)}))
        chain = local._successors.bound["blocked#0"].chain  # the two starts' order is the reapers'
        assert any(chain is local._jobs[key].chain for key in ("a#0", "x#0"))
        events = collect(local, 2, timeout=15.0)  # a, then x while "blocked" waits for a peer
        assert sorted(events) == ["a#0", "x#0"]
        other = os.open(fifo, peer | os.O_NONBLOCK)
        try:
            assert exited(collect(local, 1)["blocked#0"]).exit_code == 0
        finally:
            os.close(other)


def test_successors_that_block_in_their_spawn_never_hold_up_another_slots_successor(tmp_path: Path) -> None:
    """Reapers start successors, and never wait for a peer: successors whose output is a FIFO nobody
    reads go to the spawner thread (one blocks there, the next waits behind it), while the third
    slot's successor starts and ends."""
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    with unread_fifo(first, 20.0) as fifo1, unread_fifo(second, 20.0) as fifo2, \
            backend_for(tmp_path, "NUM_CPUS = 3\nMEMORY = 2048\n") as local:
        for name in ("a", "b", "c"):
            local.submit(make_launch(tmp_path, name, ["/bin/sleep", "0.3"]))
        for name in ("a", "b", "c"):
            running(local, f"{name}#0")
        for name, fifo in (("f1", fifo1), ("f2", fifo2)):
            local.submit(dataclasses.replace(make_launch(tmp_path, name, ["/bin/true"]), stdout=str(fifo)))
        local.submit(make_launch(tmp_path, "plain", ["/bin/true"]))
        assert sorted(local._successors.bound) == ["f1#0", "f2#0", "plain#0"]  # one behind each job
        events = collect(local, 4, timeout=15.0)  # the FIFOs' last-resort readers come after 20 s
        assert sorted(events) == ["a#0", "b#0", "c#0", "plain#0"]
        assert exited(events["plain#0"]).exit_code == 0
        readers = [os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) for fifo in (fifo1, fifo2)]
        try:
            assert sorted(collect(local, 2, timeout=15.0)) == ["f1#0", "f2#0"]
        finally:
            for reader in readers:
                os.close(reader)


def test_launches_put_back_in_the_queue_keep_their_places_and_shapes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A slot freed elsewhere puts every bound launch back (``withdraw``): in its place, with the
    shape it was queued with -- not computed again (``shape_of`` was most of a push's cost), and
    each chain rebuilt once, keeping what the C thread took already."""
    from sheaf.backends import _queue

    shaped: list[str] = []
    shape_of = _queue.shape_of
    monkeypatch.setattr(_queue, "shape_of", lambda ad: shaped.append(str(ad.eval("Cmd"))) or shape_of(ad))
    with backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 2048\n") as local:
        local.submit(make_launch(tmp_path, "long", ["/bin/sleep", "5"]))
        local.submit(make_launch(tmp_path, "short", ["/bin/sleep", "0.3"]))
        running(local, "long#0")
        running(local, "short#0")
        for name in "bcdef":
            local.submit(make_launch(tmp_path, name, ["/bin/true"]))
        bound = dict(local._successors.bound)
        assert len(bound) == 5 and len(shaped) == 7  # each launch shaped once, as it was queued
        local._successors.withdraw(local._jobs)
        assert not local._successors.bound and len(local._queue) == 5
        assert all(not job.chain for job in local._jobs.values())
        assert len(shaped) == 7
        assert [launch.key for launch in local._queue.launches()] == [f"{n}#0" for n in "bcdef"]
        first = local._queue.first()
        assert first is not None and first[1].key == "b#0" and first[2] == bound["b#0"].shape
        events = collect(local, 6)
        local.cancel("long#0")
    assert sorted(events) == ["b#0", "c#0", "d#0", "e#0", "f#0", "short#0"]
