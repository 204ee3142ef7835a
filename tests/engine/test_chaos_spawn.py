"""Chaos at the worst moment: ``kill -9`` of a real ``sheaf run`` right after it spawns a job (before
the job's pid can be journaled), mixed with kills at random moments, then resume - about 25 kills.

Each task holds an ``flock`` on its node's lock file while it runs and appends ``start``/``end``
lines with its pid to its node's marker file (O_APPEND): a task that finds the lock taken writes
``overlap``.  The test proves from these files that no task ever ran twice at the same time, and
from the journal that no node journaled done ever started again."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.engine import read_journal, state_paths

SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES, KILLS = 24, 25

TASK = """#!/bin/sh
exec 9>>"$2"
flock -n 9 || echo "overlap $$" >> "$1"
echo "start $$" >> "$1"
sleep 1
echo "end $$" >> "$1"
"""

SUB = """universe = vanilla
executable = {task}
arguments = "$(marker) $(lock)"
output = /dev/null
error = /dev/null
queue
"""


def _build(tmp: Path) -> None:
    (tmp / "marks").mkdir()
    task = tmp / "task.sh"
    task.write_text(TASK)
    task.chmod(0o755)
    (tmp / "task.sub").write_text(SUB.format(task=task))
    (tmp / "pool.conf").write_text("NUM_CPUS = 4\nMEMORY = 4096\n")
    lines = []
    for i in range(NODES):
        name = f"n{i:02d}"
        lines += [f"JOB {name} task.sub",
                  f'VARS {name} marker="{tmp / "marks" / name}" lock="{tmp / "marks" / name}.lock"']
        if i >= 4:
            lines.append(f"PARENT n{i - 4:02d} CHILD {name}")
    (tmp / "chaos.dag").write_text("\n".join(lines) + "\n")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.update(int(x) for x in handle.read().split())
    except OSError:
        pass
    return found


def _starts(tmp: Path) -> dict[str, int]:
    return {p.name: p.read_text().count("start")
            for p in (tmp / "marks").iterdir() if not p.name.endswith(".lock")}


def _start(tmp: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([SHEAF, "run", str(tmp), "--pool-config", str(tmp / "pool.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_after_spawns(proc: subprocess.Popen[bytes], spawns: int, timeout: float = 20.0) -> bool:
    """Kill ``proc`` the moment its ``spawns``-th job process appears; False if it never did."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        seen |= _children(proc.pid)
        if len(seen) >= spawns:
            proc.send_signal(signal.SIGKILL)
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")
@pytest.mark.slow
def test_kill_right_after_spawns_never_runs_a_task_twice_at_once(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("SHEAF_CHAOS_SEED", "7")))
    _build(tmp_path)
    journal = state_paths(str(tmp_path / "chaos.dag"))["journal"]
    frozen: dict[str, int] = {}
    kills = spawn_kills = 0
    while kills < KILLS:
        proc = _start(tmp_path)
        if rng.random() < 0.7:
            spawn_kills += _kill_after_spawns(proc, rng.randint(1, 6))
        else:
            time.sleep(rng.uniform(0.3, 2.0))
            proc.send_signal(signal.SIGKILL)
        if proc.wait() == 0:
            break  # finished before the kill
        kills += 1
        starts = _starts(tmp_path)
        for node, r in read_journal(journal).nodes.items():
            if r.state == "done":
                frozen.setdefault(node, starts.get(node, 0))
    final = _start(tmp_path)
    _, err = final.communicate(timeout=180)
    assert final.returncode == 0, err.decode()
    assert spawn_kills >= KILLS // 2, f"only {spawn_kills} kills right after a spawn"
    marks = {p.name: p.read_text() for p in (tmp_path / "marks").iterdir() if not p.name.endswith(".lock")}
    overlaps = {node: text for node, text in marks.items() if "overlap" in text}
    assert not overlaps, f"tasks ran twice at the same time: {overlaps}"
    starts = _starts(tmp_path)
    again = {node: (seen, starts[node]) for node, seen in frozen.items() if starts[node] != seen}
    assert not again, f"nodes journaled done started again: {again}"
    assert all(text.splitlines()[-1].startswith("end ") for text in marks.values())
    assert {r.state for r in read_journal(journal).nodes.values()} == {"done"} and len(marks) == NODES
