"""The job guard's table (``_jobguard``), for real: a running job is listed from its spawn on and
unlisted before it is reaped (C threads and Python path alike), and a reused pid is spared.  (A
``kill -9`` of a ``sheaf run`` in the middle of a run: ``tests/engine/test_orphans.py``.)"""

from __future__ import annotations

import contextlib
import mmap
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf._proc import alive, command_line, pids, start_ticks, stat_fields
from sheaf.backends import Pool, _jobguard
from sheaf.backends.local import LocalBackend, _spawner
from sheaf.backends.local._spawner import CSpawner, ExitResult, SpawnRequest, SpawnResult

from .contract import collect, make_launch, wait_for

MODULE = _spawner._compiled()
ENV = {"PATH": "/usr/bin:/bin"}


def table() -> memoryview:
    """This process's job guard table, mapped here as the guard maps it."""
    fd, _ = _jobguard.shared()
    return memoryview(mmap.mmap(fd, _jobguard._WORDS * 8)).cast("Q")


def listed_pids() -> dict[int, int]:
    return dict(_jobguard.listed(table()))


def until(spawner: CSpawner[str], seen: list[SpawnResult[str] | ExitResult[str]], kind: type,
          tag: str) -> SpawnResult[str] | ExitResult[str]:
    """The result of ``kind`` for ``tag``, from ``seen`` (the results taken so far) or the next ones."""
    deadline = time.monotonic() + 30.0
    while True:
        for result in seen:
            if isinstance(result, kind) and result.tag == tag:
                return result
        assert time.monotonic() < deadline
        select.select([spawner.wakeup], [], [], 1.0)
        seen.extend(spawner.results())


@pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
def test_the_c_threads_list_a_job_from_its_spawn_and_unlist_it_before_its_reap(tmp_path: Path) -> None:
    assert MODULE is not None
    spawner: CSpawner[str] = CSpawner(time.time, MODULE, reap=True)
    spawner.guard(*_jobguard.shared())
    try:
        seen: list[SpawnResult[str] | ExitResult[str]] = []
        spawner.submit(SpawnRequest("short", ["/bin/true"], ENV, str(tmp_path), "s.out", "s.out", None))
        short = until(spawner, seen, SpawnResult, "short")
        until(spawner, seen, ExitResult, "short")
        spawner.submit(SpawnRequest("long", ["/bin/sleep", "30"], ENV, str(tmp_path), "l.out", "l.out", None))
        long = until(spawner, seen, SpawnResult, "long")
        assert isinstance(short, SpawnResult) and isinstance(long, SpawnResult)
        assert short.spawned is not None and long.spawned is not None
        pid = long.spawned.pid
        entries = listed_pids()
        assert short.spawned.pid not in entries  # reaped: nothing of it may be signalled
        assert pid in entries and entries[pid] >= (start_ticks(pid) or 0)
        assert _jobguard.victims([(pid, entries[pid])]) == [pid]
        assert spawner.kill(long.handle)
        until(spawner, seen, ExitResult, "long")
        assert pid not in listed_pids()
    finally:
        spawner.close()


def test_the_python_path_lists_a_job_and_unlists_it_before_its_reap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEAF_PURE_PYTHON", "1")  # the Python spawner thread (or the inline spawn)
    local = LocalBackend(Pool("NUM_CPUS = 2\nMEMORY = 2048\n"))
    try:
        local.submit(make_launch(tmp_path, "short", ["/bin/true"]))
        local.submit(make_launch(tmp_path, "long", ["/bin/sleep", "30"]))
        short = None
        deadline = time.monotonic() + 30
        while short is None or "long#0" not in local._jobs:
            assert time.monotonic() < deadline
            for event in local.wait(0.1):
                short = event
            for start in local.started():
                if start.key == "short#0":
                    short_pid = start.pid
        assert short is not None and short.key == "short#0"
        pid = local._jobs["long#0"].spawned.pid
        entries = listed_pids()
        assert pid in entries and short_pid not in entries
        local.cancel("long#0")
        assert pid not in listed_pids()
    finally:
        local.close()


