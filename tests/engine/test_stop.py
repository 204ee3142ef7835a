"""A stop (SIGTERM/SIGINT) at each phase of ``run_workflow``, in-process with a scripted backend: while
the DAG is read (a removed DAG that never ran), between building the state and the run (handed to
the run), and while jobs are queued (cancelled newest first).  The signal is sent by the process to
itself at the exact moment under test, so nothing here depends on timing."""

from __future__ import annotations

import fcntl
import gc
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine_helpers import FakeBackend, write_dag
from sheaf.engine import Launch, run_workflow, state_paths
from sheaf.engine import _loop as loop
from sheaf.engine import _resume as resume
from sheaf.engine.reports import _runfiles as runfiles

WIDE = "".join(f"JOB n{i} n.sub\n" for i in range(12))


def _signalling(real: Callable[..., Any], signum: int = signal.SIGTERM) -> Callable[..., Any]:
    """``real``, which first sends this process ``signum``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_the_dag_is_read_ends_the_run_as_removed_with_nothing_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int) -> None:
    write_dag(tmp_path, WIDE)
    monkeypatch.setattr(loop, "parse_dag", _signalling(loop.parse_dag, signum))
    made: list[FakeBackend] = []
    result = run_workflow(str(tmp_path), backend=lambda: made.append(FakeBackend()) or made[-1])
    assert (result.succeeded, result.exit_code, result.dag_status, result.source) == (False, 1, 4, "stopped")
    assert result.extra["stopped"] == f"engine received {signal.Signals(signum).name}"
    assert made == []  # no backend, no job
    assert not os.path.exists(state_paths(result.dag)["journal"])
    assert not list(tmp_path.glob("wf.dag.rescue*")) and not (tmp_path / "jobstate.log").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_a_stop_before_the_run_exists_is_handed_to_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_dag(tmp_path, WIDE)
    monkeypatch.setattr(loop, "_backend_of", _signalling(loop._backend_of))
    fake = FakeBackend(per_wait=1)
    result = run_workflow(str(tmp_path), backend=fake)
    assert (result.succeeded, result.exit_code, result.dag_status) == (False, 2, 4)  # DAGMan's EXIT_ABORT
    assert result.rescue is not None and result.done <= 1
    assert os.path.exists(state_paths(result.dag)["journal"])


class _StoppedOnceAllQueued(FakeBackend):
    """Jobs that never end; SIGTERM once the twelfth is submitted."""

    def submit(self, launch: Launch) -> None:
        super().submit(launch)
        if len(self.launches) == 12:
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_stop_cancels_the_queued_attempts_newest_first(tmp_path: Path) -> None:
    """The attempts queued last are cancelled first, so that a slot a kill frees never starts an
    attempt about to be cancelled (at 10^3 submitted attempts the old node order took 1.8 s)."""
    write_dag(tmp_path, WIDE)
    fake = _StoppedOnceAllQueued(per_wait=0)
    result = run_workflow(str(tmp_path), backend=fake)
    assert result.dag_status == 4
    assert fake.cancelled == [launch.key for launch in fake.launches][::-1]


def test_a_stops_rescue_dag_counts_no_removed_job_as_failed(tmp_path: Path) -> None:
    """condor_rm of DAGMan (main_shutdown_rescue): the rescue DAG is written before the queued jobs are
    removed, so their nodes are neither failed nor DONE there, and DAGMan exits before it reads their
    removal (no JOB_ABORTED line in jobstate.log)."""
    write_dag(tmp_path, WIDE)
    result = run_workflow(str(tmp_path), backend=_StoppedOnceAllQueued(per_wait=0))
    assert result.dag_status == 4 and result.rescue is not None
    text = (tmp_path / "wf.dag.rescue001").read_text()
    assert "# Nodes premarked DONE: 0\n# Nodes that failed: 0\n#   <ENDLIST>\n" in text, text
    assert "JOB_ABORTED" not in (tmp_path / "jobstate.log").read_text()


def test_a_large_dags_objects_are_frozen_for_the_run_only(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of the cyclic collector while the run goes (a stop of 10^5 ready nodes: 0.64 s -> 0.26 s
    to move them back to waiting), collectable again once it returned."""
    write_dag(tmp_path, WIDE)
    monkeypatch.setattr(loop, "_FREEZE_NODES", len(WIDE.splitlines()))
    before = gc.get_freeze_count()
    during: list[int] = []

    def backend() -> FakeBackend:
        during.append(gc.get_freeze_count())
        return FakeBackend()
    assert run_workflow(str(tmp_path), backend=backend, handle_signals=False).succeeded
    assert during[0] > before and gc.get_freeze_count() == before


def test_a_stop_while_the_run_lock_is_taken_releases_it(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    write_dag(tmp_path, WIDE)
    real, sent = fcntl.flock, []

    def flock_then_stop(fd: int, operation: int) -> None:  # the stop comes once the lock is held
        real(fd, operation)
        if not sent:
            sent.append(os.kill(os.getpid(), signal.SIGTERM))
    monkeypatch.setattr(resume.fcntl, "flock", flock_then_stop)
    result = run_workflow(str(tmp_path), backend=FakeBackend)
    assert (result.exit_code, result.dag_status, result.source) == (1, 4, "stopped")
    monkeypatch.undo()
    assert run_workflow(str(tmp_path), backend=FakeBackend(), handle_signals=False).succeeded  # not locked


def test_the_final_node_status_file_is_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a run (or a stop) ends, the node status file is written with the final state once: the
    progress report after it wrote it again (0.25 s at 10^5 nodes)."""
    write_dag(tmp_path, WIDE + "NODE_STATUS_FILE wf.status 3600\n")
    written: list[str] = []
    real = runfiles.write_atomic

    def recording(path: str, text: str) -> None:
        written.append(os.path.basename(path))
        real(path, text)
    monkeypatch.setattr(runfiles, "write_atomic", recording)
    assert run_workflow(str(tmp_path), backend=FakeBackend(), handle_signals=False).succeeded
    assert written[-2:] == ["wf.status", "wf.dag.metrics"]
    assert "NodesDone = 12;" in (tmp_path / "wf.status").read_text()


def test_the_collector_is_paused_while_the_dag_is_read_and_left_as_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a DAG keeps nearly all it makes: no collector passes meanwhile (a 10^4-node plan's read
    ran 265, ~20 ms of ~95 ms); on again for the run, and off after it if it was off before."""
    write_dag(tmp_path, WIDE)
    seen: list[tuple[str, bool]] = []
    real_parse, real_load = loop.parse_dag, loop.load_descriptions

    def parse(*paths: str, **kw: str | None) -> object:
        seen.append(("read", gc.isenabled()))
        return real_parse(*paths, **kw)  # type: ignore[arg-type]

    def load(*args: object, **kw: object) -> object:
        seen.append(("descriptions", gc.isenabled()))
        return real_load(*args, **kw)  # type: ignore[arg-type]

    def backend() -> FakeBackend:
        seen.append(("run", gc.isenabled()))
        return FakeBackend()
    monkeypatch.setattr(loop, "parse_dag", parse)
    monkeypatch.setattr(loop, "load_descriptions", load)
    assert run_workflow(str(tmp_path), backend=backend, handle_signals=False).succeeded
    assert seen == [("read", False), ("descriptions", False), ("run", True)] and gc.isenabled()
    write_dag(tmp_path / "again", WIDE)
    gc.disable()
    try:
        run_workflow(str(tmp_path / "again"), backend=backend, handle_signals=False)
        assert seen[-1] == ("run", False) and not gc.isenabled()
    finally:
        gc.enable()
