"""``kill -9`` of a real ``sheaf run`` while its jobs sleep: on resume the dead engine's jobs are
stopped (found by the pid and start time journaled when they started) before their nodes run
again, so each node's side effect happens once per completed attempt.  The engine's job guard
(``backends._jobguard``), which would kill them as the engine dies, is killed first here: the resume's
scan is the backstop for that case.  With the guard alive, the jobs die with the engine -- also
in the middle of a run of short jobs, with the run's token guard killed first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf._proc import start_ticks
from sheaf.engine import read_journal, state_paths
from sheaf.engine._journal import read_records
from sheaf.engine._records import ProcessRecord

SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES = ("a", "b")

# Sleeps as long as the file "duration" says when it starts, then leaves its mark.
TASK = """#!/bin/sh
sleep "$(cat "$1/duration")"
echo "$2" >> "$1/effect.$2"
"""

SUB = """universe = vanilla
executable = {task}
arguments = "{dir} $(node)"
output = /dev/null
error = /dev/null
queue
"""


def _build(tmp: Path) -> None:
    task = tmp / "task.sh"
    task.write_text(TASK)
    task.chmod(0o755)
    (tmp / "task.sub").write_text(SUB.format(task=task, dir=tmp))
    (tmp / "pool.conf").write_text("NUM_CPUS = 2\nMEMORY = 2048\n")
    (tmp / "duration").write_text("60\n")
    (tmp / "wf.dag").write_text("".join(f'JOB {n} task.sub\nVARS {n} node="{n}"\n' for n in NODES))


def _journaled_processes(journal: str) -> dict[str, tuple[int, int]]:
    return {r.node: (r.pid, r.ticks) for r in read_records(journal) if isinstance(r, ProcessRecord)}


def _run(tmp: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([SHEAF, "run", str(tmp), "--pool-config", str(tmp / "pool.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _sleeping(pid: int) -> bool:
    """Whether the task ``pid`` has forked its ``sleep`` (so it has read its duration)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return any(Path(f"/proc/{child}/comm").read_text().strip() == "sleep" for child in children)
    except OSError:
        return False


def _start_engine_with_jobs(tmp: Path) -> tuple[subprocess.Popen[bytes], str, dict[str, tuple[int, int]]]:
    """Start the engine and wait until both jobs' pids are journaled: (engine, journal, jobs)."""
    _build(tmp)
    journal = state_paths(str(tmp / "wf.dag"))["journal"]
    engine = _run(tmp)
    deadline = time.time() + 60
    while len(_journaled_processes(journal)) < len(NODES) and time.time() < deadline:
        time.sleep(0.05)
    old = _journaled_processes(journal)
    assert set(old) == set(NODES), "the jobs' processes were never journaled"
    return engine, journal, old


def _kill_engine_while_jobs_run(tmp: Path) -> tuple[str, dict[str, tuple[int, int]]]:
    """Start the engine, wait until both jobs sleep, ``kill -9`` it and its guard: (journal, jobs)."""
    engine, journal, old = _start_engine_with_jobs(tmp)
    deadline = time.time() + 60
    while not all(_sleeping(pid) for pid, _ in old.values()) and time.time() < deadline:
        time.sleep(0.01)  # each task has read its (long) duration: changing it now cannot shorten them
    assert all(start_ticks(pid) == ticks for pid, ticks in old.values())  # the long sleeps run
    for guard in _guards_of(engine.pid):
        os.kill(guard, signal.SIGKILL)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    assert all(start_ticks(pid) == ticks for pid, ticks in old.values())  # orphaned, still running
    return journal, old


