"""Pegasus's default ``local`` site, planned and run: its scratch directory ``wf-scratch/LOCAL``
beside the submit directory, and ``PATH``/``PYTHONPATH`` from the planner's environment unless the
site sets them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from Pegasus.api import Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow
from pegasus_inputs import plan_into, run

ENV_DUMP = f"""#!{sys.executable}
import json, os
with open("env.json", "w") as out:
    json.dump({{"PATH": os.environ.get("PATH"), "PYTHONPATH": os.environ.get("PYTHONPATH"),
               "cwd": os.getcwd()}}, out)
"""


def test_default_local_site_has_pegasus_scratch_and_the_planners_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dump = tmp_path / "dump"
    dump.write_text(ENV_DUMP)
    dump.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", "/opt/sheaf-test-modules")
    SiteCatalog().add_sites(Site("condorpool")).write(str(tmp_path / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("dump", site="local", pfn=str(dump))) \
        .write(str(tmp_path / "transformations.yml"))
    Workflow("here").add_jobs(Job("dump")).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "submit" / "run0001"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["local"])
    (job,) = [job for job in exec_wf.jobs if job.type == "compute"]
    env = job.tasks[0].profiles["env"]
    assert (env["PATH"], env["PYTHONPATH"]) == (os.environ["PATH"], "/opt/sheaf-test-modules")
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    scratch = tmp_path / "submit" / "wf-scratch" / "LOCAL"  # Pegasus's: beside the submit directory
    seen = json.loads((scratch / "env.json").read_text())
    assert seen == {"PATH": os.environ["PATH"], "PYTHONPATH": "/opt/sheaf-test-modules", "cwd": str(scratch)}


def test_local_site_environment_set_in_the_catalog_wins(tmp_path: Path) -> None:
    SiteCatalog().add_sites(Site("local").add_env(PATH="/only/here")).write(str(tmp_path / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("t", site="local", pfn="/bin/true")) \
        .write(str(tmp_path / "transformations.yml"))
    Workflow("mine").add_jobs(Job("t")).write(str(tmp_path / "workflow.yml"))
    _, exec_wf = plan_into(tmp_path, "workflow.yml", tmp_path / "plan", sites=["local"])
    (job,) = [job for job in exec_wf.jobs if job.type == "compute"]
    assert job.tasks[0].profiles["env"]["PATH"] == "/only/here"


def test_two_runs_on_the_default_local_site_have_scratch_directories_of_their_own(tmp_path: Path) -> None:
    """The relative execution directory goes under ``wf-scratch/LOCAL`` as under a catalogued scratch:
    runs planned into one base directory never share files, nor remove each other's."""
    import subprocess

    dump = tmp_path / "dump"
    dump.write_text(ENV_DUMP)
    dump.chmod(0o755)
    SiteCatalog().add_sites(Site("condorpool")).write(str(tmp_path / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("dump", site="local", pfn=str(dump))) \
        .write(str(tmp_path / "transformations.yml"))
    Workflow("here").add_jobs(Job("dump")).write(str(tmp_path / "workflow.yml"))
    sheaf = str(Path(sys.executable).with_name("sheaf"))
    seen = []
    for name in ("relA", "relB"):
        argv = [sheaf, "plan", "workflow.yml", "-s", "local", "--dir", "submit", "--relative-dir", name,
                "--cleanup", "none"]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        assert run(tmp_path / "submit" / name).returncode == 0
        scratch = tmp_path / "submit" / "wf-scratch" / "LOCAL" / name
        seen.append(json.loads((scratch / "env.json").read_text()))
    assert [s["cwd"] for s in seen] == [str(tmp_path / "submit" / "wf-scratch" / "LOCAL" / n)
                                        for n in ("relA", "relB")]
