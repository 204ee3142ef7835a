"""write_plan on the blackdiamond plan: every file parsed by the real readers (htcondor2.Submit, the
engine's DAG parser, the seqexec/PMC parsers, msgspec), plan.json's contract, atomicity, layout."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections import deque
from pathlib import Path

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2
import msgspec
import pytest
from codegen_plans import PER_JOB, blackdiamond_plan, node_description, write_planned
from hypothesis import given
from hypothesis import strategies as st

import sheaf.codegen
from sheaf.codegen import PlanContext, PlanFiles, reserved_run_dir, write_plan
from sheaf.codegen._write import _check_ids
from sheaf.engine import parse_dag, parse_submit
from sheaf.errors import PlanningError
from sheaf.formats._pmcdag import parse_pmc_dag
from sheaf.formats._seqexec_in import parse_seqexec_input
from sheaf.model import build_graph
from sheaf.planner import ExecJob, plan_data


def test_public_api() -> None:
    assert sorted(sheaf.codegen.__all__) == [
        "CONF_DIR", "GROUP_PROPERTY", "PlanContext", "PlanFiles", "RUN_ROOT_LOCK", "check_target",
        "group_dag", "group_of", "named_submit_dir", "next_run_number", "podman_env", "quote_arguments",
        "quote_environment", "read_groups", "remove_stale_siblings", "reserved_run_dir", "run_root",
        "runs_parent", "timestamp_name", "tool_path", "user_name", "write_groups", "write_plan",
    ]


@pytest.fixture
def written(tmp_path: Path) -> PlanFiles:
    return write_planned(blackdiamond_plan(properties=PER_JOB), tmp_path / "plan")


def _submits(files: PlanFiles) -> dict[str, htcondor2.Submit]:
    out = {}
    for rel in files.submit_files:
        text = Path(files.directory, rel).read_text()
        out[Path(rel).stem] = htcondor2.Submit(text)
    return out


def test_every_submit_description_parses_with_the_official_bindings(written: PlanFiles) -> None:
    subs = _submits(written)
    assert set(subs) == {"create_dir_blackdiamond_0_condorpool", "preprocess_ID0000001",
                         "merge_diamond-findrange-4_0_PID2_ID1", "analyze_ID0000006"}
    scratch = os.path.join(written.directory, "scratch", "condorpool")
    for name, sub in subs.items():
        for key in ("universe", "executable", "output", "error", "log", "initialdir", "MY.pegasus_site",
                    "MY.pegasus_wf_name", "MY.pegasus_job_class"):
            assert key in sub, (name, key)
        assert sub["MY.pegasus_site"] == '"condorpool"'
        assert sub["MY.pegasus_wf_name"] == '"blackdiamond"'
        assert sub["output"] == os.path.join(written.directory, "jobs", "000", name + ".out")
        assert sub["log"] == os.path.join(written.directory, "blackdiamond.log")
    pre = subs["preprocess_ID0000001"]
    assert pre["universe"] == "vanilla" and pre["executable"] == "/opt/keg/bin/keg"
    assert pre["arguments"] == '"-a preprocess -T 0 -i f.a -o f.b0 f.b1 f.b2 f.b3"'
    assert pre["request_memory"] == "512" and pre["initialdir"] == scratch
    assert pre["environment"] == "\"KEG_MODE='fast run'\""
    assert pre["MY.pegasus_job_class"] == "1" and pre["MY.pegasus_wf_dax_job_id"] == '"ID0000001"'
    analyze = subs["analyze_ID0000006"]
    assert analyze["request_memory"] == ("ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, "
                                         "1024, 4096)")  # the condor profile, verbatim
    merge = subs["merge_diamond-findrange-4_0_PID2_ID1"]
    assert merge["executable"].endswith(("/sheaf-cluster", "/sheaf-cluster-c"))  # the compiled one if built
    assert os.path.isabs(merge["executable"])
    assert merge["arguments"] == (f'"-f {written.directory}/jobs/000/'
                                  'merge_diamond-findrange-4_0_PID2_ID1.in"')
    assert merge["MY.pegasus_cluster_size"] == "4"
    mkdir = subs["create_dir_blackdiamond_0_condorpool"]
    assert mkdir["universe"] == "local" and mkdir["executable"] == "/bin/mkdir"
    assert mkdir["MY.pegasus_job_class"] == "6"


def test_the_dag_as_the_engine_reads_it(written: PlanFiles) -> None:
    dag = parse_dag(written.dag)
    names = set(dag.nodes)
    for parent, kids in dag.children.items():
        assert parent in names and set(kids) <= names
    assert dag.children["preprocess_ID0000001"] == ["merge_diamond-findrange-4_0_PID2_ID1"]
    assert dag.children["create_dir_blackdiamond_0_condorpool"] == ["preprocess_ID0000001"]
    for node in dag.nodes.values():
        assert node.retries == 2
        assert node.vars == {"+DAGNodeRetry": "$(RETRY)"}
        assert os.path.isfile(node.submit)
        parse_submit(node.submit)  # the engine reads every description too
    analyze = dag.nodes["analyze_ID0000006"]
    assert analyze.category == "analysis"
    assert analyze.post is not None and analyze.post.argv[1:5] == ("-r", "$RETURN", "-s", "all+done")
    assert analyze.post.argv[0].endswith("sheaf-exitcode")
    assert analyze.post.argv[-1].endswith("jobs/000/analyze_ID0000006.out")
    assert dag.config_path == written.config


def test_seqexec_input_round_trips(written: PlanFiles) -> None:
    path = Path(written.directory, "jobs", "000", "merge_diamond-findrange-4_0_PID2_ID1.in")
    tasks = parse_seqexec_input(path.read_text(), str(path))
    assert [t.job_id for t in tasks] == ["ID0000002", "ID0000003", "ID0000004", "ID0000005"]
    assert [t.number for t in tasks] == [1, 2, 3, 4]
    assert {t.transformation for t in tasks} == {"diamond::findrange:4.0"}
    assert tasks[0].argv == ("/opt/keg/bin/keg", "-a", "findrange", "-T", "0", "-i", "f.b0", "-o", "f.c0")


def _reachable(graph: dict[str, list[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, deque([start])
    while todo:
        node = todo.popleft()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def check_contract(plan_json: str, workflow_jobs: dict[str, object],
                   abstract_edges: list[tuple[str, str]]) -> dict:
    """The invariants of plan.json (the plan.json contract)."""
    doc = msgspec.json.decode(Path(plan_json).read_bytes())
    assert doc["format"] == "sheaf-plan/1"
    kinds = {"compute", "cluster", "stage_in", "stage_out", "inter_site", "create_dir", "cleanup",
             "register", "subworkflow"}
    owner: dict[str, str] = {}
    ids = [job["id"] for job in doc["jobs"]]
    assert len(ids) == len(set(ids))
    for job in doc["jobs"]:
        assert set(job) >= {"id", "type", "site", "transformation", "level", "tasks", "aggregator",
                            "profiles"}
        assert job["type"] in kinds
        assert {"pegasus", "condor", "dagman", "env"} <= set(job["profiles"])
        assert (job["aggregator"] in ("seqexec", "mpiexec", "decaf")) == (job["type"] == "cluster")
        if job["type"] not in ("compute", "cluster", "subworkflow"):
            assert job["tasks"] == [] and job["transformation"] is None
        for task in job["tasks"]:
            assert task not in owner, f"{task} runs twice"
            owner[task] = job["id"]
    assert set(owner) == set(workflow_jobs)
    children: dict[str, list[str]] = {}
    for parent, child in doc["edges"]:
        assert parent in ids and child in ids
        children.setdefault(parent, []).append(child)
    indegree = dict.fromkeys(ids, 0)
    for kids in children.values():
        for kid in kids:
            indegree[kid] += 1
    ready = [i for i, d in indegree.items() if d == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for kid in children.get(node, ()):
            indegree[kid] -= 1
            if indegree[kid] == 0:
                ready.append(kid)
    assert done == len(ids), "the job graph has a cycle"
    for a, b in abstract_edges:
        if owner[a] != owner[b]:
            assert _reachable(children, owner[a], owner[b]), (a, b)
    return doc


def _abstract_edges(plan) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    graph = build_graph(plan.workflow)
    return [(graph.ids[p], graph.ids[c]) for p, c in graph.edges()]


@pytest.mark.parametrize("cluster", ["seqexec", "mpiexec", None])
def test_plan_json_contract(tmp_path: Path, cluster: str | None) -> None:
    plan = blackdiamond_plan(6, cluster=cluster)
    files = write_planned(plan, tmp_path / "p")
    doc = check_contract(files.plan_json, plan.workflow.jobs, _abstract_edges(plan))
    assert doc["workflow"] == "blackdiamond"
    first = next(job for job in doc["jobs"] if job["id"] == "preprocess_ID0000001")
    assert first == {"id": "preprocess_ID0000001", "type": "compute", "site": "condorpool",
                     "transformation": "diamond::preprocess:4.0", "level": 1, "tasks": ["ID0000001"],
                     "aggregator": None,
                     "profiles": {"pegasus": {"memory": "512"}, "condor": {}, "dagman": {"retry": "2"},
                                  "env": {"KEG_MODE": "fast run"}}}


def test_pmc_cluster_files(tmp_path: Path) -> None:
    plan = blackdiamond_plan(3, cluster="mpiexec")
    merge = plan.jobs[1]
    merge.profiles = {"pegasus": {"nodes": "2", "ppn": "4"}, "globus": {"maxwalltime": "30"}}
    tasks = list(merge.tasks)
    tasks[0] = type(tasks[0])(tasks[0].id, tasks[0].transformation, tasks[0].executable, tasks[0].argv,
                              {"pegasus": {"pmc_request_memory": "100.5", "pmc_request_cpus": "2",
                                           "pmc_priority": "-3",
                                           "pmc_task_arguments": "-t 3 -f 'OUT=out file.txt'"}}, 2)
    merge.tasks = tuple(tasks)
    # a dependency inside the cluster (ID0000002 -> ID0000003) must become an EDGE
    plan.workflow.add_dependency("ID0000002", "ID0000003")
    files = write_planned(plan, tmp_path / "p")
    path = Path(files.directory, "jobs", "000", f"{merge.id}.dag")
    dag = parse_pmc_dag(path.read_text(), str(path))
    first = dag.tasks["ID0000002"]
    assert (first.memory, first.cpus, first.priority) == (101, 2, -3)
    # pmc_task_arguments are TASK options, before the command (Pegasus's PMC generator), not its arguments
    assert (first.tries, first.pipe_forwards) == (3, (("OUT", "out file.txt"),))
    assert first.argv[1:] == tuple(tasks[0].argv)
    assert "-t 3 -f 'OUT=out file.txt' " in path.read_text()
    assert dag.edges == (("ID0000002", "ID0000003"),)
    assert not Path(files.directory, "jobs", "000", f"{merge.id}.sub").exists()  # a shared description
    sub = node_description(parse_dag(files.dag), merge.id)
    assert sub["request_cpus"] == "8"  # type: ignore[index]
    assert sub.expand("arguments") == f'"--max-wall-time 30 {path}"'  # type: ignore[attr-defined]
    assert sub["executable"].endswith("sheaf-mpi-cluster")  # type: ignore[index]
    # BLAHP's batch directives, which the Slurm backend turns into --nodes/--ntasks-per-node/--ntasks
    assert (sub["MY.HostNumber"], sub["MY.SMPGranularity"], sub["MY.NodeNumber"]) == ("2", "4", "8")  # type: ignore[index]
    assert sub["MY.sheaf_launcher"] == '"mpiexec"'  # type: ignore[index]


def test_pmc_task_arguments_that_are_not_task_options_are_refused(tmp_path: Path) -> None:
    plan = blackdiamond_plan(3, cluster="mpiexec")
    merge = plan.jobs[1]
    tasks = list(merge.tasks)
    tasks[0] = type(tasks[0])(tasks[0].id, tasks[0].transformation, tasks[0].executable, tasks[0].argv,
                              {"pegasus": {"pmc_task_arguments": "--extra 'x y'"}}, 2)
    merge.tasks = tuple(tasks)
    with pytest.raises(PlanningError, match="pmc_task_arguments are not PMC task options") as caught:
        write_planned(plan, tmp_path / "p")
    assert caught.value.value == "--extra x y"
    assert not (tmp_path / "p").exists()


def _description(directory: str, node: str) -> str:
    """The submit description of DAG node ``node``: its file, or its DAG's SUBMIT-DESCRIPTION block."""
    dag = Path(directory, "blackdiamond.dag").read_text()
    found = re.search(rf"^JOB {re.escape(node)} (\S+)", dag, re.MULTILINE)
    assert found is not None
    path = Path(directory, found.group(1))
    if path.exists():
        return path.read_text()
    block = re.search(rf"^SUBMIT-DESCRIPTION {re.escape(found.group(1))} {{\n(.*?)^}}", dag,
                      re.MULTILINE | re.DOTALL)
    assert block is not None
    return block.group(1)


