"""Sub-workflow jobs planned and run for real: a pegasusWorkflow job is a SUBDAG EXTERNAL node whose
PRE script plans the child (``sheaf plan --deferred``); a condorWorkflow job is a SUBDAG EXTERNAL node."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codegen_plans import write_planned
from hypothesis import given, settings
from hypothesis import strategies as st
from Pegasus.api import Job as PJob
from Pegasus.api import Site, SiteCatalog, Transformation, TransformationCatalog
from Pegasus.api import Workflow as PWorkflow

from sheaf.codegen._subworkflow import properties_text
from sheaf.engine import parse_dag
from sheaf.formats._properties import parse_properties
from sheaf.model import Job, Properties
from sheaf.model import Workflow as SWorkflow
from sheaf.planner import plan

BIN = Path(sys.executable).parent


def _inner(tmp: Path) -> Path:
    wf = PWorkflow("inner")
    tc = TransformationCatalog().add_transformations(
        Transformation("touch", site="local", pfn="/usr/bin/touch", is_stageable=False))
    sc = SiteCatalog().add_sites(Site("local"))
    wf.add_transformation_catalog(tc).add_site_catalog(sc)
    wf.add_jobs(PJob("touch").add_args(str(tmp / "inner-ran")))
    path = tmp / "inner.yml"
    wf.write(str(path))
    return path


def test_pegasus_and_condor_sub_workflows_run(tmp_path: Path) -> None:
    inner = _inner(tmp_path)
    sub = tmp_path / "tiny.sub"
    sub.write_text(f"universe = local\nexecutable = /usr/bin/touch\narguments = {tmp_path}/dag-ran\nqueue\n")
    tiny = tmp_path / "tiny.dag"
    tiny.write_text(f"JOB only {sub}\n")
    wf = SWorkflow("outer")
    wf.jobs["ID1"] = Job("ID1", "inner.yml", type="pegasusWorkflow", file=str(inner),
                         arguments=("--sites", "local"))
    wf.jobs["ID2"] = Job("ID2", "tiny.dag", type="condorWorkflow", file=str(tiny))
    wf.add_dependency("ID1", "ID2")
    exec_wf = plan(wf, tc=None, sc=None, rc=None, properties=Properties({"dagman.retry": "0"}))
    files = write_planned(exec_wf, tmp_path / "plan")
    dag = parse_dag(files.dag)
    subdag = next(node for node in dag.nodes.values() if node.subdag and node.name.startswith("tiny"))
    assert subdag.submit == str(tiny)
    text = Path(files.dag).read_text()
    assert f"SUBDAG EXTERNAL {subdag.name} {tiny}" in text
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(BIN / "sheaf"), "run", files.directory], capture_output=True, text=True,
                          env=env, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "inner-ran").exists() and (tmp_path / "dag-ran").exists()
    assert list(Path(files.directory, "jobs", "000").glob("*.plan/plan.json"))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=20), max_size=6))
def test_the_properties_passed_down_read_back_the_same(props: dict[str, str]) -> None:
    # keys starting with '#' or '!', values with leading blanks, separators and line breaks
    assert parse_properties(properties_text(props)) == props


def test_a_sub_workflow_runs_in_its_parents_execution_directory(tmp_path: Path) -> None:
    from Pegasus.api import Directory, FileServer, Operation

    scratch = tmp_path / "scratch"
    shared = Directory(Directory.SHARED_SCRATCH, str(scratch)).add_file_servers(
        FileServer(f"file://{scratch}", Operation.ALL))
    sc = SiteCatalog().add_sites(Site("local"), Site("condorpool").add_directories(shared))
    inner = PWorkflow("inner").add_site_catalog(sc).add_transformation_catalog(TransformationCatalog(
        ).add_transformations(Transformation("touch", site="condorpool", pfn="/usr/bin/touch")))
    inner.add_jobs(PJob("touch").add_args("made-inside")).write(str(tmp_path / "inner.yml"))
    wf = SWorkflow("outer")
    wf.jobs["ID1"] = Job("ID1", "inner.yml", type="pegasusWorkflow", file=str(tmp_path / "inner.yml"),
                         arguments=("--sites", "condorpool"))
    exec_wf = plan(wf, tc=None, sc=None, rc=None, properties=Properties({"dagman.retry": "0"}))
    files = write_planned(exec_wf, tmp_path / "plan", exec_dir="runs/r1")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(BIN / "sheaf"), "run", files.directory], capture_output=True, text=True,
                          env=env, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (scratch / "runs" / "r1" / "made-inside").exists(), sorted(map(str, scratch.rglob("*")))
