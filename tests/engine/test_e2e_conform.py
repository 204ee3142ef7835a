"""DAGMan conformance end to end, the second round: ``sheaf run`` on hand-written DAGs whose scenarios
follow DAGMan's own tests (our versions, written from the DAGMan manual and ``src/condor_dagman``).

* a node whose job has several procs (``queue N``) writes each proc's own job events to jobstate.log
  and to the node log - one SUBMIT per proc, each proc's JOB_TERMINATED, an EXECUTE (when it ran)
  then JOB_EVICTED and JOB_ABORTED for a proc removed because the job list failed - and the node's
  JOB_SUCCESS or JOB_FAILURE once, after every proc has left the queue (``Dag::ProcessJobProcEnd``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_helpers import executable

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
SHEAF = str(Path(sys.executable).parent / "sheaf")


def sheaf_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(directory), *args], capture_output=True, text=True, check=False,
                          timeout=120)


def jobstate(directory: Path, node: str) -> list[tuple[str, str]]:
    """(event, id column) of a node's jobstate.log lines, in order."""
    lines = (directory / "jobstate.log").read_text().splitlines()
    return [(w[2], w[3]) for w in (line.split() for line in lines) if w[1] == node]


# proc 1 marks that it runs and sleeps; proc 0 waits for the mark (and a little more, so the engine
# learns of proc 1's start first), then fails with 2
PROC_1_RUNS_PROC_0_FAILS = """\
#!/bin/sh
if [ "$1" != 0 ]; then touch started.$1; exec sleep 60; fi
n=0
while [ ! -e started.1 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
sleep 0.5
exit 2
"""


def test_multi_proc_job_writes_each_procs_events(tmp_path: Path) -> None:
    # proc 0 fails once proc 1 runs; proc 1 would run a minute but is removed (evicted, then
    # aborted) as the job list has failed
    exe = executable(tmp_path / "job.sh", PROC_1_RUNS_PROC_0_FAILS)
    (tmp_path / "a.sub").write_text(f"universe = local\nexecutable = {exe}\narguments = $(ProcId)\n"
                                    "log = a.log\nqueue 2\n")
    (tmp_path / "b.sub").write_text("universe = local\nexecutable = /bin/true\nqueue 3\n")
    post = executable(tmp_path / "post.sh", "#!/bin/sh\nexit 0\n")
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     f"JOB A a.sub\nSCRIPT POST A {post}\nJOB B b.sub\nPARENT A CHILD B\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    a = jobstate(tmp_path, "A")
    cluster = a[0][1].split(".")[0]
    assert a[:2] == [("SUBMIT", f"{cluster}.0"), ("SUBMIT", f"{cluster}.1")]
    kinds = [k for k, _ in a]
    assert kinds.count("JOB_TERMINATED") == 1 and ("JOB_TERMINATED", f"{cluster}.0") in a
    assert kinds.index("JOB_EVICTED") < kinds.index("JOB_ABORTED")
    assert ("JOB_ABORTED", f"{cluster}.1") in a and ("JOB_EVICTED", f"{cluster}.1") in a
    assert kinds.count("EXECUTE") == 2 and kinds.count("JOB_FAILURE") == 1
    assert kinds.index("JOB_FAILURE") > kinds.index("JOB_ABORTED") and ("JOB_FAILURE", "2") in a
    assert ("POST_SCRIPT_STARTED", f"{cluster}.0") in a
    b = jobstate(tmp_path, "B")
    assert [k for k, _ in b].count("SUBMIT") == 3 and [k for k, _ in b].count("JOB_TERMINATED") == 3
    assert [k for k, _ in b][-1] == "JOB_SUCCESS"
    assert all(re.fullmatch(r"\d+\.[012]|0", ident) for _, ident in b)
    metrics = json.loads((tmp_path / "wf.dag.metrics").read_text())  # counted by proc
    assert (metrics["jobs_submitted"], metrics["jobs_succeeded"], metrics["jobs_failed"]) == (5, 3, 2)
    assert '    "jobs_submitted":5,\n' in (tmp_path / "wf.dag.metrics").read_text()  # DAGMan's layout


