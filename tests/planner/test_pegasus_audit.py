"""What an audit with Pegasus's own test workflows (``test/core``) found, as those workflows write
their inputs -- through ``Pegasus.api`` -- planned and run for real."""

from __future__ import annotations

from pathlib import Path

from Pegasus.api import (
    Job,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import plan_into, recorder, run


def _clustered_pair(tmp: Path, site: Site) -> None:
    keg = recorder(tmp / "pegasus-keg")
    SiteCatalog().add_sites(site, Site("local")).write(str(tmp / "sites.yml"))
    keg_tr = Transformation("keg", site=site.name, pfn=str(keg)).add_pegasus_profile(clusters_size=2)
    TransformationCatalog().add_transformations(keg_tr).write(str(tmp / "transformations.yml"))
    Workflow("pair").add_jobs(Job(keg_tr).add_args("-a", "one"), Job(keg_tr).add_args("-a", "two")).write(
        str(tmp / "workflow.yml"))


def test_pegasus_home_of_another_machine_clusters_with_sheafs_own_aggregator(tmp_path: Path) -> None:
    """Site catalogs carry the Pegasus install of the machine they were written on
    (``PEGASUS_HOME: /usr`` in test/core's 019, 034 and 010): on a site the embedded engine runs,
    a ``bin/pegasus-cluster`` that is not there must not become the cluster's executable."""
    site = Site("condorpool").add_env(PEGASUS_HOME=str(tmp_path / "no-pegasus-here"))
    _clustered_pair(tmp_path, site)
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, clustering=["horizontal"])
    merge = next(job for job in exec_wf.jobs if job.type == "cluster")
    assert "pegasus-cluster" not in str(merge.executable)
    assert any("PEGASUS_HOME" in w and "no-pegasus-here" in w for w in exec_wf.warnings)
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr


def test_pegasus_home_with_pegasus_installed_is_still_used(tmp_path: Path) -> None:
    home = tmp_path / "pegasus"
    (home / "bin").mkdir(parents=True)
    tool = recorder(home / "bin" / "pegasus-cluster")
    _clustered_pair(tmp_path, Site("condorpool").add_env(PEGASUS_HOME=str(home)))
    _, exec_wf = plan_into(tmp_path, "workflow.yml", tmp_path / "plan", clustering=["horizontal"])
    merge = next(job for job in exec_wf.jobs if job.type == "cluster")
    assert merge.executable == str(tool)
    assert not any("PEGASUS_HOME" in w for w in exec_wf.warnings)
