"""``sheaf.app.run`` from Python: a run it starts is found and stopped as a ``sheaf run`` is.

A Python process running ``app.run`` (in its main thread or in a worker thread) holds the run lock as the
command line's engine does: ``app.running`` names it, and ``app.stop`` and ``sheaf remove`` stop it as
SIGTERM stops ``sheaf run`` (the jobs removed, a rescue DAG kept, the result a removed DAG).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sheaf import app
from sheaf.engine import RunResult
from sheaf.errors import UsageError

SHEAF = str(Path(sys.executable).with_name("sheaf"))


def _sleepy_dag(directory: Path) -> Path:
    (directory / "sleep.sub").write_text("executable = /bin/sleep\narguments = 60\nuniverse = local\nqueue\n")
    (directory / "wf.dag").write_text("JOB S sleep.sub\n")
    return directory


def _wait_running(directory: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while (pid := app.running(str(directory))) is None:
        assert time.monotonic() < deadline, "the run never showed up"
        time.sleep(0.1)
    return pid


def _sheaf_remove(directory: Path) -> int:
    """The pid ``sheaf remove DIR`` says it stopped."""
    done = subprocess.run([SHEAF, "remove", str(directory)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("pid ", 1)[1].split()[0].rstrip(")."))


@pytest.mark.parametrize("stopper", ["app.stop", "sheaf remove"])
def test_a_run_started_by_app_run_in_another_process_is_found_and_stopped(tmp_path: Path,
                                                                         stopper: str) -> None:
    directory = _sleepy_dag(tmp_path)
    script = "import sys; from sheaf import app; r = app.run(sys.argv[1]); print('removed', r.removed)"
    child = subprocess.Popen([sys.executable, "-c", script, str(directory)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _wait_running(directory) == child.pid
        assert (app.stop(str(directory)) if stopper == "app.stop" else _sheaf_remove(directory)) == child.pid
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert "removed True" in out, out
    assert app.running(str(directory)) is None


def test_a_run_in_a_worker_thread_is_stopped_without_a_signal(tmp_path: Path) -> None:
    directory = _sleepy_dag(tmp_path)
    results: list[RunResult] = []
    worker = threading.Thread(target=lambda: results.append(app.run(str(directory))), daemon=True)
    worker.start()
    try:
        assert _wait_running(directory) == os.getpid()
        assert app.stop(str(directory)) == os.getpid()
        worker.join(60)
        assert not worker.is_alive() and results and results[0].removed and results[0].rescue
    finally:
        if worker.is_alive():
            app.stop(str(directory))
    assert app.running(str(directory)) is None
    with pytest.raises(UsageError, match="no workflow is running there"):
        app.stop(str(directory))


def _descriptors() -> dict[int, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
    return found


def test_runs_in_one_process_leave_no_descriptor_open(tmp_path: Path) -> None:
    """Each run's backend closes what it opened (the spawner's eventfds and epolls) as the run ends,
    not when the cyclic collector gets to it: the collector is off here."""
    (tmp_path / "true.sub").write_text("executable = /bin/true\nuniverse = local\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A true.sub\nJOB B true.sub\nPARENT A CHILD B\n")
    assert app.run(str(tmp_path), app.RunOptions(dagman=app.DagmanOptions(force=True))).succeeded
    gc.disable()
    try:
        before = _descriptors()
        for _ in range(3):
            assert app.run(str(tmp_path), app.RunOptions(dagman=app.DagmanOptions(force=True))).succeeded
        after = _descriptors()
    finally:
        gc.enable()
    assert {fd: what for fd, what in after.items() if before.get(fd) != what} == {}


def test_app_run_of_a_dag_file_runs_it_from_the_current_directory_as_sheaf_run_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sub").write_text("executable = /bin/sh\n"
                                      "arguments = \"-c 'echo $(node) > $(node).txt'\"\n"
                                      "universe = local\nqueue\n")
    (tmp_path / "my.dag").write_text('JOB A job.sub\nVARS A node="A"\n')
    monkeypatch.chdir(tmp_path)
    result = app.run("my.dag")
    assert result.succeeded and result.done == 1 and result.dag == str(tmp_path / "my.dag")
    assert (tmp_path / "A.txt").read_text() == "A\n"
    assert app.status("my.dag").state == "succeeded"


@pytest.mark.parametrize(("target", "message"), [
    ("missing", "no such directory"), ("file.txt", "not a directory"), ("empty", "expected exactly one")])
def test_submit_refuses_a_directory_it_cannot_run_and_writes_nothing(tmp_path: Path, target: str,
                                                                     message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(UsageError, match=message):
        app.submit(str(tmp_path / target))
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_second_submit_while_the_first_runs_is_refused(tmp_path: Path) -> None:
    directory = _sleepy_dag(tmp_path)
    first = app.submit(str(directory))
    try:
        assert _wait_running(directory) == first
        with pytest.raises(UsageError, match=f"already running there \\(pid {first}\\)"):
            app.submit(str(directory))
        assert (directory / "sheaf-run.pid").read_text().strip() == str(first)
    finally:
        app.stop(str(directory))
    deadline = time.monotonic() + 60
    while app.running(str(directory)) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_status_names_the_rescue_dag_by_the_path_the_run_returned(tmp_path: Path) -> None:
    """``WorkflowStatus.rescue`` is the rescue DAG's absolute path, as ``RunResult.rescue`` is;
    ``sheaf status`` prints its file name."""
    (tmp_path / "fail.sub").write_text("executable = /bin/false\nuniverse = local\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB F fail.sub\n")
    result = app.run(str(tmp_path))
    assert not result.succeeded and result.rescue == str(tmp_path / "wf.dag.rescue001")
    assert app.status(str(tmp_path)).rescue == result.rescue
    shown = subprocess.run([SHEAF, "status", str(tmp_path)], capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and "rescue DAG: wf.dag.rescue001\n" in shown.stdout