def test_batch_directives_from_pegasus_and_globus_profiles(tmp_path: Path) -> None:
    """queue/project become HTCondor's batch_queue/batch_project; globus hostcount and xcount the node
    and task counts; a count that is not a whole number is left out; no launcher but for PMC."""
    plan = blackdiamond_plan()
    plan.jobs[0].profiles = {"pegasus": {"queue": "short", "project": "abc"},
                             "globus": {"hostcount": "3", "xcount": "12", "queue": "ignored"}}
    plan.jobs[1].profiles = {"globus": {"project": "g1", "host_xcount": "two"}}
    ids = [job.id for job in plan.jobs[:2]]  # the data pass puts its jobs first
    files = write_planned(plan, tmp_path / "p")
    first = htcondor2.Submit(_description(files.directory, ids[0]))
    assert (first["batch_queue"], first["batch_project"]) == ("short", "abc")
    assert (first["MY.HostNumber"], first["MY.NodeNumber"]) == ("3", "12")
    assert "MY.SMPGranularity" not in first and "MY.sheaf_launcher" not in first
    second = htcondor2.Submit(_description(files.directory, ids[1]))
    assert second["batch_project"] == "g1" and "MY.HostNumber" not in second


def test_throttles_and_categories(tmp_path: Path) -> None:
    plan = blackdiamond_plan(properties={"dagman.maxjobs": "7", "dagman.maxidle": "3", "dagman.maxpre": "2",
                                         "dagman.maxpost": "1", "dagman.analysis.maxjobs": "5"})
    plan.jobs[0].profiles = {"dagman": {"priority": "10", "pre": "/bin/true", "pre.arguments": "a b"}}
    files = write_planned(plan, tmp_path / "p")
    dag = parse_dag(files.dag)
    assert dag.config == {"DAGMAN_MAX_JOBS_SUBMITTED": "7", "DAGMAN_MAX_JOBS_IDLE": "3",
                          "DAGMAN_MAX_PRE_SCRIPTS": "2", "DAGMAN_MAX_POST_SCRIPTS": "1"}
    assert dag.maxjobs == {"analysis": 5}
    pre = dag.nodes["preprocess_ID0000001"]
    assert pre.priority == 10 and pre.pre is not None and pre.pre.argv == ("/bin/true", "a", "b")


