"""``<dag>.dagman.out`` as ``sheaf run`` writes it, read back by Pegasus's own reader
(``Pegasus.client.status``, what ``wf.wait()``/``wf.get_status()`` use)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from Pegasus.client.status import Status

from sheaf.app._dagman_out import DagmanOut, pegasus_status
from sheaf.engine import Progress

STATES = ("waiting", "pre_ready", "pre", "ready", "submitted", "post", "done", "failed")


def _read(path: Path) -> dict[str, object]:
    status = Status()
    status.parse_dagman_file(str(path), "w.dag", "root")
    root: dict[str, object] = status.status_output["dags"]["root"]
    return root


def _progress(counts: dict[str, int], finished: bool = False) -> Progress:
    return Progress(sum(counts.values()), counts, 0, 0.0, 0.0, finished)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(STATES), st.integers(0, 10_000), min_size=1).filter(
    lambda counts: sum(counts.values()) > 0), st.sampled_from([None, 0, 1]))
def test_pegasus_reads_the_counts_and_the_outcome(tmp_path_factory: object, counts: dict[str, int],
                                                  status: int | None) -> None:
    dag = Path(tmp_path_factory.mktemp("d")) / "w.dag"  # type: ignore[attr-defined]
    out = DagmanOut(str(dag))
    out(_progress(counts, finished=True))
    if status is not None:
        out.finish(status)
    root = _read(dag.parent / "w.dag.dagman.out")
    total = sum(counts.values())
    assert root["total"] == total and root["succeeded"] == counts.get("done", 0)
    assert root["failed"] == counts.get("failed", 0) and root["queued"] == counts.get("submitted", 0)
    assert root["unready"] == counts.get("waiting", 0)
    assert (root["ready"] + root["pre"] + root["post"] + root["unready"] + root["queued"]  # type: ignore[operator]
            + root["succeeded"] + root["failed"]) == total
    mine = pegasus_status("w.dag", "running", total, counts)["dags"]["root"]  # type: ignore[index]
    assert {k: v for k, v in mine.items() if k != "state"} == {k: v for k, v in root.items() if k != "state"}
    if status is not None:
        expected = "Success" if status == 0 else "Failure"
    elif counts.get("failed"):
        expected = "Failure"  # DAGMan's DAG status turns non-zero at the first failed node
    else:
        expected = "Success" if counts.get("done", 0) == total else "Running"
    assert root["state"] == expected


def test_a_block_per_change_at_most_once_a_second_and_always_the_last(tmp_path: Path) -> None:
    now = [0.0]
    out = DagmanOut(str(tmp_path / "w.dag"), clock=lambda: now[0])
    out(_progress({"waiting": 2}))
    out(_progress({"waiting": 2}))  # no change
    now[0] = 0.5
    out(_progress({"waiting": 1, "submitted": 1}))  # too soon
    out(_progress({"done": 2}, finished=True))
    out.finish(0)
    text = (tmp_path / "w.dag.dagman.out").read_text()
    assert text.count("nodes total") == 2 and text.rstrip().endswith("EXITING WITH STATUS 0")


def test_nothing_is_written_for_a_run_that_never_started(tmp_path: Path) -> None:
    DagmanOut(str(tmp_path / "w.dag")).finish(1)
    assert not (tmp_path / "w.dag.dagman.out").exists()


def _sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "sheaf"), "run", str(directory), *args],
                          capture_output=True, text=True, check=False, timeout=120)


def test_the_exit_line_is_the_one_the_dagman_manual_says_to_check(tmp_path: Path) -> None:
    """The manual: a DAG that has left the queue succeeded when dagman.out's last line is like
    ``(condor_DAGMAN) pid 445 EXITING WITH STATUS 0``; the id is the one jobstate.log names."""
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nJOBSTATE_LOG jobstate.log\n")
    assert _sheaf_run(tmp_path).returncode == 0
    last = (tmp_path / "wf.dag.dagman.out").read_text().splitlines()[-1]
    pattern = r" \*\*\*\* condor_scheduniv_exec\.(\d+)\.0 \(condor_DAGMAN\) pid (\d+) EXITING WITH STATUS 0$"
    found = re.search(pattern, last)
    assert found and found[1] == found[2], last
    assert f"DAGMAN_STARTED {found[1]}.0" in (tmp_path / "jobstate.log").read_text()


def test_a_run_of_named_dag_files_writes_the_first_ones_dagman_out(tmp_path: Path) -> None:
    """DAGMan writes ``<primary dag>.dagman.out`` whatever the number of DAG files it is given
    (``condor_submit_dag a.dag b.dag`` names it after ``a.dag``): so does ``sheaf run --dag``."""
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "one.dag").write_text("JOB A a.sub\n")
    (tmp_path / "two.dag").write_text("JOB B a.sub\n")
    done = _sheaf_run(tmp_path, "--dag", "one.dag")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "one.dag.dagman.out").read_text().rstrip().endswith("EXITING WITH STATUS 0")
    (tmp_path / "three.dag").write_text("JOB C a.sub\n")
    done = _sheaf_run(tmp_path, "--dag", "two.dag", "--dag", "three.dag")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "two.dag.dagman.out").read_text().rstrip().endswith("EXITING WITH STATUS 0")
    assert not (tmp_path / "three.dag.dagman.out").exists()


def test_the_dag_status_line_has_dagmans_numbers(tmp_path: Path) -> None:
    # DagStatus: 2 DAG_STATUS_NODE_FAILED once a node failed (not 1, DAG_STATUS_ERROR), the engine's
    # own status when it tells one (4 removed, 6 halted), a change of status alone is a new block
    out = DagmanOut(str(tmp_path / "w.dag"))
    out(_progress({"done": 1, "failed": 1}, finished=True))
    out(Progress(2, {"done": 1, "failed": 1}, 0, 0.0, 0.0, True, 4))
    out(Progress(2, {"done": 2}, 0, 0.0, 0.0, True, 6))
    lines = [line.split(" ", 2)[2] for line in (tmp_path / "w.dag.dagman.out").read_text().splitlines()
             if "DAG status" in line]
    assert lines == ["DAG status: 2 (DAG_STATUS_NODE_FAILED)", "DAG status: 4 (DAG_STATUS_RM)",
                     "DAG status: 6 (DAG_STATUS_HALTED)"]


def test_a_failed_final_node_leaves_dag_status_2_in_the_last_block(tmp_path: Path) -> None:
    (tmp_path / "ok.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text("JOB A ok.sub\nFINAL Z missing.sub\n")  # FINAL cannot be submitted
    assert _sheaf_run(tmp_path).returncode == 1
    text = (tmp_path / "w.dag.dagman.out").read_text()
    last = text[text.rindex("DAG status"):]
    assert last.startswith("DAG status: 2 (DAG_STATUS_NODE_FAILED)") and "EXITING WITH STATUS 1" in last


def test_each_retry_is_dagmans_retrying_line(tmp_path: Path) -> None:
    """DAGMan writes ``Retrying node X (retry #n of m)...`` to dagman.out on each retry; tools grep for it."""
    (tmp_path / "flaky.sh").write_text('echo x >> tries; test "$(wc -l < tries)" -ge 3\n')
    (tmp_path / "flaky.sub").write_text("universe = local\nexecutable = /bin/sh\narguments = flaky.sh\n"
                                        f"initialdir = {tmp_path}\nqueue\n")
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB F flaky.sub\nRETRY F 4\nJOB A a.sub\nPARENT F CHILD A\n")
    done = _sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "wf.dag.dagman.out").read_text()
    retries = [line.split(" ", 2)[2] for line in text.splitlines() if "Retrying node" in line]
    assert retries == ["Retrying node F (retry #1 of 4)...", "Retrying node F (retry #2 of 4)..."]
    # where DAGMan writes them: after the failure, before the node's job is submitted again
    lines = [line.split(" ", 2)[2] for line in text.splitlines()
             if ("Node F" in line and ("Submitting" in line or "job proc" in line)) or "Retrying" in line]
    assert [line.split(" (")[0] if "job proc" in line else line for line in lines] == [
        "Submitting HTCondor Node F job(s)...", "Node F job proc", "Retrying node F (retry #1 of 4)...",
        "Submitting HTCondor Node F job(s)...", "Node F job proc", "Retrying node F (retry #2 of 4)...",
        "Submitting HTCondor Node F job(s)...", "Node F job proc"]