def test_multi_proc_events_read_back_with_htcondor(tmp_path: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    # proc 0 fails once proc 1 runs: proc 1 is evicted, then aborted
    exe = executable(tmp_path / "job.sh", PROC_1_RUNS_PROC_0_FAILS)
    (tmp_path / "a.sub").write_text(f"universe = local\nexecutable = {exe}\narguments = $(ProcId)\nqueue 2\n")
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    assert sheaf_run(tmp_path).returncode == 1
    events = list(htcondor2.JobEventLog(str(tmp_path / "wf.dag.nodes.log")).events(0))
    T = htcondor2.JobEventType
    seen = [(int(e.type), e.proc) for e in events]
    assert seen.count((int(T.SUBMIT), 0)) == 1 and seen.count((int(T.SUBMIT), 1)) == 1
    assert (int(T.JOB_TERMINATED), 0) in seen and (int(T.JOB_EVICTED), 1) in seen
    assert (int(T.JOB_ABORTED), 1) in seen and (int(T.JOB_TERMINATED), 1) not in seen


APPEND_SUB = """\
universe = local
executable = /bin/echo
if defined early
  seen_early = yes
else
  seen_early = no
endif
if defined late
  seen_late = yes
else
  seen_late = no
endif
late = file
arguments = "$(early) $(seen_early) $(late) $(seen_late)"
output = {out}
queue
"""


@pytest.mark.parametrize(("config", "late_vars", "expected"), [
    ("", 'VARS A APPEND late="dag"', "dag"),  # the APPEND line, whatever the default
    ("DAGMAN_DEFAULT_APPEND_VARS = True\n", 'VARS A late="dag"', "dag"),  # plain VARS appended
])
def test_appended_vars_are_not_seen_by_the_submit_files_conditions(
        tmp_path: Path, config: str, late_vars: str, expected: str) -> None:
    # condor_submit reads the file (its if/else decided) before DAGMan's appended macros are set:
    # they override the file's own values but no condition saw them; prepended ones it does see
    (tmp_path / "a.sub").write_text(APPEND_SUB.format(out=tmp_path / "a.out"))
    (tmp_path / "wf.config").write_text(config)
    dag = f'CONFIG wf.config\nJOB A a.sub\nVARS A PREPEND early="pre"\n{late_vars}\n'
    (tmp_path / "wf.dag").write_text(dag)
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a.out").read_text() == f"pre yes {expected} no\n"


def test_prohibit_multi_jobs_fails_only_the_nodes_of_several_procs(tmp_path: Path) -> None:
    # DAGMAN_PROHIBIT_MULTI_JOBS: a node whose submit queues more than one proc fails its submission at
    # once (SUBMIT_FAILURE, its POST script sees -1001); single-proc nodes run
    (tmp_path / "one.sub").write_text(f"universe = local\nexecutable = /bin/sh\n"
                                      f"arguments = \"-c 'echo $(nodename) >> {tmp_path}/ran'\"\nqueue\n")
    (tmp_path / "two.sub").write_text("universe = local\nexecutable = /bin/true\nqueue 2\n")
    post = executable(tmp_path / "post.sh", f'#!/bin/sh\necho "$1 $2" >> {tmp_path}/post.out\nexit 0\n')
    (tmp_path / "wf.config").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = True\n")
    (tmp_path / "wf.dag").write_text('CONFIG wf.config\nJOB A one.sub\nVARS A nodename="A"\nJOB B two.sub\n'
                                     "JOBSTATE_LOG jobstate.log\n"
                                     f"JOB C two.sub\nSCRIPT POST C {post} $JOB $RETURN\n"
                                     "PARENT A CHILD B C\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "DAGMAN_PROHIBIT_MULTI_JOBS" not in done.stderr  # honoured: no warning
    assert (tmp_path / "ran").read_text() == "A\n"
    assert (tmp_path / "post.out").read_text() == "C -1001\n"
    assert [k for k, _ in jobstate(tmp_path, "B")] == ["SUBMIT_FAILURE"]
    status = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE A" in status and "DONE C" in status and "DONE B" not in status


def test_a_second_list_of_common_input_files_fails_its_submission(tmp_path: Path) -> None:
    # a DAG transfers one list of common input files: the first node job with a CommonInputFiles string
    # sets it, a node whose job declares another fails its submission (-1001 to its POST script) with
    # DAGMan's message; the same list again submits
    for name, files in (("a", "shared.tar.gz"), ("b", "shared.tar.gz"), ("c", "other.tar.gz")):
        (tmp_path / f"{name}.sub").write_text(f'universe = local\nexecutable = /bin/true\n'
                                               f'MY.CommonInputFiles = "{files}"\nqueue\n')
    post = executable(tmp_path / "post.sh", f'#!/bin/sh\necho "$1 $2" >> {tmp_path}/post.out\nexit 1\n')
    (tmp_path / "wf.dag").write_text("JOBSTATE_LOG jobstate.log\n"
                                     "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A CHILD B\n"
                                     f"PARENT B CHILD C\nSCRIPT POST C {post} $JOB $RETURN\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "post.out").read_text() == "C -1001\n"
    assert [k for k, _ in jobstate(tmp_path, "C")] == ["SUBMIT_FAILURE", "POST_SCRIPT_STARTED",
                                                         "POST_SCRIPT_TERMINATED", "POST_SCRIPT_FAILURE"]
    out = (tmp_path / "wf.dag.dagman.out").read_text()
    assert "Node C (-1.-1.-1) " in out
    assert out.count("Multiple differing common input transfer lists declared in DAG") == 1
    rescue = (tmp_path / "wf.dag.rescue001").read_text()
    assert "DONE A" in rescue and "DONE B" in rescue and "DONE C" not in rescue


@pytest.mark.parametrize(("dag", "env", "fails"), [
    ("JOB B two.sub\n", {"_CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS": "true"}, True),   # inherited by sheaf run
    ("ENV SET _CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS=true\nJOB B two.sub\n", {}, True),  # DAGMan's own, by ENV
    ("CONFIG wf.config\nJOB B two.sub\n", {"_CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS": "true"}, False),
])
def test_dagman_knobs_in_condor_environment_variables_under_the_config_file(
        tmp_path: Path, dag: str, env: dict[str, str], fails: bool) -> None:
    """HTCondor's precedence: ``_CONDOR_<knob>`` variables (DAGMan's environment: inherited, or ENV SET)
    over the system configuration, the CONFIG file over them; a DAGMan knob sheaf lacks is named."""
    (tmp_path / "two.sub").write_text("universe = local\nexecutable = /bin/true\nqueue 2\n")
    (tmp_path / "wf.config").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = False\n")
    (tmp_path / "wf.dag").write_text(dag)
    done = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120, env={**os.environ, **env, "_CONDOR_DAGMAN_NO_SUCH_KNOB": "1"})
    assert done.returncode == (1 if fails else 0), done.stdout + done.stderr
    assert ("disallowed by DAGMAN_PROHIBIT_MULTI_JOBS" in done.stdout) == fails
    assert ("_CONDOR_DAGMAN_NO_SUCH_KNOB: configuration knob DAGMAN_NO_SUCH_KNOB is not honoured"
            in done.stderr)


@pytest.mark.parametrize(("dag", "env", "fails"), [
    ("JOB B two.sub\n", {}, True),  # the pool configuration is the run's HTCondor configuration
    ("JOB B two.sub\n", {"_CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS": "false"}, False),  # a _CONDOR_ variable wins
    ("CONFIG wf.config\nJOB B two.sub\n", {}, False),  # so does the CONFIG file
])
def test_dagman_knobs_of_the_pool_configuration_under_the_variables_and_the_config_file(
        tmp_path: Path, dag: str, env: dict[str, str], fails: bool) -> None:
    """DAGMan knobs in the file --pool-config names are the system configuration's: honoured beneath
    the _CONDOR_ variables and the CONFIG file, and one sheaf lacks is named, never ignored in silence."""
    (tmp_path / "two.sub").write_text("universe = local\nexecutable = /bin/true\nqueue 2\n")
    (tmp_path / "wf.config").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = False\n")
    (tmp_path / "pool.conf").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = True\nDAGMAN_NO_SUCH_KNOB = 1\n")
    (tmp_path / "wf.dag").write_text(dag)
    done = subprocess.run([SHEAF, "run", str(tmp_path), "--pool-config", str(tmp_path / "pool.conf")],
                          capture_output=True, text=True, check=False, timeout=120, env={**os.environ, **env})
    assert done.returncode == (1 if fails else 0), done.stdout + done.stderr
    assert ("disallowed by DAGMAN_PROHIBIT_MULTI_JOBS" in done.stdout) == fails
    assert "the pool configuration: configuration knob DAGMAN_NO_SUCH_KNOB is not honoured" in done.stderr


def test_dagman_default_node_log_names_the_node_jobs_event_log(tmp_path: Path) -> None:
    """DAGMAN_DEFAULT_NODE_LOG with its @() variables; the default @(DAG_DIR)/@(DAG_FILE).nodes.log."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "a.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.config").write_text(
        "DAGMAN_DEFAULT_NODE_LOG = @(DAG_DIR)/logs/@(DAG_FILE).@(NODE_NAME).log\n")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A a.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0 and "DAGMAN_DEFAULT_NODE_LOG" not in done.stderr, done.stderr
    assert not (tmp_path / "wf.dag.nodes.log").exists()
    text = (tmp_path / "logs" / "wf.dag.undef.log").read_text()
    assert text.startswith("000 (") and "005 (" in text  # submitted and terminated, in the event log format
    # a $() configuration macro or an unknown @() variable: said so, and the default log
    for pattern in ("$(LOCAL_DIR)/log/@(DAG_FILE).log", "@(DAG_DIR)/@(NOPE).log"):
        for stale in tmp_path.glob("wf.dag.*"):
            stale.unlink()
        shutil.rmtree(tmp_path / ".sheaf")  # the journal of the run before: a fresh run
        (tmp_path / "wf.config").write_text(f"DAGMAN_DEFAULT_NODE_LOG = {pattern}\n")
        done = sheaf_run(tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"DAGMAN_DEFAULT_NODE_LOG = {pattern}: a $() macro" in done.stderr
        assert (tmp_path / "wf.dag.nodes.log").is_file()


def status_ads(path: Path) -> dict[str, dict[str, str]]:
    """The node status file's ads by node name ("DAG" for the DagStatus ad): attribute -> raw value."""
    ads: dict[str, dict[str, str]] = {}
    for block in path.read_text().split("[")[1:]:
        attrs = dict(re.findall(r"^\s+(\w+) = (.*?);", block, re.MULTILINE))
        name = attrs.get("Node", '"DAG"' if attrs.get("Type") == '"DagStatus"' else '""').strip('"')
        ads[name] = attrs
    return ads


def test_halt_leaves_deferred_pre_scripts_prerun_and_the_last_status_file_errors_them(tmp_path: Path) -> None:
    # A halts the DAG; B's PRE script is deferred (PRERUN), C (no PRE) goes back to not ready when
    # FINAL starts; the status file written as the run ends shows B as ERROR "Was STATUS_PRERUN",
    # counted failed, and the DAG a success since FINAL succeeded (Dag::DumpNodeStatus)
    halt = executable(tmp_path / "halt.sh", '#!/bin/sh\ntouch wf.dag.halt\nsleep 2\n')
    pre = executable(tmp_path / "pre.sh", f"#!/bin/sh\ntouch {tmp_path}/pre-ran\n")
    (tmp_path / "halt.sub").write_text(f"universe = local\nexecutable = {halt}\ninitialdir = {tmp_path}\n"
                                       "queue\n")
    (tmp_path / "ok.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text(f"NODE_STATUS_FILE wf.status\nJOB A halt.sub\nJOB B ok.sub\n"
                                     f"SCRIPT PRE B {pre}\nJOB C ok.sub\nPARENT A CHILD B C\n"
                                     "FINAL F ok.sub\n")
    done = sheaf_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "pre-ran").exists()
    ads = status_ads(tmp_path / "wf.status")
    assert ads["B"]["NodeStatus"].startswith("6") and ads["B"]["StatusDetails"] == '"Was STATUS_PRERUN"'
    assert ads["C"]["NodeStatus"].startswith("0") and ads["F"]["NodeStatus"].startswith("5")
    dag = ads["DAG"]
    assert dag["DagStatus"].startswith("5") and dag["NodesFailed"] == "1" and dag["NodesPre"] == "0"
    assert dag["NodesUnready"] == "1" and dag["NodesDone"] == "2"


NOTIFY_SUB = """\
universe = local
executable = /bin/sh
notification = Always
arguments = "-c 'echo $$([JobNotification]) >> {out}'"
queue
"""


@pytest.mark.parametrize(("config", "flags", "expected"), [
    ("", (), "1\n1\n"),  # the files' own notification, the SUBDAG's too
    ("DAGMAN_SUPPRESS_NOTIFICATION = True\n", (), "0\n0\n"),  # NEVER, passed down to the SUBDAG
    ("DAGMAN_SUPPRESS_NOTIFICATION = True\n", ("--dont-suppress-notification",), "1\n1\n"),
    ("", ("--suppress-notification",), "0\n0\n"),
])
def test_suppress_notification_sets_never_for_every_node_job(tmp_path: Path, config: str,
                                                             flags: tuple[str, ...], expected: str) -> None:
    (tmp_path / "n.sub").write_text(NOTIFY_SUB.format(out=tmp_path / "seen"))
    (tmp_path / "wf.config").write_text(config)
    (tmp_path / "inner.dag").write_text("JOB B n.sub\n")
    (tmp_path / "wf.dag").write_text("CONFIG wf.config\nJOB A n.sub\nSUBDAG EXTERNAL S inner.dag\n"
                                     "PARENT A CHILD S\n")
    done = sheaf_run(tmp_path, "--dag", str(tmp_path / "wf.dag"), *flags)
    assert done.returncode == 0, done.stderr
    assert "DAGMAN_SUPPRESS_NOTIFICATION" not in done.stderr  # honoured, not warned about
    assert (tmp_path / "seen").read_text() == expected
