"""run_workflow with a scripted fake backend: journal, resume, rescue, lock, reports, status."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine_helpers import FakeBackend, executable, write_dag
from sheaf.engine import read_journal, run_workflow, state_paths
from sheaf.engine._journal import Journal, read_records
from sheaf.engine._state import Change
from sheaf.errors import FormatError, UsageError
from sheaf.monitor import workflow_status

DIAMOND = """\
JOB A A.sub
JOB B B.sub
JOB C C.sub
JOB D D.sub
VARS ALL_NODES node="$(JOB)"
RETRY C 1
PARENT A CHILD B C
PARENT B C CHILD D
"""


def run(directory: Path, backend: FakeBackend, **kw: object) -> object:
    return run_workflow(str(directory), backend=backend, handle_signals=False, **kw)  # type: ignore[arg-type]


def test_success_writes_journal_and_jobstate(tmp_path: Path, fake: FakeBackend) -> None:
    write_dag(tmp_path, DIAMOND)
    result = run(tmp_path, fake)
    assert result.succeeded and result.done == 4 and result.source == "fresh"  # type: ignore[attr-defined]
    assert fake.nodes() == ["A", "B", "C", "D"] and fake.closed
    replayed = read_journal(state_paths(str(tmp_path / "wf.dag"))["journal"])
    assert {n: r.state for n, r in replayed.nodes.items()} == dict.fromkeys("ABCD", "done")
    lines = (tmp_path / "jobstate.log").read_text().splitlines()
    assert re.fullmatch(r"\d+ INTERNAL \*\*\* DAGMAN_STARTED \d+\.0 \*\*\*", lines[0])
    assert re.fullmatch(r"\d+ A SUBMIT 1\.0 condorpool - 1", lines[1])
    assert [ln.split()[2] for ln in lines[1:5]] == ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS"]
    assert lines[-1].endswith("INTERNAL *** DAGMAN_FINISHED 0 ***")
    again = run(tmp_path, FakeBackend())
    assert again.source == "complete"  # type: ignore[attr-defined]


def test_failure_leaves_rescue_and_rerun_continues_from_it(tmp_path: Path, fake: FakeBackend) -> None:
    write_dag(tmp_path, DIAMOND)
    fake.script("C", [1, 1])
    result = run(tmp_path, fake)
    assert not result.succeeded and result.failed_nodes == (("C", "exit code 1"),)  # type: ignore[attr-defined]
    rescue = tmp_path / "wf.dag.rescue001"
    assert result.rescue == str(rescue)  # type: ignore[attr-defined]
    # retries are reset upon rescue by default, so DAGMan writes no RETRY line (it would change C's limit)
    assert [ln for ln in rescue.read_text().splitlines() if not ln.startswith("#") and ln] == [
        "DONE A", "DONE B"]
    status = workflow_status(str(tmp_path))
    assert status.state == "failed" and status.counts["futile"] == 1
    assert status.failed == (("C", "exit code 1"),)
    second = FakeBackend()
    result = run(tmp_path, second)
    assert result.succeeded and second.nodes() == ["C", "D"]  # type: ignore[attr-defined]
    assert result.source == "rescue:wf.dag.rescue001"  # type: ignore[attr-defined]
    assert second.launches[0].attempt == 0  # retries reset upon rescue, as DAGMan does by default


def test_recovery_after_a_crash_reruns_only_in_flight_nodes(tmp_path: Path) -> None:
    write_dag(tmp_path, DIAMOND)

    class Crash(Exception):
        pass

    crashing = FakeBackend(per_wait=1)

    def crash_on(launch: object) -> None:
        if launch.node == "C":
            raise Crash

    crashing.hook = crash_on
    with pytest.raises(Crash):
        run(tmp_path, crashing)
    resumed = FakeBackend()
    result = run(tmp_path, resumed)
    assert result.succeeded and result.source == "recovery"  # type: ignore[attr-defined]
    assert resumed.nodes() == ["C", "D"]  # A and B were journaled done; C was in flight


def test_second_engine_on_the_same_dag_refuses(tmp_path: Path, fake: FakeBackend) -> None:
    write_dag(tmp_path, DIAMOND)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys, time
        os.makedirs({str(tmp_path / '.sheaf')!r}, exist_ok=True)
        fd = os.open({str(tmp_path / '.sheaf' / 'wf.dag.lock')!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b"4242\\n"); print("locked", flush=True)
        time.sleep(30)""")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(UsageError, match="already running"):
            run(tmp_path, fake)
    finally:
        holder.kill()
        holder.wait()
    assert fake.launches == []


def test_bad_submit_file_is_warned_about_and_fails_its_node_at_submission(tmp_path: Path,
                                                                         fake: FakeBackend) -> None:
    """As DAGMan's condor_submit of it would fail: only C fails (SUBMIT_FAILURE), its child never runs."""
    write_dag(tmp_path, DIAMOND)
    (tmp_path / "C.sub").write_text("executable = /bin/true\narguments = \"unterminated\nqueue\n")
    warnings: list[str] = []
    result = run(tmp_path, fake, on_warning=warnings.append)
    assert not result.succeeded  # type: ignore[attr-defined]
    assert [w for w in warnings if str(tmp_path / "C.sub") in w and "node C fails" in w]
    assert dict(result.failed_nodes)["C"].startswith("submit failed: " + str(tmp_path / "C.sub"))  # type: ignore[attr-defined]
    assert " C SUBMIT_FAILURE " in (tmp_path / "jobstate.log").read_text()