def test_non_empty_dir_without_force_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "plan"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(PlanningError, match="not empty"):
        write_planned(blackdiamond_plan(), target)
    assert sorted(os.listdir(target)) == ["keep.txt"]
    with pytest.raises(PlanningError, match="no earlier plan"):
        write_planned(blackdiamond_plan(), target, replace=True)  # --force replaces only a plan
    assert sorted(os.listdir(target)) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["plan"]


def test_force_replaces_only_once_the_new_plan_is_complete(tmp_path: Path) -> None:
    target = tmp_path / "plan"
    write_planned(blackdiamond_plan(), target)
    (target / "old-run-output").write_text("x")
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    broken = blackdiamond_plan()
    broken.jobs.append(ExecJob("bad id with spaces", "compute", "condorpool", None, 9, ()))
    with pytest.raises(PlanningError, match="DAGMan node name"):
        write_planned(broken, target, replace=True)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    bad_value = blackdiamond_plan()
    bad_value.jobs[0].profiles = {"condor": {"requirements": "a\nqueue"}}
    with pytest.raises(PlanningError, match="one line"):
        write_planned(bad_value, target, replace=True)  # fails half-way through writing
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert sorted(os.listdir(tmp_path)) == ["plan"]  # no temporary sibling left behind
    write_planned(blackdiamond_plan(2, cluster=None), target, replace=True)
    assert not (target / "old-run-output").exists()
    assert sorted(os.listdir(tmp_path)) == ["plan"]


