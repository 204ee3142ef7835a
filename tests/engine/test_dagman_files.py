"""The files a run writes, checked against DAGMan: the node job event log and the node status file
against HTCondor's own readers (``htcondor2.JobEventLog``, ``classad2.parseAds``), jobstate.log, the
rescue DAG and the metrics file against the shapes in the DAGMan manual and sources."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from engine_helpers import FakeBackend, executable, write_dag
from sheaf.condor._dagman import parse_dag, parse_rescue
from sheaf.engine import DagmanOptions, Exited, Held, Launch, Started, run_workflow
from sheaf.engine._journal import read_records
from sheaf.engine._loop import state_paths
from sheaf.engine._records import ProcessRecord

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
htcondor2 = pytest.importorskip("htcondor2")  # imported before classad2, as the binding wants
classad2 = pytest.importorskip("classad2")

MIXED = """\
JOB A A.sub
JOB B B.sub
JOB C C.sub NOOP
JOB D D.sub
JOB E E.sub
SCRIPT PRE E pre.sh
PRE_SKIP E 3
JOB G G.sub
JOB H H.sub
PARENT A CHILD B
PARENT B CHILD G
PARENT G CHILD H
RETRY B 1
NODE_STATUS_FILE wf.status
"""


def run(directory: Path, backend: FakeBackend, **kw: object) -> object:
    return run_workflow(str(directory), backend=backend, handle_signals=False, **kw)  # type: ignore[arg-type]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    executable(tmp_path / "pre.sh", "#!/bin/sh\nexit 3\n")
    write_dag(tmp_path, MIXED)
    fake = FakeBackend()
    fake.script("B", [1, -9])  # fails, then is killed by signal 9
    fake.held.add("D")  # can never run
    run(tmp_path, fake)
    return tmp_path


def test_nodes_log_reads_back_with_htcondor(mixed: Path) -> None:
    events = list(htcondor2.JobEventLog(str(mixed / "wf.dag.nodes.log")).events(0))
    kinds = [(int(e.type), e.cluster, e.proc) for e in events]
    T = htcondor2.JobEventType
    assert (int(T.SUBMIT), 0, 2147483647) in kinds and (int(T.JOB_TERMINATED), 0, 2147483647) in kinds  # NOOP
    assert any(int(e.type) == int(T.PRESKIP) for e in events)
    held = [e for e in events if int(e.type) == int(T.JOB_HELD)]
    assert len(held) == 1 and held[0]["HoldReason"] == "no slot could ever match"
    assert any(int(e.type) == int(T.JOB_ABORTED) and e.cluster == held[0].cluster for e in events)
    ended = {e.cluster: e for e in events if int(e.type) == int(T.JOB_TERMINATED) and e.cluster > 0}
    values = {(e.get("ReturnValue"), e.get("TerminatedBySignal")) for e in ended.values()}
    assert values == {(0, None), (1, None), (None, 9)}
    notes = [e["LogNotes"] for e in events if int(e.type) == int(T.SUBMIT)]
    assert "DAG Node: B" in notes and notes.count("DAG Node: B") == 2  # one per attempt


def test_node_status_file_is_dagmans_classad_layout(mixed: Path) -> None:
    ads = list(classad2.parseAds((mixed / "wf.status").read_text()))
    assert [ad["Type"] for ad in ads] == ["DagStatus"] + ["NodeStatus"] * 7 + ["StatusEnd"]
    dag = ads[0]
    assert dag["DagStatus"] == 6 and dag["NodesTotal"] == 7 and dag["NodesDone"] == 3
    assert dag["NodesFailed"] == 2 and dag["NodesFutile"] == 2 and list(dag["DagFiles"]) == ["wf.dag"]
    status = {ad["Node"]: (ad["NodeStatus"], ad["StatusDetails"], ad["RetryCount"]) for ad in ads[1:-1]}
    assert status["B"][0::2] == (6, 1)  # STATUS_ERROR after its retry, in DAGMan's words
    assert re.fullmatch(r"Job proc \(\d+\.0\.0\) failed with signal 9 \(after 1 node retries\)",
                        status["B"][1])
    assert status["G"] == (7, "Had an ancestor node fail", 0) and status["H"][0] == 7  # STATUS_FUTILE
    assert status["A"][0] == status["C"][0] == status["E"][0] == 5
    assert ads[-1]["NextUpdate"] == 0  # the run is over


def test_node_status_details_of_failed_nodes_are_dagmans_words(tmp_path: Path) -> None:
    """A failed node's StatusDetails is DAGMan's error text (Dag::ProcessTerminatedEvent,
    ProcessPostTermEvent, PreScriptReaper): the job proc with its id, the PRE script's status, the
    job and the POST script together, and the retries done when the node had RETRY."""
    executable(tmp_path / "pre.sh", "#!/bin/sh\nexit 4\n")
    executable(tmp_path / "post.sh", '#!/bin/sh\nexit "$1"\n')
    write_dag(tmp_path, "JOB J J.sub\nRETRY J 1\nJOB S S.sub\nJOB P P.sub\nSCRIPT PRE P pre.sh\n"
                        "JOB Q Q.sub\nSCRIPT POST Q post.sh 3\nJOB R R.sub\nSCRIPT POST R post.sh 2\n"
                        "NODE_STATUS_FILE wf.status\n")
    fake = FakeBackend()
    fake.script("J", [3, 3])
    fake.script("S", [-9])
    fake.script("Q", [3])
    run(tmp_path, fake)
    ads = {ad["Node"]: ad for ad in classad2.parseAds((tmp_path / "wf.status").read_text())
           if ad["Type"] == "NodeStatus"}
    details = {n: ad["StatusDetails"] for n, ad in ads.items()}
    assert re.fullmatch(r"Job proc \(\d+\.0\.0\) failed with status 3 \(after 1 node retries\)", details["J"])
    assert re.fullmatch(r"Job proc \(\d+\.0\.0\) failed with signal 9", details["S"])
    assert details["P"] == "PRE Script failed with status 4"
    assert details["Q"] == "Job exited with status 3 and POST Script failed with status 3"
    assert details["R"] == "Job failed due to DAGMAN error 0 and POST Script failed with status 2"


def test_node_status_file_always_update_and_running_counts(tmp_path: Path) -> None:
    write_dag(tmp_path, "JOB A A.sub\nJOB B B.sub\nPARENT A CHILD B\nNODE_STATUS_FILE st 0 ALWAYS-UPDATE\n")
    seen: list[str] = []
    fake = FakeBackend()
    fake.hook = lambda launch: seen.append((tmp_path / "st").read_text())
    run(tmp_path, fake)
    first = list(classad2.parseAds(seen[0]))
    assert first[0]["NodesQueued"] == 1 and first[0]["NodesUnready"] == 1 and first[0]["DagStatus"] == 3
    assert parse_dag(str(tmp_path / "wf.dag")).node_status_always


def test_jobstate_log_as_dagman_writes_it(tmp_path: Path) -> None:
    """The scenario of DAGMan's job_dagman_jobstate_log test: sequence numbers are DAG-wide, one per
    node attempt; a retried node gets a new one; a submit failure is SUBMIT_FAILURE and its POST
    script's lines carry no HTCondor id; PRE scripts write no 'terminated' line."""
    executable(tmp_path / "ok.sh", "#!/bin/sh\nexit 0\n")
    write_dag(tmp_path, "JOB A A.sub\nSCRIPT PRE A ok.sh\nJOB D D.sub\nRETRY D 1\nJOB E E.sub\n"
                        "SCRIPT POST E ok.sh\nPARENT A CHILD D\nPARENT D CHILD E\n")
    (tmp_path / "E.sub").unlink()
    fake = FakeBackend()
    fake.script("D", [1, 0])
    assert run(tmp_path, fake).succeeded  # type: ignore[attr-defined]
    lines = [ln.split() for ln in (tmp_path / "jobstate.log").read_text().splitlines()[1:-1]]
    got = [(w[1], w[2], w[3] if w[2] in ("JOB_SUCCESS", "JOB_FAILURE") or w[3] == "-" else "id", w[6])
           for w in lines]
    assert got == [
        ("A", "PRE_SCRIPT_STARTED", "-", "1"), ("A", "PRE_SCRIPT_SUCCESS", "-", "1"),
        ("A", "SUBMIT", "id", "1"), ("A", "EXECUTE", "id", "1"), ("A", "JOB_TERMINATED", "id", "1"),
        ("A", "JOB_SUCCESS", "0", "1"),
        ("D", "SUBMIT", "id", "2"), ("D", "EXECUTE", "id", "2"), ("D", "JOB_TERMINATED", "id", "2"),
        ("D", "JOB_FAILURE", "1", "2"),
        ("D", "SUBMIT", "id", "3"), ("D", "EXECUTE", "id", "3"), ("D", "JOB_TERMINATED", "id", "3"),
        ("D", "JOB_SUCCESS", "0", "3"),
        ("E", "SUBMIT_FAILURE", "-", "4"), ("E", "POST_SCRIPT_STARTED", "-", "4"),
        ("E", "POST_SCRIPT_TERMINATED", "-", "4"), ("E", "POST_SCRIPT_SUCCESS", "-", "4")]
    times = [int(w[0]) for w in lines]
    assert times == sorted(times)  # never back in time


