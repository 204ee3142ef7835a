"""When the C reaper wakes the engine (``_cspawn``'s "Wake-ups"), for real: what the engine must act
on is told at once even with a coalescing window of ten minutes -- an exit with no successor (a
chain of dependent nodes), a kill's answer, a successor left with few of its own -- and the rest
within the window; a successor bound to a child reaped meanwhile joins its chain; and a commit in
flight is waited for on the backend's descriptor and the journal's eventfd (``EngineRun._durable``),
not by polling ``wait`` every 0.5 ms."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sheaf.backends import Pool
from sheaf.backends.local import LocalBackend, _spawner
from sheaf.backends.local._spawner import CSpawner, ExitResult, SpawnRequest, SpawnResult
from sheaf.engine._journal import Journal
from sheaf.engine._run import EngineRun

from .contract import make_launch

MODULE = _spawner._compiled()
needs_c = pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
ENV = {"PATH": "/usr/bin:/bin"}
NEVER = 600.0  # a coalescing window no test waits out
Result = SpawnResult[str] | ExitResult[str]


def spawner(coalesce: float = NEVER) -> CSpawner[str]:
    assert MODULE is not None
    return CSpawner(time.time, MODULE, reap=True, coalesce=coalesce)


def job(tmp: Path, tag: str, *argv: str) -> SpawnRequest[str]:
    return SpawnRequest(tag, list(argv), ENV, str(tmp), f"{tag}.out", f"{tag}.out", None)


def told(s: CSpawner[str], seen: list[Result], kind: type, tag: str, within: float = 30.0) -> bool:
    """Whether the result (``kind``, ``tag``) is in ``seen`` or told within ``within`` seconds."""
    deadline = time.monotonic() + within
    while not any(isinstance(r, kind) and r.tag == tag for r in seen):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if select.select([s.wakeup], [], [], left)[0]:
            seen.extend(s.results())
    return True


def started(seen: list[Result], tag: str) -> SpawnResult[str]:
    return next(r for r in seen if isinstance(r, SpawnResult) and r.tag == tag)


def chain(s: CSpawner[str], seen: list[Result], tmp: Path, first: str, tags: str, *argv: str) -> int:
    """Start ``a`` (``sleep first``) and bind ``tags`` behind it, each running ``argv``; a's handle."""
    s.submit(job(tmp, "a", "/bin/sleep", first))
    assert told(s, seen, SpawnResult, "a")  # the spawner thread's starts are told at once
    after = started(seen, "a").handle
    for tag in tags:
        assert s.follow(after, job(tmp, tag, *argv)) is not None
    return after


@needs_c
def test_exits_with_no_successor_are_told_at_once(tmp_path: Path) -> None:
    """A chain of dependent nodes: each job's exit frees its claim, so each is told at once."""
    s = spawner()
    try:
        seen: list[Result] = []
        for i in range(20):
            s.submit(job(tmp_path, f"j{i}", "/bin/true"))
            assert told(s, seen, ExitResult, f"j{i}"), f"the exit of j{i} was held back"
    finally:
        s.close()


@needs_c
def test_a_successor_start_is_coalesced_and_a_kill_is_answered_at_once(tmp_path: Path) -> None:
    s = spawner()
    try:
        seen: list[Result] = []
        # b starts with 6 behind it, and c with 5 once b is killed: no need to wake the engine for them
        chain(s, seen, tmp_path, "0.2", "bcdefgh", "/bin/sleep", "30")
        assert not told(s, seen, SpawnResult, "b", within=1.0)
        seen.extend(s.results())  # taken without a wake-up: a's exit and b's start are there
        assert any(isinstance(r, ExitResult) and r.tag == "a" for r in seen)
        assert s.kill(started(seen, "b").handle)
        assert told(s, seen, ExitResult, "b"), "the killed job's exit was held back"
    finally:
        s.close()


@needs_c
def test_a_successor_left_with_few_of_its_own_is_told_at_once(tmp_path: Path) -> None:
    s = spawner()
    try:
        seen: list[Result] = []
        chain(s, seen, tmp_path, "0.2", "bcd", "/bin/sleep", "30")  # b: 2 behind it, the engine tops up
        assert told(s, seen, SpawnResult, "b")
    finally:
        s.close()


@needs_c
def test_what_is_coalesced_is_told_within_the_window(tmp_path: Path) -> None:
    s = spawner(coalesce=0.05)
    try:
        seen: list[Result] = []
        chain(s, seen, tmp_path, "0.1", "bcdef", "/bin/sleep", "30")
        assert told(s, seen, SpawnResult, "b")
    finally:
        s.close()


@needs_c
def test_a_successor_bound_to_a_child_reaped_meanwhile_joins_its_chain(tmp_path: Path) -> None:
    """The engine binds to the child it last heard of; reaped since (its exit not yet taken), the
    new successor goes to the end of the chain its successor took over."""
    s = spawner()
    try:
        seen: list[Result] = []
        a = chain(s, seen, tmp_path, "0.1", "bcd", "/bin/true")
        assert s.follow(a, job(tmp_path, "e", "/bin/sleep", "30")) is not None
        time.sleep(0.5)  # a was reaped, b, c and d ran (with e behind d): nothing was taken yet
        assert s.follow(a, job(tmp_path, "f", "/bin/true")) is not None
        assert s.kill(next(r for r in s.results() if isinstance(r, SpawnResult) and r.tag == "e").handle)
        assert told(s, seen, ExitResult, "f")
    finally:
        s.close()


def test_the_local_backends_descriptor_is_readable_while_news_wait(tmp_path: Path) -> None:
    local = LocalBackend(Pool("NUM_CPUS = 1\nMEMORY = 2048\n"))
    try:
        local.submit(make_launch(tmp_path, "short", ["/bin/sleep", "0.2"]))
        assert select.select([local.fileno()], [], [], 30)[0]  # its start
        events = local.wait(0.0)
        while not events:
            assert select.select([local.fileno()], [], [], 30)[0]  # its exit
            events = local.wait(0.0)
        assert [event.key for event in events] == ["short#0"]
        assert not select.select([local.fileno()], [], [], 0.0)[0]
    finally:
        local.close()


class _Counting:
    """A backend whose ``wait`` counts its calls, with a descriptor that never becomes readable."""

    def __init__(self) -> None:
        self.calls = 0
        self.read, self.write = os.pipe()

    def fileno(self) -> int:
        return self.read

    def wait(self, timeout: float | None) -> list[object]:
        self.calls += 1
        return []


def test_a_commit_in_flight_is_waited_for_on_descriptors_not_polled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fsync = os.fsync

    def slow(fd: int) -> None:
        time.sleep(0.3)
        fsync(fd)

    journal = Journal(str(tmp_path / "journal"))
    backend = _Counting()
    run = SimpleNamespace(keys={"a#0": ("a", 0)}, backend=backend, early=[], stop_time=None, journal=journal,
                          _backend_fd=backend.fileno)
    try:
        monkeypatch.setattr("sheaf.engine._journal.os.fsync", slow)
        journal.begin(time.time(), 1, "fresh", 1, [])
        begun = time.monotonic()
        EngineRun._durable(run, journal.commit_start())  # type: ignore[arg-type]
        assert time.monotonic() - begun >= 0.3
        assert backend.calls <= 10  # its timed duties every 50 ms; polled every 0.5 ms it was ~600
        assert not select.select([journal.wake_fd()], [], [], 0.0)[0]  # the count was read
    finally:
        monkeypatch.undo()
        journal.close()
        os.close(backend.read)
        os.close(backend.write)