def test_a_submit_failure_line_ends_with_its_reason(tmp_path: Path) -> None:
    """DAGMan writes the error after the event's time (HTCondor's DAGMan tests look for it there)."""
    (tmp_path / "two.sub").write_text("universe = local\nexecutable = /bin/true\nqueue 2\n")
    (tmp_path / "c.conf").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = True\n")
    (tmp_path / "w.dag").write_text("CONFIG c.conf\nJOB A two.sub\n")
    assert _sheaf_run(tmp_path).returncode == 1
    (line,) = [line for line in (tmp_path / "w.dag.dagman.out").read_text().splitlines()
               if "ULOG_SUBMIT_FAILURE" in line]
    assert line.split(" ", 2)[2].startswith("Event: ULOG_SUBMIT_FAILURE for HTCondor Node A (-1.-1.-1) {")
    assert line.endswith("} Submit generated multiple job procs; disallowed by DAGMAN_PROHIBIT_MULTI_JOBS "
                         "setting"), line


def test_the_counts_block_is_dagmans_with_futile_nodes_and_held_procs(tmp_path: Path) -> None:
    """DAGMan's columns, Futile last (the nodes a failure left that can never run, not Un-Ready), then
    the held procs line; Pegasus's reader still reads the block."""
    (tmp_path / "no.sub").write_text("universe = local\nexecutable = /bin/false\nqueue\n")
    (tmp_path / "yes.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text("JOB A no.sub\nJOB B yes.sub\nJOB C yes.sub\nJOB D yes.sub\n"
                                    "PARENT A CHILD B\nPARENT B CHILD C\n")
    assert _sheaf_run(tmp_path).returncode == 1
    rows = [line.split(" ", 2)[2] for line in (tmp_path / "w.dag.dagman.out").read_text().splitlines()]
    header = " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile"
    last = len(rows) - 1 - rows[::-1].index(header)
    assert rows[last + 1:last + 4] == ["  ===     ===      ===     ===     ===        ===      ===      ===",
                                       "    1       0        0       0       0          0        1        2",
                                       "0 job proc(s) currently held"]
    root = _read(tmp_path / "w.dag.dagman.out")
    assert (root["succeeded"], root["failed"], root["unready"], root["state"]) == (1, 1, 0, "Failure")


