"""Random workflows through the real planner and write_plan: plan.json keeps its contract, the engine
parses the DAG, every submit description parses with htcondor2, every cluster input parses, and a
task's arguments (spaces, quotes, dollars) come back unchanged from the submit description."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2
import pytest
from codegen_plans import blackdiamond_plan, node_description, write_planned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_write_plan import check_contract

from sheaf.engine import parse_dag, split_arguments
from sheaf.errors import PlanningError
from sheaf.formats._pmcdag import parse_pmc_dag
from sheaf.formats._seqexec_in import parse_seqexec_input
from sheaf.model import (
    Job,
    Properties,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
    build_graph,
)
from sheaf.planner import Task, plan


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    n = draw(st.integers(1, 18))
    wf = Workflow("random")
    for i in range(n):
        label = draw(st.sampled_from([None, "a", "b"]))
        profiles = {"pegasus": {"label": label}} if label else {}
        wf.jobs[f"ID{i:07d}"] = Job(f"ID{i:07d}", f"t{draw(st.integers(0, 2))}", "ns", "1.0",
                                    arguments=("-n", str(i)), profiles=profiles)
    for child in range(1, n):
        for parent in draw(st.sets(st.integers(0, child - 1), max_size=3)):
            wf.add_dependency(f"ID{parent:07d}", f"ID{child:07d}")
    return wf


TC = TransformationCatalog({("ns", f"t{i}", "1.0"): Transformation(
    f"t{i}", "ns", "1.0", (TransformationSite("local", "/bin/true"),)) for i in range(3)})
SC = SiteCatalog({"local": Site("local")})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows(), st.sampled_from([(), ("horizontal",), ("label",), ("label", "horizontal"), ("whole",)]),
       st.sampled_from(["seqexec", "mpiexec"]), st.integers(1, 4))
def test_random_plans_write_valid_files(wf: Workflow, clustering: tuple[str, ...], aggregator: str,
                                        size: int) -> None:
    props = Properties({"pegasus.clusters.size": str(size), "pegasus.clusterer.job.aggregator": aggregator,
                        "dagman.retry": "1"})
    try:
        exec_wf = plan(wf, tc=TC, sc=SC, rc=None, properties=props, sites=["local"], clustering=clustering)
    except PlanningError:
        return  # e.g. a labelling whose clusters would form a cycle: the planner's to report
    root = tempfile.mkdtemp()
    try:
        files = write_planned(exec_wf, Path(root) / "p")
        graph = build_graph(wf)
        check_contract(files.plan_json, wf.jobs, [(graph.ids[p], graph.ids[c]) for p, c in graph.edges()])
        dag = parse_dag(files.dag)
        used = {os.path.relpath(node.submit, files.directory) for node in dag.nodes.values()
                if node.description is None}  # a job's own file, or a SUBMIT-DESCRIPTION shared by many
        assert used == set(files.submit_files)
        for name in dag.nodes:
            assert node_description(dag, name).expand("arguments") is not None  # type: ignore[attr-defined]
        for rel in files.submit_files:
            path = Path(files.directory, rel)
            sub = htcondor2.Submit(path.read_text())
            assert sub["executable"].startswith("/")
            assert sub["log"] == os.path.join(files.directory, "random.log")
            for extra, parse in ((".in", parse_seqexec_input), (".dag", parse_pmc_dag)):
                side = path.with_suffix(extra)
                if side.exists() and "merge_" in side.name:
                    assert parse(side.read_text(), str(side))
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("shared", ["true", "false"])
def test_arguments_with_spaces_and_quotes_survive_the_submit_description(tmp_path: Path, shared: str) -> None:
    plan_ = blackdiamond_plan(2, cluster=None, properties={"sheaf.submit.shared": shared})
    argv = ("-m", "two words", "it's", 'say "hi"', "", "$HOME", "$(x)", "tab\there", "back\\", '\\"')
    task = plan_.jobs[0].tasks[0]
    plan_.jobs[0].tasks = (Task(task.id, task.transformation, task.executable, argv, task.profiles, 1),)
    files = write_planned(plan_, tmp_path / "p")
    sub = node_description(parse_dag(files.dag), "preprocess_ID0000001")
    assert split_arguments(sub.expand("arguments")) == list(argv)  # type: ignore[attr-defined]