def test_the_python_path_unlists_a_group_before_reaping_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group must be unlisted while its zombie leader still holds the id: a guard that read the
    table after the reap could signal a reused group (the "-PGID" used to be told after the reap)."""
    monkeypatch.setenv("SHEAF_PURE_PYTHON", "1")
    reaped: list[tuple[int, bool]] = []
    wait4 = os.wait4

    def watched(pid: int, options: int) -> tuple[int, int, object]:
        reaped.append((pid, pid in listed_pids()))
        return wait4(pid, options)

    monkeypatch.setattr("sheaf.backends.local._backend.os.wait4", watched)
    local = LocalBackend(Pool("NUM_CPUS = 2\nMEMORY = 2048\n"))
    try:
        local.submit(make_launch(tmp_path, "a", ["/bin/true"]))
        local.submit(make_launch(tmp_path, "b", ["/bin/sleep", "30"]))
        events = collect(local, 1)
        assert set(events) == {"a#0"}
        wait_for(lambda: local.wait(0.01) == [] and "b#0" in local._jobs, 30)
        local.cancel("b#0")
    finally:
        local.close()
    assert len(reaped) == 2 and not any(listed for _, listed in reaped), reaped


def test_a_reused_pid_is_spared(tmp_path: Path) -> None:
    """An entry made before a process with its pid started is someone else's (the dead engine's job
    was reaped by init and its pid reused): the guard leaves that process alone."""
    before = _jobguard.entry(0) >> 24
    time.sleep(0.05)  # a few clock ticks
    other = subprocess.Popen(["/bin/sleep", "30"])
    try:
        assert _jobguard.victims([(other.pid, before)]) == []
        assert _jobguard.victims([(other.pid, _jobguard.entry(other.pid) >> 24)]) == [other.pid]
        gone = other.pid  # a group id with no process at all: killpg finds nothing, harmlessly
    finally:
        other.kill()
        other.wait()
    assert _jobguard.victims([(gone, before)]) == [gone]


def test_the_guard_reads_overflow_lines_too() -> None:
    assert _jobguard.guard(["+10\n", "+11\n", "-10\n", "junk\n", "+\n", "-99\n"]) == {11}


@pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
@pytest.mark.parametrize("full", [False, True])
def test_the_c_threads_tell_the_pipe_only_when_their_region_is_full(tmp_path: Path, full: bool) -> None:
    assert MODULE is not None
    fd = os.memfd_create("test-table", os.MFD_CLOEXEC)
    os.ftruncate(fd, _jobguard._WORDS * 8)
    words = memoryview(mmap.mmap(fd, _jobguard._WORDS * 8)).cast("Q")
    if full:
        for i in range(_jobguard._C_BASE, _jobguard._PY_BASE):
            words[i] = 1
    read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    spawner: CSpawner[str] = CSpawner(time.time, MODULE, reap=True)
    spawner.guard(fd, write)
    try:
        seen: list[SpawnResult[str] | ExitResult[str]] = []
        spawner.submit(SpawnRequest("a", ["/bin/sleep", "0.2"], ENV, str(tmp_path), "a.out", "a.out", None))
        start = until(spawner, seen, SpawnResult, "a")
        assert isinstance(start, SpawnResult) and start.spawned is not None
        pid = start.spawned.pid
        assert (pid in dict(_jobguard.listed(words))) is not full
        until(spawner, seen, ExitResult, "a")
        assert pid not in dict(_jobguard.listed(words))
        if full:
            assert os.read(read, 4096) == f"+{pid}\n-{pid}\n".encode()
        else:
            with pytest.raises(BlockingIOError):  # nothing was written
                os.read(read, 4096)
    finally:
        spawner.close()
        for one in (read, write, fd):
            os.close(one)


@pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
def test_a_table_smaller_than_the_layout_is_refused() -> None:
    assert MODULE is not None
    fd = os.memfd_create("test-table", os.MFD_CLOEXEC)
    spawner: CSpawner[str] = CSpawner(time.time, MODULE, reap=True)
    try:
        os.ftruncate(fd, _jobguard._WORDS * 8 - 1)
        with pytest.raises(ValueError, match="smaller than its layout"):
            spawner.guard(fd, -1)
    finally:
        spawner.close()
        os.close(fd)


def test_the_python_region_overflows_into_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    _jobguard.start()
    monkeypatch.setattr(_jobguard, "tell", lines.append)
    monkeypatch.setattr(_jobguard, "_free", [])
    monkeypatch.setattr(_jobguard, "_top", [_jobguard._WORDS])
    _jobguard.add(4_000_000)
    assert 4_000_000 not in listed_pids()
    _jobguard.remove(4_000_000)
    assert lines == ["+4000000", "-4000000"]


OWNER = """
import sys, time
from sheaf.backends import _jobguard
from sheaf.backends.local import _spawner
from sheaf.backends.local._spawner import CSpawner, SpawnRequest
cwd, fifo = sys.argv[1:3]
marker = open(cwd + "/marker").read()  # not on this command line, which the forked job shares until it execs
spawner = CSpawner(time.time, _spawner._compiled(), reap=True)
spawner.guard(*_jobguard.shared())
spawner.submit(SpawnRequest("job", ["/bin/sleep", marker], {"PATH": "/usr/bin:/bin"}, cwd, "job.out",
                            "job.out", None, stdin=fifo))
print("submitted", flush=True)
time.sleep(120)
"""


def _children(parent: int) -> list[int]:
    return [pid for pid in pids() if (fields := stat_fields(pid)) is not None and int(fields[1]) == parent]


def _running(marker: str) -> list[int]:
    return [pid for pid in pids() if marker.encode() in (command_line(pid) or [])]


@pytest.mark.skipif(MODULE is None, reason="the _cspawn extension was not built")
def test_a_job_its_owner_dies_before_it_execs_is_killed_by_the_guard(tmp_path: Path) -> None:
    """The owner is SIGKILLed while its job is between fork and exec (held there by the open of its
    stdin, a FIFO with no writer yet): once the job execs, the guard must know it and kill it."""
    fifo = tmp_path / "stdin.fifo"
    os.mkfifo(fifo)
    marker = f"40.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"
    (tmp_path / "marker").write_text(marker)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path), str(fifo)],
                             stdout=subprocess.PIPE, text=True)
    writer = -1
    try:
        try:
            assert owner.stdout is not None and owner.stdout.readline() == "submitted\n"
            deadline = time.monotonic() + 30
            while not (forked := [pid for pid in _children(owner.pid)
                                  if not any(b"_jobguard.py" in word for word in command_line(pid) or [])]):
                assert time.monotonic() < deadline, "the job was never forked"
                time.sleep(0.01)
            time.sleep(0.2)  # the child is blocked in the open of its stdin, before its execve
            assert not _running(marker)
        finally:
            owner.kill()
            owner.wait()
        job = forked[0]
        writer = os.open(fifo, os.O_WRONLY)  # lets the child's open through: it execs the job now
        deadline = time.monotonic() + 10
        while alive(job):
            if time.monotonic() > deadline:
                left = _running(marker)
                os.kill(job, signal.SIGKILL)
                pytest.fail(f"the dead owner's job still runs: {left}")
            time.sleep(0.02)
    finally:
        if writer < 0:  # failed before the job was let through: a child blocked in its open would stay
            with contextlib.suppress(OSError):  # ENXIO: no child waits
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        if writer >= 0:
            os.close(writer)
