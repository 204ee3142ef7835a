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

SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES = 40_000  # the engine without the fix took ~1.5 s here before it looked at a signal at all


def _dag(directory: Path) -> Path:
    directory.mkdir()
    (directory / "true.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (directory / "big.dag").write_text("".join(f"JOB n{i} true.sub\n" for i in range(NODES)))
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


def test_a_stop_during_start_up_or_the_run_ends_the_run_promptly(tmp_path: Path) -> None:
    # baseline: the full start-up (read, validate, build the state, first submissions), then a stop
    running = _dag(tmp_path / "running")
    proc, startup = _started(running, tmp_path / "home")
    jobstate = running / "jobstate.log"
    time.sleep(0.5)
    _stop(proc, within=max(5.0, 4 * startup))
    rescue = running / "big.dag.rescue001"
    done = _rescue_done(rescue)
    assert done == _succeeded(jobstate) and len(done) < NODES
    assert "DAGMAN_FINISHED 1" in jobstate.read_text().splitlines()[-1]

    # a stop while the DAG is still being read: the removed status at once, nothing written
    reading = _dag(tmp_path / "reading")
    proc, _ = _start(reading, tmp_path / "home")
    time.sleep(startup * 0.4)
    _stop(proc, within=startup / 2)
    assert not (reading / ".sheaf" / "big.dag.journal").exists()
    assert not list(reading.glob("big.dag.rescue*"))


def test_a_stop_while_the_state_is_built_or_the_journal_replayed(tmp_path: Path) -> None:
    """A resume of the stopped run replays its journal first: a stop then ends it at once too, and the
    journal and rescue DAG of the first run stay as they were."""
    directory = _dag(tmp_path / "wf")
    proc, startup = _started(directory, tmp_path / "home")
    _stop(proc, within=max(5.0, 4 * startup))
    kept = {p.name: p.read_bytes() for p in (directory / ".sheaf").iterdir() if p.suffix == ".journal"}
    rescue = (directory / "big.dag.rescue001").read_bytes()
    proc, _ = _start(directory, tmp_path / "home")
    time.sleep(startup * 0.6)
    _stop(proc, within=startup / 2)
    if not (directory / "big.dag.rescue002").exists():  # stopped before the rescue run began
        assert {p.name: p.read_bytes() for p in (directory / ".sheaf").iterdir()
                if p.suffix == ".journal"} == kept
    assert (directory / "big.dag.rescue001").read_bytes() == rescue