def test_jobstate_job_tags_of_nodes_sharing_a_description(tmp_path: Path) -> None:
    """The job tag (``Node::GetJobstateJobTag``): the attribute ``+job_tag_name`` names, else
    ``+pegasus_site``, a node's VARS winning over the description they share; ``-`` without one."""
    shared = (tmp_path / "shared.sub")
    shared.write_text("executable = /bin/true\n+job_tag_name = \"+my_tag\"\n+My_Tag = \"A\"\n"
                      "+pegasus_site = \"site\"\nqueue\n")
    (tmp_path / "bare.sub").write_text("executable = /bin/true\nqueue\n")
    write_dag(tmp_path, "JOB P shared.sub\nJOB Q shared.sub\nVARS Q +my_tag=\"\\\"B\\\"\"\n"
                        "JOB R shared.sub\nVARS R +job_tag_name=\"pegasus_site\" +DAGNodeRetry=\"$(RETRY)\"\n"
                        "JOB S bare.sub\nJOB T bare.sub\nVARS T +pegasus_site=\"\\\"t\\\"\"\n")
    assert run(tmp_path, FakeBackend()).succeeded  # type: ignore[attr-defined]
    tags = {w[1]: w[4] for w in (ln.split() for ln in (tmp_path / "jobstate.log").read_text().splitlines())
            if w[2] == "SUBMIT"}
    assert tags == {"P": "A", "Q": "B", "R": "site", "S": "-", "T": "t"}


