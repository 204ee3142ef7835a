"""plan.json and the cache file written by a forked child beside the DAG (``sheaf.codegen._beside``):
the same files as written in one process, the child's failures raised by the parent, the child
stopped when the parent fails, and no fork beside other threads.

The tests that need a fork run in a fresh interpreter (``test_the_fork_tests_in_a_fresh_interpreter``
runs this file again there): a test worker may hold threads other tests left (a Dask callback
thread), and beside threads the writer rightly does not fork."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from codegen_plans import blackdiamond_plan

import sheaf.codegen._write as writer
from sheaf.codegen import write_plan
from sheaf.codegen._beside import BesideError, start_beside
from sheaf.errors import StorageError
from sheaf.model import PFN, Replica, ReplicaCatalog, Use
from sheaf.planner import DataOptions, ExecutableWorkflow, plan_data

FRESH = "SHEAF_TEST_FRESH_INTERPRETER"
#: a test that needs the writer to fork: run by the fresh interpreter's pass over this file
forking = pytest.mark.skipif(os.environ.get(FRESH) != "1",
                             reason="needs a fork: run in a fresh interpreter by "
                                    "test_the_fork_tests_in_a_fresh_interpreter")


@pytest.mark.skipif(sys.platform != "linux", reason="the writer forks only on Linux")
@pytest.mark.skipif(os.environ.get(FRESH) == "1", reason="this is the fresh interpreter")
def test_the_fork_tests_in_a_fresh_interpreter() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          env={**os.environ, FRESH: "1"}, cwd=os.path.dirname(__file__), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # every test ran there but this one
    assert "passed, 1 skipped" in done.stdout and "failed" not in done.stdout, done.stdout


def _until(done: Path, what: str) -> None:
    """Wait for ``done`` to exist, failing (not hanging) after 30 s."""
    deadline = time.monotonic() + 30
    while not done.exists():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.01)


def _staged_plan(directory: Path) -> ExecutableWorkflow:
    """A plan with staging, registration and cleanup: every file the writer makes."""
    plan = blackdiamond_plan(6, cluster=None, cleanup="inplace")
    for job in plan.workflow.jobs.values():
        job.uses = tuple(Use(u.lfn, u.type, register_replica=u.type == "output") for u in job.uses)
    plan.replica_catalog = ReplicaCatalog([Replica("f.a", (PFN("file:///data/f.a", "local"),))])
    plan.data = DataOptions(output_dir=str(directory) + ".out", cleanup="inplace")
    plan_data(plan, str(directory))
    return plan


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _children() -> set[int]:
    """This process's child processes, zombies included (other tests' daemons among them: compare)."""
    mine = str(os.getpid())
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == mine:
                out.add(int(entry))
    return out


@forking
def test_the_forked_writer_writes_what_one_process_writes(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    forks: list[bool] = []
    def counted(work: object, fork: bool) -> object:
        forks.append(fork)
        return start_beside(work, fork)  # type: ignore[arg-type]
    monkeypatch.setattr(writer, "start_beside", counted)
    target = tmp_path / "plan"
    monkeypatch.setattr(writer, "BESIDE_JOBS", 10**9)
    write_plan(_staged_plan(target), target)
    alone = _tree(target)
    os.rename(target, tmp_path / "alone")
    monkeypatch.setattr(writer, "BESIDE_JOBS", 1)
    write_plan(_staged_plan(target), target)
    assert forks == [False, True]
    assert _tree(target) == alone
    assert {"plan.json", "blackdiamond.cache", "blackdiamond.lists"} <= set(alone)


@forking
def test_a_failure_in_the_child_is_the_parents_and_leaves_nothing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "BESIDE_JOBS", 1)
    parent, before = os.getpid(), _children()

    def full(*args: object, **kwargs: object) -> bytes:
        assert os.getpid() != parent  # encoded in the child
        raise OSError(errno.ENOSPC, "No space left on device", "plan.json")
    monkeypatch.setattr(writer, "encode_plan", full)
    target = tmp_path / "plan"
    with pytest.raises(StorageError, match="No space left on device"):
        write_plan(_staged_plan(target), target)
    assert not target.exists() and os.listdir(tmp_path) == []
    assert _children() <= before


@forking
def test_a_failure_in_the_parent_stops_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "BESIDE_JOBS", 1)
    started, before = tmp_path / "started", _children()

    def slow(self: object, *args: object) -> None:
        started.touch()
        threading.Event().wait(60)  # killed long before
    monkeypatch.setattr(writer._Writer, "_plan_files", slow)

    def broken(*args: object) -> str:
        _until(started, "the child")  # the child is running
        raise ValueError("a config that cannot be written")
    monkeypatch.setattr(writer, "config_text", broken)
    target = tmp_path / "plan"
    with pytest.raises(ValueError, match="cannot be written"):
        write_plan(_staged_plan(target), target)
    assert _children() <= before
    assert sorted(os.listdir(tmp_path)) == ["started"]


@forking
def test_an_exception_that_cannot_travel_comes_back_as_text() -> None:
    class Local(Exception):  # not importable by name: cannot be unpickled
        pass

    def work() -> None:
        raise Local("the child's own trouble")
    before = _children()
    beside = start_beside(work, fork=True)
    assert beside.pid
    with pytest.raises(BesideError, match="the child's own trouble"):
        beside.join()
    assert _children() <= before


def test_no_fork_beside_another_thread() -> None:
    ran: list[int] = []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        beside = start_beside(lambda: ran.append(os.getpid()), fork=True)
        assert not beside.pid and not ran  # kept for the join, in this process
        beside.join()
    finally:
        stop.set()
        other.join()
    assert ran == [os.getpid()]


def test_a_fork_that_fails_leaves_the_work_to_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_memory() -> int:
        raise OSError(errno.ENOMEM, "Cannot allocate memory")
    monkeypatch.setattr(os, "fork", no_memory)
    ran: list[int] = []
    beside = start_beside(lambda: ran.append(os.getpid()), fork=True)
    assert not beside.pid and not ran
    beside.join()
    assert ran == [os.getpid()]


@forking
def test_the_child_ends_on_a_signal_whatever_the_parents_handler(tmp_path: Path) -> None:
    import signal
    ready = tmp_path / "ready"

    def work() -> None:
        ready.touch()
        threading.Event().wait(60)
    old = signal.signal(signal.SIGTERM, lambda *args: None)  # a parent that ignores TERM
    before = _children()
    try:
        beside = start_beside(work, fork=True)
        _until(ready, "the child")  # the child's own handlers are set by now
        os.kill(beside.pid, signal.SIGTERM)
        with pytest.raises(BesideError, match="wait status 15"):
            beside.join()
    finally:
        signal.signal(signal.SIGTERM, old)
    assert _children() <= before
