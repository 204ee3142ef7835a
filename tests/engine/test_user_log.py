"""A node's submit description naming ``log = FILE`` gets that job's events in FILE, in HTCondor's job
event log format, besides ``<dag>.nodes.log`` -- as HTCondor writes both.  ``htcondor2.JobEventLog`` is
the oracle that reads them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
import htcondor2

SHEAF = str(Path(sys.executable).with_name("sheaf"))


def _events(path: Path) -> list[tuple[str, int, int | None]]:
    out = []
    for event in htcondor2.JobEventLog(str(path)).events(stop_after=0):
        value = event.get("ReturnValue") if event.type == htcondor2.JobEventType.JOB_TERMINATED else None
        out.append((event.type.name, event.cluster, value))
    return out


def _run(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory)], capture_output=True, text=True, check=False,
                          timeout=120, env={**os.environ, "SHEAF_EVENTS": "0"})


def test_each_jobs_log_gets_its_events(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nlog = logs/a.log\nqueue\n")
    (tmp_path / "b.sub").write_text("universe = local\nexecutable = /bin/sh\narguments = \"-c 'exit 3'\"\n"
                                    f"log = {tmp_path / 'shared.log'}\nqueue\n")
    (tmp_path / "c.sub").write_text("universe = local\nexecutable = /bin/true\n"
                                    f"log = {tmp_path / 'shared.log'}\nqueue\n")
    (tmp_path / "n.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB N n.sub\n"
                                     "PARENT A CHILD B C N\n")
    done = _run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # B fails
    a = _events(tmp_path / "logs" / "a.log")
    assert [kind for kind, _, _ in a] == ["SUBMIT", "EXECUTE", "JOB_TERMINATED"] and a[-1][2] == 0
    shared = _events(tmp_path / "shared.log")
    assert sorted(kind for kind, _, _ in shared) == sorted(["SUBMIT", "EXECUTE", "JOB_TERMINATED"] * 2)
    assert sorted(value for kind, _, value in shared if kind == "JOB_TERMINATED") == [0, 3]
    assert len({cluster for _, cluster, _ in shared}) == 2  # one job each
    nodes = _events(tmp_path / "wf.dag.nodes.log")
    assert sum(kind == "JOB_TERMINATED" for kind, _, _ in nodes) == 4  # the DAG's log has them all


def test_a_log_that_cannot_be_opened_fails_the_nodes_submission(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\n"
                                    "log = /nonexistent/dir/a.log\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    done = _run(tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "a.log" in done.stdout