def _guards_of(engine: int, needle: bytes = b"_jobguard") -> list[int]:
    """The job guard processes ``engine`` started (with ``needle``: its children so named)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == engine and needle in cmdline:
            found.append(int(entry))
    return found


def test_the_guard_kills_the_jobs_as_the_engine_dies(tmp_path: Path) -> None:
    engine, _, old = _start_engine_with_jobs(tmp_path)
    assert _guards_of(engine.pid)
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    deadline = time.time() + 5
    while any(start_ticks(pid) == ticks for pid, ticks in old.values()):
        assert time.time() < deadline, "the dead engine's jobs still run"
        time.sleep(0.01)


def _resume_and_check(tmp: Path, journal: str, old: dict[str, tuple[int, int]]) -> None:
    """Resume with short jobs: the old ones must be gone first, each side effect happens once."""
    (tmp / "duration").write_text("0.1\n")
    resumed = _run(tmp)
    try:
        _, err = resumed.communicate(timeout=120)
    finally:
        left = [(pid, ticks) for pid, ticks in old.values() if start_ticks(pid) == ticks]
        for pid, _ in left:  # a failing run must not leave minute-long sleeps behind
            os.killpg(pid, signal.SIGKILL)
    assert resumed.returncode == 0, err.decode()
    assert not left, "the old jobs still ran after the resumed run"
    for node in NODES:
        assert (tmp / f"effect.{node}").read_text() == f"{node}\n"  # once: the resumed attempt
    assert {r.state for r in read_journal(journal).nodes.values()} == {"done"}


def test_resume_stops_the_killed_engines_jobs_before_rerunning_them(tmp_path: Path) -> None:
    journal, old = _kill_engine_while_jobs_run(tmp_path)
    _resume_and_check(tmp_path, journal, old)


def test_resume_finds_a_job_whose_pid_never_reached_the_journal(tmp_path: Path) -> None:
    """The engine dies between spawning a job and journaling its pid: the job's attempt token
    (``SHEAF_ATTEMPT`` in its environment) still names it, and the resume stops it."""
    journal, old = _kill_engine_while_jobs_run(tmp_path)
    for pid, _ in old.values():
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert any(v.startswith(b"SHEAF_ATTEMPT=") and v.endswith(b"/0") for v in environ)
    with open(journal, "rb") as handle:  # as if the kill had come before the "P" records
        kept = [line for line in handle.read().split(b"\n") if not line.startswith(b'["P"')]
    Path(journal).write_bytes(b"\n".join(kept))
    assert _journaled_processes(journal) == {}
    _resume_and_check(tmp_path, journal, old)


SHORT_JOB = """#!/bin/sh
echo x >> "$1/marks"
/bin/sleep {marker} &
/bin/sleep 0.03
"""


def _with_marker(marker: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_a_killed_sheaf_run_leaves_no_job_process_behind(tmp_path: Path) -> None:
    """Short jobs start and end all the time (each leaves a background ``sleep`` in its group, which
    its end kills); the engine is SIGKILLed in the middle: the job guard kills what ran then."""
    marker = f"30.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"
    job = tmp_path / "job.sh"
    job.write_text(SHORT_JOB.format(marker=marker))
    job.chmod(0o755)
    (tmp_path / "job.sub").write_text(f'executable = {job}\narguments = "{tmp_path}"\n'
                                      "output = /dev/null\nerror = /dev/null\nqueue\n")
    (tmp_path / "pool.conf").write_text("NUM_CPUS = 2\nMEMORY = 2048\n")
    (tmp_path / "wf.dag").write_text("".join(f"JOB n{i} job.sub\n" for i in range(2000)))
    engine = subprocess.Popen([SHEAF, "run", str(tmp_path), "--pool-config", str(tmp_path / "pool.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        marks = tmp_path / "marks"
        deadline = time.monotonic() + 60
        while not marks.exists() or len(marks.read_bytes()) < 2 * 40:  # 40 jobs started
            assert time.monotonic() < deadline and engine.poll() is None
            time.sleep(0.01)
        for guard in _guards_of(engine.pid, b"guard_main"):  # the run's token guard: not this test's
            os.kill(guard, signal.SIGKILL)
        assert _guards_of(engine.pid)
        while not _with_marker(marker.encode()):  # jobs run right now
            assert time.monotonic() < deadline and engine.poll() is None
            time.sleep(0.001)
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait()
    deadline = time.monotonic() + 10
    while left := _with_marker(marker.encode()):
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the dead engine's jobs still run: {left}")
        time.sleep(0.02)