def test_set_job_attr_without_a_node_status_file_is_said_by_name(tmp_path: Path) -> None:
    """SET_JOB_ATTR sets DAGMan's own job ad, which sheaf writes into the node status file: without one,
    the attribute is named in a warning, on stderr and in dagman.out -- never silently dropped."""
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\nSET_JOB_ATTR TestNumber = 17\n")
    done = _sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "SET_JOB_ATTR TestNumber = 17" in done.stderr
    assert "WARNING:" in (tmp_path / "wf.dag.dagman.out").read_text()
    assert "SET_JOB_ATTR TestNumber = 17" in (tmp_path / "wf.dag.dagman.out").read_text()
    status = tmp_path / "with-status"
    status.mkdir()
    (status / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (status / "wf.dag").write_text("JOB A a.sub\nSET_JOB_ATTR TestNumber = 17\nNODE_STATUS_FILE wf.status\n")
    done = _sheaf_run(status)
    assert done.returncode == 0 and "SET_JOB_ATTR" not in done.stderr, done.stderr
    assert "TestNumber = 17" in (status / "wf.status").read_text()


def test_what_happens_to_nodes_is_written_in_dagmans_words(tmp_path: Path) -> None:
    """The lines DAGMan writes as it submits a node, reads its job's events, runs its scripts and skips
    a node by PRE_SKIP; Pegasus's reader still finds the counts and the outcome among them."""
    (tmp_path / "a.sub").write_text('universe = local\nexecutable = /bin/sh\n'
                                    'arguments = "-c \'exit $(code)\'"\nqueue\n')
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\nexit $1\n")
    script.chmod(0o755)
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A code="0"\nSCRIPT PRE A s.sh 0\n'
                                    'JOB B a.sub\nVARS B code="3"\nSCRIPT POST B s.sh 1\n'
                                    'JOB C a.sub\nVARS C code="0"\nSCRIPT PRE C s.sh 2\nPRE_SKIP C 2\n')
    assert _sheaf_run(tmp_path).returncode == 1
    text = (tmp_path / "w.dag.dagman.out").read_text()
    lines = [line.split(" ", 2)[2] for line in text.splitlines()]
    for expected in ("Running PRE script of Node A...", "PRE Script of node A completed successfully.",
                     "Submitting HTCondor Node A job(s)...", "Running POST script of Node B...",
                     "POST Script of node B failed with status 1",
                     "PRE Script of Node C failed with status 2",
                     "PRE_SKIP return value 2 indicates we are done (successfully) with node C"):
        assert expected in lines, (expected, text)
    assert any(line.startswith("Node B job proc (") and line.endswith(".0.0) failed with status 3.")
               for line in lines)
    events = [line for line in lines if line.startswith("Event: ULOG_")]
    assert any(line.startswith("Event: ULOG_JOB_TERMINATED for HTCondor Node A (") for line in events)
    root = _read(tmp_path / "w.dag.dagman.out")
    assert (root["succeeded"], root["failed"], root["state"]) == (2, 1, "Failure")