def test_pre_and_post_scripts_run_for_real(tmp_path: Path, fake: FakeBackend) -> None:
    log = tmp_path / "scripts.txt"
    executable(tmp_path / "pre.sh", f"#!/bin/sh\necho pre $1 $2 >> {log}\n")
    executable(tmp_path / "post.sh", f"#!/bin/sh\necho post $1 $2 >> {log}\nexit $2\n")
    write_dag(tmp_path, "JOB A A.sub\nSCRIPT PRE A pre.sh $JOB $RETRY\nSCRIPT POST A post.sh $JOB $RETURN\n"
                        "RETRY A 1\n")
    fake.script("A", [3, 0])
    result = run(tmp_path, fake)
    assert result.succeeded  # type: ignore[attr-defined]
    assert log.read_text().split("\n")[:4] == ["pre A 0", "post A 3", "pre A 1", "post A 0"]
    events = [ln.split()[2] for ln in (tmp_path / "jobstate.log").read_text().splitlines()[1:6]]
    assert events == ["PRE_SCRIPT_STARTED", "PRE_SCRIPT_SUCCESS", "SUBMIT", "EXECUTE", "JOB_TERMINATED"]


def test_memory_retry_recipe_reaches_the_ad(tmp_path: Path, fake: FakeBackend) -> None:
    recipe = "ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"
    write_dag(tmp_path, 'JOB A A.sub\nRETRY A 2\nVARS A +DAGNodeRetry="$(RETRY)"\n',
              jobs={"A": {"memory": recipe}})
    fake.script("A", [-9, 0])
    assert run(tmp_path, fake).succeeded  # type: ignore[attr-defined]
    asked = [(x.job_ad.eval("DAGNodeRetry"), x.job_ad.eval("RequestMemory")) for x in fake.launches]
    assert asked == [(0, 1024), (1, 4096)]


def test_config_file_and_overrides_set_throttles(tmp_path: Path) -> None:
    (tmp_path / "wf.config").write_text("DAGMAN_MAX_JOBS_SUBMITTED = 2\nDAGMAN_MAX_JOBS_IDLE = 0\n")
    body = "CONFIG wf.config\n" + "".join(f"JOB N{i} N.sub\n" for i in range(6))
    write_dag(tmp_path, body)
    seen: list[int] = []
    backend = FakeBackend(per_wait=1)
    backend.hook = lambda launch: seen.append(len(backend.queue) + 1)
    assert run(tmp_path, backend).succeeded  # type: ignore[attr-defined]
    assert max(seen) == 2
    (tmp_path / "wf.config").write_text("DAGMAN_MAX_JOBS_SUBMITTED = lots\n")
    with pytest.raises(FormatError, match="DAGMAN_MAX_JOBS_SUBMITTED is an integer"):
        run(tmp_path, FakeBackend())


def test_held_job_fails_with_reason(tmp_path: Path, fake: FakeBackend) -> None:
    write_dag(tmp_path, "JOB A A.sub\n")
    fake.held.add("A")
    result = run(tmp_path, fake)
    assert result.failed_nodes == (("A", "no slot could ever match"),)  # type: ignore[attr-defined]


def test_node_status_and_dot_files_are_written(tmp_path: Path, fake: FakeBackend) -> None:
    write_dag(tmp_path, DIAMOND + "DOT wf.dot\nNODE_STATUS_FILE wf.status 1\n")
    run(tmp_path, fake)
    assert '"A" -> "B";' in (tmp_path / "wf.dot").read_text()
    assert 'NodeStatus = 5; /* "STATUS_DONE" */' in (tmp_path / "wf.status").read_text()


def test_journal_group_commit_and_torn_tail(tmp_path: Path) -> None:
    path = str(tmp_path / "j")
    journal = Journal(path)
    journal.begin(1.0, 1, "fresh", 2, [])
    journal.changes([Change(2.0, "A", "waiting", "ready", 0), Change(2.0, "A", "ready", "submitted", 0,
                                                                      {"cluster": 1})])
    assert journal.commits == 0 and os.path.getsize(path) == 0  # nothing durable before commit
    journal.commit()
    assert journal.commits == 1
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b'["C",3.0,"A","submitted","do')  # kill -9 in the middle of a write
    assert [type(r).__name__ for r in read_records(path)] == ["BeginRecord", "ChangeRecord", "ChangeRecord"]
    journal = Journal(path)
    journal.changes([Change(4.0, "A", "submitted", "done", 0)])
    journal.close()
    replayed = read_journal(path)
    assert replayed.nodes["A"].state == "done" and replayed.max_cluster == 1 and replayed.ended is None


def test_the_dagman_id_is_asked_again_in_a_forked_child() -> None:
    """The DAGMan job id (the process id) is asked of the OS once per process: a forked child is a
    process of its own and gets its own id, not its parent's."""
    from sheaf.engine._dagid import dagman_id

    assert dagman_id() == os.getpid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write, str(dagman_id() - os.getpid()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 32) == b"0"
    os.close(read)