def test_a_plan_is_written_only_where_its_data_pass_planned_it(tmp_path: Path) -> None:
    """write_plan only writes: a plan without its data jobs, or planned for another directory, or
    whose cleanup may remove what the output map copies, is refused with what to do."""
    plan = blackdiamond_plan()
    with pytest.raises(PlanningError, match="data pass has not run") as refused:
        write_plan(plan, tmp_path / "a")
    assert "plan_data(exec_wf, DIR)" in str(refused.value)
    plan_data(plan, str(tmp_path / "a"))
    with pytest.raises(PlanningError, match="another submit directory"):
        write_plan(plan, tmp_path / "b")
    with pytest.raises(PlanningError, match="output map"):
        write_plan(plan, tmp_path / "a", context=PlanContext(output_map={"f.d": "/elsewhere/f.d"}))
    assert os.listdir(tmp_path) == []
    assert Path(write_plan(plan, tmp_path / "a").plan_json).is_file()


def test_a_reserved_run_directory_goes_again_when_its_plan_fails(tmp_path: Path) -> None:
    parent = tmp_path / "user" / "runs"
    with pytest.raises(PlanningError, match="planning failed"), reserved_run_dir(parent) as directory:
        assert directory == str(parent / "run0001")
        guard, = (name for name in os.listdir(parent) if name != "run0001")  # a live planner's
        assert guard.startswith(f".run0001.sheaf-new-{os.getpid()}-")
        raise PlanningError("planning failed")
    assert os.listdir(tmp_path) == []  # the parents it made too
    with reserved_run_dir(parent) as directory:
        planned = blackdiamond_plan()
        plan_data(planned, directory)
        write_plan(planned, directory)
    assert os.listdir(parent) == ["run0001"] and (parent / "run0001" / "plan.json").is_file()


