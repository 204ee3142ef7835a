"""A stop (SIGTERM, DAGMan's ``condor_rm``) of ``sheaf run`` on a large DAG takes effect promptly,
whatever the run is doing: reading the DAG, building its state, or running.

Our own version of the scenario of DAGMan's ``job_dagman_really_large_dag`` (a DAG of many
independent nodes), stopped early.  Bounds are relative to the run's own start-up, measured in the
same test (the time from ``sheaf run`` to its first submission), never absolute.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.monitor import workflow_status

SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES = 60_000  # without the fix: ~2 s before the engine looked at a signal at all (then -15)


def _dag(directory: Path) -> Path:
    directory.mkdir()
    (directory / "true.sub").write_text("executable = /bin/true\nqueue\n")  # vanilla: slots, a queue
    (directory / "big.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                       "" + "".join(f"JOB n{i} true.sub\n" for i in range(NODES)))
    return directory


def _start(directory: Path, home: Path) -> tuple[subprocess.Popen[str], float]:
    env = {**os.environ, "SHEAF_HOME": str(home)}
    proc = subprocess.Popen([SHEAF, "run", str(directory)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    return proc, time.monotonic()


def _started(directory: Path, home: Path) -> tuple[subprocess.Popen[str], float]:
    """A run of the DAG in ``directory`` once it submitted its first job, and how long that took
    (the full start-up: read, validate, build the state, journal, first submissions)."""
    proc, began = _start(directory, home)
    jobstate = directory / "jobstate.log"
    while not (jobstate.exists() and b" SUBMIT " in jobstate.read_bytes()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    return proc, time.monotonic() - began


def _stop(proc: subprocess.Popen[str], within: float) -> None:
    """SIGTERM; the process must be gone (its output closed) within ``within`` seconds, having ended
    as a removed DAG ends (exit 1), with no traceback."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 1, err  # DAGMan's removed DAG
    assert "Traceback" not in err
    assert took < within, (took, within)


def _succeeded(jobstate: Path) -> set[str]:
    fields = (line.split() for line in jobstate.read_text().splitlines())
    return {f[1] for f in fields if len(f) > 2 and f[2] == "JOB_SUCCESS"}


def _rescue_done(rescue: Path) -> set[str]:
    fields = (line.split() for line in rescue.read_text().splitlines())
    return {f[1] for f in fields if len(f) == 2 and f[0] == "DONE"}


def test_a_stop_during_start_up_or_the_run_ends_the_run_promptly(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEAF_HOME", str(tmp_path / "home"))
    # baseline: the full start-up (read, validate, build the state, first submissions), then a stop
    running = _dag(tmp_path / "running")
    proc, startup = _started(running, tmp_path / "home")
    time.sleep(0.5)
    _stop(proc, within=max(3.0, 3 * startup))
    jobstate = running / "jobstate.log"
    done = _rescue_done(running / "big.dag.rescue001")
    assert done == _succeeded(jobstate) and len(done) < NODES
    assert "DAGMAN_FINISHED 2" in jobstate.read_text().splitlines()[-1]  # DAGMan's EXIT_ABORT on condor_rm
    # the run exits without the events loader's last catch-up; the next view makes it
    status = workflow_status(str(running))
    assert status.state == "failed" and status.counts.get("done", 0) == len(done), status
    journal = (running / ".sheaf" / "big.dag.journal").read_bytes()
    rescue = (running / "big.dag.rescue001").read_bytes()

    # a stop while the DAG is still being read: the removed status at once, nothing written
    reading = _dag(tmp_path / "reading")
    proc, _ = _start(reading, tmp_path / "home")
    time.sleep(startup * 0.4)
    _stop(proc, within=startup / 2)
    assert not (reading / ".sheaf" / "big.dag.journal").exists()
    assert not list(reading.glob("big.dag.rescue*"))

    # the stopped run resumed (its journal replayed, its rescue DAG read), stopped again at once:
    # the first run's journal and rescue DAG stay as they were
    proc, _ = _start(running, tmp_path / "home")
    time.sleep(startup * 0.4)
    _stop(proc, within=startup / 2)
    assert (running / ".sheaf" / "big.dag.journal").read_bytes() == journal
    assert (running / "big.dag.rescue001").read_bytes() == rescue
    assert not (running / "big.dag.rescue002").exists()
