"""Replanning into a directory in use (``sheaf plan --deferred``, a sub-workflow's retry): a running
workflow is never replaced (its run lock is held), what an interrupted plan left beside DIR is
removed by the next plan or run, and a disk that fills while the plan is written is one message,
exit 1, the earlier plan untouched."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.codegen import _write
from sheaf.errors import StorageError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
SHEAF = str(Path(sys.executable).parent / "sheaf")
DEAD_PID = 2**22 + 4321  # above the kernel's largest pid: never alive


def sheaf(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, *args], cwd=EXAMPLE, capture_output=True, text=True, env=env, timeout=300,
                          check=False)


def plan(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return sheaf("plan", "workflow.yml", "-d", str(directory.parent), "--relative-submit-dir", directory.name,
                 "--input-dir", "input", *extra)


def sleeping_dag(directory: Path, seconds: float) -> None:
    """Turn the plan in ``directory`` into one a ``sheaf run`` spends ``seconds`` in."""
    for dag in directory.glob("*.dag"):
        dag.unlink()
    (directory / "sleep.sub").write_text(f"executable = /bin/sleep\narguments = {seconds}\nuniverse = local\n"
                                         "output = sleep.out\nerror = sleep.err\nqueue\n")
    (directory / "wf.dag").write_text("JOB S sleep.sub\n")


def test_replanning_refuses_the_directory_of_a_running_workflow(tmp_path: Path) -> None:
    target = tmp_path / "plan"
    assert plan(target).returncode == 0
    sleeping_dag(target, 30)
    engine = subprocess.Popen([SHEAF, "run", str(target)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        journal = target / ".sheaf" / "wf.dag.journal"
        deadline = time.time() + 60
        while (b'"submitted"' not in (journal.read_bytes() if journal.exists() else b"")
               and time.time() < deadline):
            time.sleep(0.05)
        done = plan(target, "--deferred")  # how a sub-workflow job replans into its directory
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "a workflow is running in the plan directory" in done.stderr
        assert journal.exists() and (target / "wf.dag").exists() and engine.poll() is None
        assert not list(tmp_path.glob(".plan.sheaf-*"))
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait(60)
    kept = plan(target, "--deferred")  # once it has stopped, the sub-workflow that ran is resumed
    assert kept.returncode == 0 and "resuming it, not replanning" in kept.stderr
    assert plan(target, "--deferred", "--force-replan").returncode == 0  # or replaced
    assert not (target / ".sheaf").exists()


def test_leftovers_of_interrupted_plans_are_removed_by_the_next_plan_and_run(tmp_path: Path) -> None:
    target = tmp_path / "plan"
    stale = [tmp_path / f".plan.sheaf-new-{DEAD_PID}-abcd", tmp_path / f".plan.sheaf-old-{DEAD_PID}-12345678",
             tmp_path / ".plan.sheaf-new-k3j_l5m6"]  # sheaf 0.1's name: no pid, no lock
    live = tmp_path / f".plan.sheaf-new-{os.getpid()}-efgh"  # its owner runs: not stale
    for path in [*stale, live]:
        (path / "jobs").mkdir(parents=True)
    assert plan(target).returncode == 0
    assert [p.exists() for p in stale] == [False, False, False] and live.exists()
    stale[0].mkdir()
    done = sheaf("run", str(target))
    assert done.returncode == 0, done.stderr
    assert not stale[0].exists() and live.exists()


def test_a_full_disk_while_planning_is_one_error_and_leaves_the_earlier_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "plan"
    assert plan(target).returncode == 0
    before = sorted(p.name for p in target.iterdir())
    from sheaf.codegen import write_plan
    from sheaf.formats import load_inputs
    from sheaf.planner import DataOptions
    from sheaf.planner import plan as make_plan

    here = os.getcwd()
    os.chdir(EXAMPLE)
    try:
        inputs = load_inputs("workflow.yml")
        exec_wf = make_plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc,
                            properties=inputs.properties, data=DataOptions(submit_dir=str(target)))
    finally:
        os.chdir(here)
    calls = {"n": 0}
    real = os.write

    def write(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] > 1:  # a few files only: unclustered jobs share SUBMIT-DESCRIPTIONs in the DAG
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(_write.os, "write", write)
    with pytest.raises(StorageError, match="the disk is full"):
        write_plan(exec_wf, target, replace=True)
    monkeypatch.undo()
    assert sorted(p.name for p in target.iterdir()) == before
    assert not list(tmp_path.glob(".plan.sheaf-*"))