def test_jobstate_preskip_and_noop_lines(mixed: Path) -> None:
    lines = [ln.split() for ln in (mixed / "jobstate.log").read_text().splitlines()]
    e = [w[2:4] for w in lines if w[1] == "E"]
    assert e == [["PRE_SCRIPT_STARTED", "-"], ["PRE_SCRIPT_FAILURE", "-"], ["PRESKIP", "0.2147483647"]]
    c = [w[2:4] for w in lines if w[1] == "C"]
    assert c == [["SUBMIT", "0.2147483647"], ["JOB_TERMINATED", "0.2147483647"], ["JOB_SUCCESS", "0"]]
    assert [w[2] for w in lines if w[1] == "D"] == ["SUBMIT", "JOB_HELD", "JOB_ABORTED", "JOB_FAILURE"]


def test_rescue_dag_header_and_retries_read_back_unchanged(tmp_path: Path) -> None:
    body = ("JOB A A.sub\nJOB B B.sub\nRETRY A 3 UNLESS-EXIT 42\nRETRY B 2\nPARENT A CHILD B\n"
            "CONFIG wf.config\n")
    (tmp_path / "wf.config").write_text("DAGMAN_RESET_RETRIES_UPON_RESCUE = False\n")
    write_dag(tmp_path, body)
    fake = FakeBackend()
    fake.script("A", [1, 0])
    fake.script("B", [1, 1, 1])
    run(tmp_path, fake)
    text = (tmp_path / "wf.dag.rescue001").read_text()
    assert text.startswith("# Rescue DAG file, created after running\n#   the wf.dag DAG file\n# Created ")
    assert "# Rescue DAG version: 2.1.0\n#\n# Total number of Nodes: 2\n# Nodes premarked DONE: 1\n" in text
    assert "# Nodes that failed: 1\n#   B,<ENDLIST>\n" in text
    body_lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert body_lines == ["DONE A", "RETRY A 2 UNLESS-EXIT 42", "RETRY B 0"]
    assert "# 1 of 3 retries already performed; 2 remaining" in text
    rescue = parse_rescue(str(tmp_path / "wf.dag.rescue001"), parse_dag(str(tmp_path / "wf.dag")))
    assert rescue.retries == {"A": 2, "B": 0}


def test_a_failed_final_node_rewrites_the_rescue_dag_listing_it(tmp_path: Path) -> None:
    """``Dag::Rescue`` keeps one rescue DAG per execution: written as the DAG fails, then overwritten
    once the FINAL node failed too, which it then counts and lists (never as DONE); DAGMan's header
    ends with ``<ENDLIST>`` and an empty line, the node lines follow."""
    write_dag(tmp_path, "JOB A A.sub\nJOB B B.sub\nFINAL C C.sub\nPARENT A CHILD B\n")
    fake = FakeBackend()
    fake.script("B", [1])
    fake.script("C", [1])
    run(tmp_path, fake)
    text = (tmp_path / "wf.dag.rescue001").read_text()
    assert "# Nodes premarked DONE: 1\n# Nodes that failed: 2\n#   B,C,<ENDLIST>\n\nDONE A\n" in text, text
    assert not (tmp_path / "wf.dag.rescue002").exists()