def test_the_writer_runs_with_the_collector_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sheaf.codegen import _write

    seen: list[bool] = []
    real = _write.encode_plan

    def spy(*args: object) -> bytes:
        seen.append(gc.isenabled())
        return real(*args)  # type: ignore[arg-type, no-any-return]

    monkeypatch.setattr(_write, "encode_plan", spy)
    assert gc.isenabled()
    write_planned(blackdiamond_plan(), tmp_path / "p")
    assert seen == [False] and gc.isenabled()


def test_jobs_are_spread_over_subdirectories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sheaf.codegen._layout.JOBS_PER_DIR", 3)
    files = write_planned(blackdiamond_plan(6, cluster=None, properties=PER_JOB), tmp_path / "p")
    dirs = sorted(os.listdir(tmp_path / "p" / "jobs"))
    assert dirs == ["000", "001", "002"]
    assert all(len(os.listdir(tmp_path / "p" / "jobs" / d)) <= 3 for d in dirs)
    dag = parse_dag(files.dag)
    assert all(os.path.isfile(node.submit) for node in dag.nodes.values())


_DUMP = """
import sys, os
sys.path.insert(0, {tests!r})
from codegen_plans import PER_JOB, blackdiamond_plan, write_planned
files = write_planned(blackdiamond_plan(5), {target!r}, replace=True)
for root, _, names in sorted(os.walk(files.directory)):
    for name in sorted(names):
        path = os.path.join(root, name)
        sys.stdout.write(path + "\\n" + open(path).read())
"""


def test_output_is_the_same_under_two_hash_seeds(tmp_path: Path) -> None:
    code = _DUMP.format(tests=str(Path(__file__).parent), target=str(tmp_path / "p"))
    outs = [subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1] and "blackdiamond.dag" in outs[0]


def test_a_profile_value_cannot_inject_submit_lines(tmp_path: Path) -> None:
    plan = blackdiamond_plan()
    plan.jobs[1].profiles = {"pegasus": {"memory": "100\nexecutable = /bin/evil"}}
    with pytest.raises(PlanningError, match="one line"):
        write_planned(plan, tmp_path / "p")
    assert not (tmp_path / "p").exists()


NODE_IDS = st.lists(st.one_of(st.sampled_from(["a", "B.1", "x-y_z", "parent", "Child", "ALL_NODES",
                                               "all_nodes2", "", "a b", "a\n", "\nb", "é", "PARENT\nx"]),
                              st.text(st.sampled_from("aZ09_.-\n $"), min_size=1, max_size=4)),
                    max_size=8)


@given(NODE_IDS)
def test_job_ids_are_checked_as_one_at_a_time_would(ids: list[str]) -> None:
    def one_at_a_time() -> str | None:
        seen: set[str] = set()
        for name in ids:
            reserved = name.upper() in {"ALL_NODES", "PARENT", "CHILD"}
            if re.fullmatch(r"[A-Za-z0-9_.\-]+", name) is None or reserved:
                return f"node name: {name}"
            if name in seen:
                return f"same id: {name}"
            seen.add(name)
        return None

    try:
        _check_ids(ids)
        found = None
    except PlanningError as exc:
        found = ("node name: " if "node name" in str(exc) else "same id: ") + str(exc.value)
    assert found == one_at_a_time()
