"""A numbered plan removes what planners killed while planning or writing left beside the directories
of its parent -- their temporary ``.runNNNN.sheaf-new-<pid>-*`` directories (the reservation's, from
before planning, and the writer's) and the empty ``runNNNN`` each reserved -- and never what a live
planner is making.  Real ``sheaf plan`` processes: one killed with SIGKILL as soon as its temporary
directories appear, one stopped (SIGSTOP) at the same point to stand for a live planner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))


def _workflow(path: Path, jobs: int) -> None:
    lines = ["pegasus: '5.0'", "name: big", "jobs:"]
    lines += [f"- {{type: job, name: t, id: j{i}, arguments: [a{i}]}}" for i in range(jobs)]
    lines += ["transformationCatalog:", "  pegasus: '5.0'", "  transformations:",
              "  - {name: t, sites: [{name: local, pfn: /bin/true, type: installed}]}"]
    path.write_text("\n".join(lines) + "\n")


def _command(here: Path, workflow: str) -> list[str]:
    # one submit file per job: the plan spends its time writing them
    return [SHEAF, "plan", workflow, "-d", str(here / "base"), "-D", "sheaf.submit.shared=false"]


def _runs(here: Path) -> Path:
    return here / "base" / os.environ.get("USER", "root") / "pegasus" / "big"


def _start_and_catch(here: Path, workflow: str, sig: signal.Signals,
                     count: int = 1) -> tuple[subprocess.Popen[bytes], Path]:
    """A planner, sent ``sig`` as soon as ``count`` temporary directories of its appear (1: the run
    directory is reserved, it plans; 2: it writes); returns it and one of them."""
    runs = _runs(here)
    before = set(runs.glob(".run*.sheaf-new-*")) if runs.exists() else set()
    planner = subprocess.Popen(_command(here, workflow), cwd=here, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and planner.poll() is None:
        new = set(runs.glob(f".run*.sheaf-new-{planner.pid}-*")) - before if runs.exists() else set()
        if len(new) >= count:
            planner.send_signal(sig)
            return planner, new.pop()
        time.sleep(0.005)
    planner.kill()
    raise AssertionError("the planner never made its temporary directory")


def _plan(here: Path, workflow: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(here, workflow), cwd=here, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("siblings", [1, 2], ids=["while-planning", "while-writing"])
def test_a_plan_killed_leaves_nothing_after_the_next_plan(tmp_path: Path, siblings: int) -> None:
    _workflow(tmp_path / "big.yml", 20_000)
    _workflow(tmp_path / "small.yml", 3)
    killed, temporary = _start_and_catch(tmp_path, "big.yml", signal.SIGKILL, siblings)
    killed.wait(60)
    runs = _runs(tmp_path)
    reserved = runs / temporary.name.split(".")[1]
    assert temporary.is_dir() and reserved.is_dir() and not any(reserved.iterdir())  # what the kill left
    done = _plan(tmp_path, "small.yml")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in runs.iterdir()) == [reserved.name]  # its number again, nothing else
    assert (reserved / "plan.json").is_file()


def test_a_live_planners_directories_are_kept_and_a_dead_ones_removed(tmp_path: Path) -> None:
    _workflow(tmp_path / "big.yml", 20_000)
    _workflow(tmp_path / "small.yml", 3)
    live, live_temporary = _start_and_catch(tmp_path, "big.yml", signal.SIGSTOP)
    try:
        dead, dead_temporary = _start_and_catch(tmp_path, "big.yml", signal.SIGKILL)
        dead.wait(60)
        runs = _runs(tmp_path)
        assert sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == ["run0001", "run0002"]
        done = _plan(tmp_path, "small.yml")  # meets one live and one dead planner's directories
        assert done.returncode == 0, done.stderr
        assert live.poll() is None and live_temporary.is_dir() and (runs / "run0001").is_dir()
        assert not dead_temporary.exists()
        assert (runs / "run0002" / "plan.json").is_file()  # the dead planner's number, taken again
    finally:
        live.send_signal(signal.SIGCONT)
    assert live.wait(300) == 0
    assert (runs / "run0001" / "plan.json").is_file() and not live_temporary.exists()
    assert sorted(p.name for p in runs.iterdir()) == ["run0001", "run0002"]