@pytest.mark.parametrize("final", ["", "FINAL F F.sub\n"])
def test_an_abort_leaves_the_jobs_it_removes_out_of_the_rescue_dags_failed_nodes(tmp_path: Path,
                                                                                 final: str) -> None:
    """DAGMan's main_shutdown_rescue writes the rescue DAG before it removes the running jobs: their
    nodes are neither DONE nor failed there.  Without a FINAL node it exits before reading their
    removal, so jobstate.log has no JOB_ABORTED line for them; with one it reads it while FINAL runs."""
    write_dag(tmp_path, f"JOB A A.sub\nJOB B B.sub\nJOB C C.sub\nWEAK PARENT B CHILD D\nJOB D D.sub\n"
                        f"ABORT-DAG-ON A 3\n{final}")
    fake = FakeBackend(per_wait=1)
    fake.script("A", [3])
    run(tmp_path, fake)
    text = (tmp_path / "wf.dag.rescue001").read_text()
    assert "# Nodes that failed: 1\n#   A,<ENDLIST>\n" in text, text
    assert "DONE B" not in text  # a removed node with only WEAK children is no failed node made DONE
    lines = (tmp_path / "jobstate.log").read_text().splitlines()
    aborted = [ln.split()[1] for ln in lines if " JOB_ABORTED " in ln]
    assert aborted == (["B", "C"] if final else [])


def test_rescue_dag_keeps_retry_limits_by_default(tmp_path: Path) -> None:
    write_dag(tmp_path, "JOB A A.sub\nRETRY A 2\n")
    fake = FakeBackend()
    fake.script("A", [1, 1, 1])
    run(tmp_path, fake)
    text = (tmp_path / "wf.dag.rescue001").read_text()
    assert "RETRY" not in text.replace("# Rescue", "")  # DAGMan reads RETRY A 0 as a new limit


def test_metrics_file_has_dagmans_keys(mixed: Path) -> None:
    metrics = json.loads((mixed / "wf.dag.metrics").read_text())
    assert list(metrics)[:4] == ["client", "version", "type", "metrics_version"]
    assert list(metrics)[-1] == "DagStatus" and metrics["DagStatus"] == 2 and metrics["exitcode"] == 1
    assert (metrics["nodes"], metrics["nodes_failed"], metrics["nodes_succeeded"]) == (7, 2, 3)
    assert metrics["total_nodes_run"] == 5 and metrics["rescue_dag_number"] == 0
    assert metrics["jobs_submitted"] == 5 and metrics["jobs_succeeded"] == 2  # A, C (NOOP); B twice, D
    assert metrics["has_final_node"] is False and metrics["dagman_id"].isdigit()


def test_metrics_version_1_and_graph_metrics(tmp_path: Path) -> None:
    (tmp_path / "wf.config").write_text("DAGMAN_METRICS_FILE_VERSION = 1\n"
                                        "DAGMAN_REPORT_GRAPH_METRICS = True\n")
    write_dag(tmp_path, "CONFIG wf.config\nJOB A A.sub\nJOB B B.sub\nJOB C C.sub\nPARENT A CHILD B C\n")
    run(tmp_path, FakeBackend())
    metrics = json.loads((tmp_path / "wf.dag.metrics").read_text())
    assert metrics["jobs"] == 3 and "nodes" not in metrics and "metrics_version" not in metrics
    assert (metrics["graph_height"], metrics["graph_width"], metrics["graph_num_edges"]) == (2, 2, 2)


def test_nodes_log_timestamps_are_local_iso(mixed: Path) -> None:
    first = (mixed / "wf.dag.nodes.log").read_text().splitlines()[0]
    assert re.fullmatch(r"000 \(001\.000\.000\) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
                        r"Job submitted from host: .*", first)


def test_set_job_attr_goes_to_the_dag_status_ad(tmp_path: Path) -> None:
    """DAGMan's own job ad has no schedd to live in: SET_JOB_ATTR's attributes are in the node status
    file's DagStatus ad (the last value named wins, quotes part of the value, as in DAGMan)."""
    write_dag(tmp_path, "JOB A A.sub\nNODE_STATUS_FILE st\nSET_JOB_ATTR TestNumber = 16\n"
                        "SET_JOB_ATTR TestNumber = 17\nSET_JOB_ATTR Label = \"two words\"\n")
    run(tmp_path, FakeBackend())
    dag_status = next(iter(classad2.parseAds((tmp_path / "st").read_text())))
    assert dag_status["TestNumber"] == 17 and dag_status["Label"] == "two words"


