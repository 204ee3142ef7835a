"""Chaos: a 200-node DAG with random failures and retries; ``kill -9`` a real ``sheaf run`` at random
moments (at least 20 times), resume each time, and check from the side effects and the journal that
nothing journaled done ever ran again and every node ended done exactly once.
"""

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
from sheaf.engine._journal import read_records
from sheaf.engine._records import BeginRecord, ChangeRecord

SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES, LEVELS, KILLS = 200, 10, 20

TASK = """#!/bin/sh
# $1: side-effect file, $2: attempt (DAGNodeRetry), $3: attempts that fail before one succeeds
sleep 0.15
if [ "$2" -lt "$3" ]; then echo "$2 fail" >> "$1"; exit 1; fi
echo "$2 ok" >> "$1"
"""

SUB = """universe = vanilla
executable = {task}
arguments = "$(out) $(attempt) $(fails)"
output = /dev/null
error = /dev/null
+pegasus_site = "local"
queue
"""


def _build(tmp: Path, rng: random.Random) -> dict[str, int]:
    (tmp / "out").mkdir()
    task = tmp / "task.sh"
    task.write_text(TASK)
    task.chmod(0o755)
    (tmp / "task.sub").write_text(SUB.format(task=task))
    (tmp / "pool.conf").write_text("NUM_CPUS = 4\nMEMORY = 4096\n")
    fails: dict[str, int] = {}
    lines = []
    per_level = NODES // LEVELS
    for level in range(LEVELS):
        for i in range(per_level):
            name = f"n{level:02d}_{i:02d}"
            fails[name] = rng.choice([0, 0, 0, 1, 2])
            lines += [f"JOB {name} task.sub", f"RETRY {name} 2",
                      f'VARS {name} out="{tmp / "out" / name}" attempt="$(RETRY)" fails="{fails[name]}"']
            if level:
                parents = rng.sample(range(per_level), rng.randint(1, 3))
                lines.append(f"PARENT {' '.join(f'n{level - 1:02d}_{p:02d}' for p in parents)} CHILD {name}")
    (tmp / "chaos.dag").write_text("\n".join(lines) + "\n")
    return fails


def _lines(tmp: Path) -> dict[str, int]:
    out = {}
    for path in (tmp / "out").iterdir():
        out[path.name] = len(path.read_text().splitlines())
    return out


def _begins(journal: str) -> int:
    return sum(1 for r in read_records(journal) if isinstance(r, BeginRecord))


def _start(tmp: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([SHEAF, "run", str(tmp), "--pool-config", str(tmp / "pool.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_kill_minus_nine_at_random_moments_and_resume(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("SHEAF_CHAOS_SEED", "20261122")))
    fails = _build(tmp_path, rng)
    journal = state_paths(str(tmp_path / "chaos.dag"))["journal"]
    frozen: dict[str, int] = {}  # node -> its side-effect lines when it was first seen journaled done
    kills = 0
    while kills < KILLS:
        begins = _begins(journal)
        proc = _start(tmp_path)
        if rng.random() < 0.2:  # now and then, while it starts up (before it journals anything)
            time.sleep(rng.uniform(0.0, 0.3))
        else:  # mostly once it runs: a random moment after its "B" record
            deadline = time.time() + 30
            while _begins(journal) == begins and proc.poll() is None and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.5))
        if proc.poll() is not None:
            break  # the workflow finished before this kill: no more moments to kill at
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        time.sleep(0.2)  # let orphaned tasks of the dead engine finish their last write
        done = {n for n, r in read_journal(journal).nodes.items() if r.state == "done"}
        counts = _lines(tmp_path)
        for node in done:
            frozen.setdefault(node, counts.get(node, 0))
    final = _start(tmp_path)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err.decode()
    assert kills >= KILLS, f"the workflow finished after only {kills} kills; make the tasks longer"

    counts = _lines(tmp_path)
    for node, seen in frozen.items():
        assert counts[node] == seen, f"{node} ran again after it was journaled done"
    for node, k in fails.items():
        text = (tmp_path / "out" / node).read_text().splitlines()
        assert text[-1].endswith(" ok") and int(text[-1].split()[0]) >= k, (node, text)
        assert all(line.endswith(" fail") for line in text if int(line.split()[0]) < k)

    done_records = [r.node for r in read_records(journal)
                    if isinstance(r, ChangeRecord) and r.finish == "done"]
    assert sorted(done_records) == sorted(fails), "every node is journaled done exactly once"
    begins = [r for r in read_records(journal) if isinstance(r, BeginRecord)]
    # kills before an engine wrote its "B" record hit it while starting up: also a moment to survive
    assert len(begins) >= KILLS // 2 and all(b.source in ("fresh", "recovery") for b in begins)

    again = subprocess.run([SHEAF, "run", str(tmp_path), "--pool-config", str(tmp_path / "pool.conf")],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "already complete" in again.stdout
    assert _lines(tmp_path) == counts
