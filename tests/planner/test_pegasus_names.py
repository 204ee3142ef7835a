"""Workflow and job names outside ASCII, as Pegasus accepts them, plan and run (file names too)."""

from __future__ import annotations

import json
from pathlib import Path

from Pegasus.api import File, Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow
from pegasus_inputs import plan_into, recorder, run


def test_non_ascii_workflow_plans_and_runs(tmp_path: Path) -> None:
    keg = recorder(tmp_path / "kég")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("kég", site="condorpool", pfn=str(keg))) \
        .write(str(tmp_path / "transformations.yml"))
    first = Job("kég").add_args("-o", File("données.txt")).add_outputs(File("données.txt"))
    second = Job("kég").add_args("-i", File("données.txt"), "π").add_inputs(File("données.txt"))
    Workflow("analyse-données-π").add_jobs(first, second).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    assert exec_wf.name == "analyse-données-π"
    assert json.loads((target / "plan.json").read_text(encoding="utf-8"))["workflow"] == "analyse-données-π"
    jobs = exec_wf.jobs
    assert [(jobs[p].type, jobs[c].type) for p, c in exec_wf.edges if jobs[p].tasks] == [
        ("compute", "compute")]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((target / "scratch" / "condorpool" / "argv.json").read_text()) == [
        "-i", "données.txt", "π"]