def test_set_job_attr_and_env_set_of_a_later_dag_file_win(tmp_path: Path) -> None:
    """Several DAG files in one run: the last SET_JOB_ATTR (and ENV SET) value named wins, across the
    files as within one, as DAGMan's manual says of SET_JOB_ATTR."""
    write_dag(tmp_path, "JOB A A.sub\nNODE_STATUS_FILE st\nSET_JOB_ATTR Which = 1\nSET_JOB_ATTR Kept = 5\n")
    (tmp_path / "b.dag").write_text("JOB A A.sub\nSET_JOB_ATTR Which = 2\n")
    run(tmp_path, FakeBackend(), options=DagmanOptions(("wf.dag", "b.dag")))
    dag_status = next(iter(classad2.parseAds((tmp_path / "st").read_text())))
    assert dag_status["Which"] == 2 and dag_status["Kept"] == 5


class _StartingBackend(FakeBackend):
    """Reports each attempt started (a batch system's job: no local pid) one ``wait`` before it ends,
    and records what jobstate.log said at that end."""

    def __init__(self, jobstate: Path) -> None:
        super().__init__()
        self.jobstate = jobstate
        self.running_now: list[Launch] = []
        self.starts: list[Started] = []
        self.seen_at_end: list[str] = []

    def wait(self, timeout: float | None) -> list[Exited | Held]:
        ending, self.running_now = self.running_now, self.queue
        self.queue = []
        self.starts += [Started(x.key, 0, 0, 1_700_000_000.0, "node7") for x in self.running_now]
        if ending:
            self.seen_at_end.append(self.jobstate.read_text())
        now = time.time()
        return [Exited(x.key, 0, None, None, now - 1.0, now, "node7") for x in ending]

    def started(self) -> list[Started]:
        out, self.starts = self.starts, []
        return out


def test_execute_is_written_when_the_backend_reports_the_start(tmp_path: Path) -> None:
    """A backend that reports starts (``Backend.started``) gets each node's EXECUTE when the job
    starts, not when it ends (a Slurm job's start record); once per attempt, with its host; a start
    with pid 0 (no process of this machine) journals no process to stop on resume."""
    write_dag(tmp_path, "JOB A A.sub\nJOB B B.sub\nPARENT A CHILD B\n")
    backend = _StartingBackend(tmp_path / "jobstate.log")
    assert run(tmp_path, backend).succeeded  # type: ignore[attr-defined]
    assert [[w[2] for w in (ln.split() for ln in text.splitlines()) if w[1] in "AB"][-2:]
            for text in backend.seen_at_end] == [["SUBMIT", "EXECUTE"]] * 2
    lines = [ln.split() for ln in (tmp_path / "jobstate.log").read_text().splitlines()]
    assert [w[2] for w in lines if w[1] == "A"] == ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS"]
    events = list(htcondor2.JobEventLog(str(tmp_path / "wf.dag.nodes.log")).events(0))
    hosts = [e.get("SlotName") for e in events if int(e.type) == int(htcondor2.JobEventType.EXECUTE)]
    assert len(hosts) == 2 and all("node7" in str(h) for h in hosts)
    journal = state_paths(str(tmp_path / "wf.dag"))["journal"]
    assert not [r for r in read_records(journal) if isinstance(r, ProcessRecord)]


@pytest.mark.parametrize(("name", "multi", "number"), [
    ("/r/a.dag.rescue003", False, 3),
    ("/r/a.dag.rescue012.old", False, 12),  # the digits after the base, as atoi reads them
    ("/r/a.dag_multi.rescue002", True, 2),
    ("/r/a.dag_multi.rescue002", False, 0),  # one DAG file: its rescue DAGs have no _multi
    ("/r/a.dag.rescue002", True, 0),
    ("/r/b.dag.rescue004", False, 0),  # another DAG's rescue DAG
    ("/r/my_rescue.dag", False, 0),
    ("/r/a.dag.rescue", False, 0),
])
def test_rescue_dag_number_is_read_after_the_primary_dags_rescue_base(name: str, multi: bool,
                                                                       number: int) -> None:
    from sheaf.engine import rescue_dag_number

    assert rescue_dag_number(name, "/r/a.dag", multi) == number
