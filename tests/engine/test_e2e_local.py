"""End to end with the real LocalBackend and real processes, through the ``sheaf`` command."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.engine import read_journal, state_paths

SHEAF = str(Path(sys.executable).parent / "sheaf")

HOG = "import time; b = bytes([1]) * (1536 * 1048576); time.sleep(0.5)"  # 1.5 GB, touched

PLANNED_DAG = """\
######################################################################
# PEGASUS WMS GENERATED DAG FILE
# DAG diamond
######################################################################
JOBSTATE_LOG jobstate.log
JOB create_dir create_dir.sub
RETRY create_dir 0

JOB analyze_ID0000001 analyze_ID0000001.sub
RETRY analyze_ID0000001 0
VARS analyze_ID0000001 +DAGNodeRetry="$(RETRY)"

PARENT create_dir CHILD analyze_ID0000001
"""

ANALYZE_SUB = f"""\
universe = vanilla
executable = {sys.executable}
arguments = "-c '{HOG}'"
initialdir = {{dir}}
output = analyze_ID0000001.out
error = analyze_ID0000001.err
request_memory = 1024
request_cpus = 1
+pegasus_site = "condorpool"
queue
"""

CREATE_SUB = """\
universe = local
executable = /bin/mkdir
arguments = -p scratch
initialdir = {dir}
queue
"""


def sheaf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    (tmp_path / "diamond.dag").write_text(PLANNED_DAG)
    (tmp_path / "analyze_ID0000001.sub").write_text(ANALYZE_SUB.format(dir=tmp_path))
    (tmp_path / "create_dir.sub").write_text(CREATE_SUB.format(dir=tmp_path))
    (tmp_path / "pool.conf").write_text("NUM_CPUS = 2\nMEMORY = 8192\n")
    return tmp_path


@pytest.mark.slow
def test_hand_edited_retry_and_request_memory_take_effect(planned: Path) -> None:
    first = sheaf("run", str(planned), "--pool-config", str(planned / "pool.conf"))
    assert first.returncode == 1, first.stdout + first.stderr
    assert "analyze_ID0000001" in first.stdout and "memory" in first.stdout
    assert (planned / "diamond.dag.rescue001").read_text().count("DONE create_dir") == 1

    dag = planned / "diamond.dag"
    dag.write_text(dag.read_text().replace("RETRY analyze_ID0000001 0", "RETRY analyze_ID0000001 1"))
    sub = planned / "analyze_ID0000001.sub"
    sub.write_text(sub.read_text().replace(
        "request_memory = 1024",
        "request_memory = ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"))

    second = sheaf("run", str(planned), "--pool-config", str(planned / "pool.conf"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "rescue:diamond.dag.rescue001" in second.stdout and "1 retries" in second.stdout
    lines = [ln.split() for ln in (planned / "jobstate.log").read_text().splitlines()]
    analyze = [(ln[2], int(ln[-1])) for ln in lines
               if ln[1] == "analyze_ID0000001" and ln[2].startswith("JOB_")]
    # run 1: attempt 1 fails; run 2 (from the rescue, retries reset): attempt 1 fails, attempt 2 succeeds
    assert [kind for kind, _ in analyze] == (["JOB_TERMINATED", "JOB_FAILURE"] * 2
                                             + ["JOB_TERMINATED", "JOB_SUCCESS"])
    # DAGMan's sequence numbers are DAG-wide, one per node attempt, and a rescue run continues them
    seq = [number for _, number in analyze]
    assert seq[0] == seq[1] < seq[2] == seq[3] < seq[4] == seq[5]
    assert not any(ln[1] == "create_dir" and ln[2] == "SUBMIT" for ln in lines[lines.index(
        [w for w in lines if w[2:4] == ["***", "DAGMAN_STARTED"]][1]):])  # DONE in the rescue: not re-run
    status = sheaf("status", str(planned))
    assert status.returncode == 0 and "succeeded" in status.stdout


def test_status_while_running_and_second_engine_refused(tmp_path: Path) -> None:
    (tmp_path / "slow.sub").write_text("executable = /bin/sleep\narguments = 6\nqueue\n")
    (tmp_path / "fast.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB fast fast.sub\nJOB slow slow.sub\nJOB after fast.sub\n"
                                     "PARENT slow CHILD after\n")
    runner = subprocess.Popen([SHEAF, "run", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        journal = state_paths(str(tmp_path / "wf.dag"))["journal"]
        deadline = time.time() + 20
        while time.time() < deadline and read_journal(journal).nodes.get("fast", None) is None:
            time.sleep(0.05)
        time.sleep(0.3)
        status = sheaf("status", str(tmp_path))
        assert status.returncode == 0 and "running" in status.stdout, status.stdout + status.stderr
        second = sheaf("run", str(tmp_path))
        assert second.returncode == 2 and "already running" in second.stderr
    finally:
        out, err = runner.communicate(timeout=30)
    assert runner.returncode == 0, out + err
    assert "3 of 3 nodes done" in out


def test_bad_input_exits_2_and_failure_exits_1(tmp_path: Path) -> None:
    (tmp_path / "wf.dag").write_text("JOB a a.sub\nRETRY a many\n")
    (tmp_path / "a.sub").write_text("executable = /bin/false\nqueue\n")
    bad = sheaf("run", str(tmp_path))
    assert bad.returncode == 2 and "wf.dag:2" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / ".sheaf").exists()
    (tmp_path / "wf.dag").write_text("JOB a a.sub\nRETRY a 1\n")
    failed = sheaf("run", str(tmp_path))
    assert failed.returncode == 1 and "1 retries" in failed.stdout
    assert (tmp_path / "wf.dag.rescue001").exists()


def test_subdag_external_runs_as_a_nested_engine(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "t.sub").write_text("executable = /bin/sh\n"
                                 f"arguments = \"-c 'echo $(dag_node_name) $(name) >> {tmp_path}/log'\"\n"
                                 "queue\n")
    (inner / "inner.dag").write_text('JOB x t.sub\nJOB y t.sub\nPARENT x CHILD y\n'
                                     'VARS ALL_NODES name="n$(JOB)"\n')
    (tmp_path / "t.sub").write_text((inner / "t.sub").read_text())
    (tmp_path / "outer.dag").write_text("JOB first t.sub\nSUBDAG EXTERNAL middle inner.dag DIR inner\n"
                                        "JOB last t.sub\n"
                                        "PARENT first CHILD middle\nPARENT middle CHILD last\n")
    result = sheaf("run", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "log").read_text().split() == ["first", "x", "nx", "y", "ny", "last"]
    assert read_journal(state_paths(str(inner / "inner.dag"))["journal"]).ended is not None


def test_sigterm_stops_the_run_and_keeps_a_rescue(tmp_path: Path) -> None:
    (tmp_path / "slow.sub").write_text("executable = /bin/sleep\narguments = 30\nqueue\n")
    (tmp_path / "fast.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB fast fast.sub\nJOB slow slow.sub\nPARENT fast CHILD slow\n")
    runner = subprocess.Popen([SHEAF, "run", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    journal = state_paths(str(tmp_path / "wf.dag"))["journal"]
    deadline = time.time() + 20
    while (time.time() < deadline
           and getattr(read_journal(journal).nodes.get("slow"), "state", "") != "submitted"):
        time.sleep(0.05)
    runner.terminate()
    out, _ = runner.communicate(timeout=20)
    assert runner.returncode == 1 and "FAILED" in out, out
    assert "DONE fast" in (tmp_path / "wf.dag.rescue001").read_text()
    assert read_journal(journal).ended is not None


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "blackdiamond"


@pytest.mark.slow
def test_sheaf_plan_output_with_hand_edits(tmp_path: Path) -> None:
    """The bundled example planned by ``sheaf plan``; a RETRY line and a request_memory line
    edited by hand."""
    plan = tmp_path / "plan"
    planned = subprocess.run([SHEAF, "plan", "workflow.yml", "-d", str(tmp_path), "--relative-dir", plan.name,
                              "--cluster", "horizontal", "--input-dir", "input",
                              "-D", "sheaf.submit.shared=false"],  # a file of its own to edit
                             cwd=EXAMPLE, capture_output=True, text=True, check=False)
    assert planned.returncode == 0, planned.stderr
    dag = plan / "blackdiamond.dag"
    node = "analyze_ID0000010"
    sub = next(plan.rglob(f"{node}.sub"))
    # keg (a Python script, ~10 MB) lives 0.5 s so the memory poll sees it over the 1 MB first request
    # (a job that ends before the first poll and stays under the engine's own peak cannot be measured)
    sub.write_text(sub.read_text().replace("-T 0", "-T 0.5").replace(
        "queue",
        "request_memory = ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1, 4096)\nqueue"))
    text = dag.read_text()
    assert f"RETRY {node} 2" in text
    dag.write_text(text.replace(f"RETRY {node} 2", f"RETRY {node} 0"))
    first = sheaf("run", str(plan))
    assert first.returncode == 1 and node in first.stdout and "memory" in first.stdout, first.stdout
    dag.write_text(dag.read_text().replace(f"RETRY {node} 0", f"RETRY {node} 1"))
    second = sheaf("run", str(plan))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "rescue:blackdiamond.dag.rescue001" in second.stdout and "1 retries" in second.stdout
    ends = [ln.split()[2] for ln in (plan / "jobstate.log").read_text().splitlines()
            if f" {node} JOB_" in ln and "TERMINATED" not in ln]
    assert ends == ["JOB_FAILURE", "JOB_FAILURE", "JOB_SUCCESS"]
