"""A site catalog's batch systems: Pegasus's glite style submits a site's jobs to the batch system its
``condor.grid_resource`` names (``batch pbs``, or the single word ``pbs`` Pegasus reads alike);
``sheaf run`` sends only ``batch slurm`` to one, so a plan naming another says where its jobs run."""

from __future__ import annotations

from pathlib import Path

import pytest
from Pegasus.api import Grid, Scheduler, Site, SiteCatalog, SupportedJobs

from sheaf import app
from sheaf.errors import PlanningError

SITES = """<?xml version="1.0" encoding="UTF-8"?>
<sitecatalog xmlns="http://pegasus.isi.edu/schema/sitecatalog" version="4.0">
  <site handle="local" arch="x86_64" os="LINUX"/>
  <site handle="hpc" arch="x86_64" os="LINUX">
    <profile namespace="pegasus" key="style">glite</profile>
    <profile namespace="condor" key="grid_resource">{resource}</profile>
  </site>
</sitecatalog>
"""

TRANSFORMATIONS = """tr step {
  site hpc {
    pfn "/bin/true"
    type "INSTALLED"
  }
}
"""

WORKFLOW = """pegasus: "5.0"
name: batch
jobs:
- {type: job, name: step, id: ID1, arguments: []}
"""


def _plan(tmp_path: Path, resource: str) -> tuple[str, ...]:
    (tmp_path / "sites.xml").write_text(SITES.format(resource=resource))
    (tmp_path / "tc.txt").write_text(TRANSFORMATIONS)
    (tmp_path / "workflow.yml").write_text(WORKFLOW)
    planned = app.plan(app.PlanRequest(str(tmp_path / "workflow.yml"), base=str(tmp_path / "runs"),
                                       sites=("hpc",), sc=str(tmp_path / "sites.xml"),
                                       tc=str(tmp_path / "tc.txt")))
    return planned.warnings


@pytest.mark.parametrize("resource", ["pbs", "batch pbs", "batch sge", "slurm"])
def test_a_batch_system_sheaf_run_does_not_submit_to_is_warned_about_naming_the_site(
        tmp_path: Path, resource: str) -> None:
    warnings = [w for w in _plan(tmp_path, resource) if "grid_resource" in w]
    assert len(warnings) == 1
    assert f"site 'hpc': its jobs' grid_resource = {resource} asks for a batch system" in warnings[0]
    assert "grid_resource = batch slurm" in warnings[0] and "--backend" in warnings[0]


def test_batch_slurm_is_sent_to_slurm_and_not_warned_about(tmp_path: Path) -> None:
    assert not [w for w in _plan(tmp_path, "batch slurm") if "grid_resource" in w]


def _plan_gateway(tmp_path: Path, scheduler: Scheduler, style: str = "glite",
                  **condor: str) -> tuple[tuple[str, ...], str]:
    """A glite-style site with a batch grid gateway and no grid_resource of its own (Pegasus's
    configuration for a cluster it submits to through HTCondor's BLAHP)."""
    tmp_path.mkdir(exist_ok=True)
    hpc = Site("hpc").add_pegasus_profile(style=style).add_grids(
        Grid(Grid.BATCH, contact="me@login.example.org", scheduler_type=scheduler,
             job_type=SupportedJobs.COMPUTE))
    if condor:
        hpc.add_condor_profile(**condor)
    SiteCatalog().add_sites(hpc, Site("local")).write(str(tmp_path / "sites.yml"))
    (tmp_path / "tc.txt").write_text(TRANSFORMATIONS)
    (tmp_path / "workflow.yml").write_text(WORKFLOW)
    planned = app.plan(app.PlanRequest(str(tmp_path / "workflow.yml"), base=str(tmp_path / "runs"),
                                       relative_dir="p", sites=("hpc",), sc=str(tmp_path / "sites.yml"),
                                       tc=str(tmp_path / "tc.txt")))
    return planned.warnings, (tmp_path / "runs" / "p" / "batch.dag").read_text()


def test_the_glite_style_takes_the_batch_system_from_the_sites_grid_gateway(tmp_path: Path) -> None:
    """Pegasus's GLite style builds grid_resource from the site's grid gateway when the site gives
    none: ``batch slurm me@login.example.org``, which sheaf run sends to Slurm."""
    warnings, dag = _plan_gateway(tmp_path, Scheduler.SLURM)
    assert "grid_resource = batch slurm me@login.example.org" in dag
    assert not [w for w in warnings if "grid_resource" in w]


def test_a_grid_gateway_of_a_batch_system_sheaf_run_does_not_submit_to_is_warned(tmp_path: Path) -> None:
    warnings, dag = _plan_gateway(tmp_path, Scheduler.PBS)
    assert "grid_resource = batch pbs me@login.example.org" in dag
    assert [w for w in warnings if "grid_resource = batch pbs me@login.example.org asks for a batch" in w]


def test_the_sites_own_grid_resource_wins_over_its_grid_gateway(tmp_path: Path) -> None:
    _, dag = _plan_gateway(tmp_path, Scheduler.PBS, grid_resource="batch slurm")
    assert "grid_resource = batch slurm\n" in dag and "batch pbs" not in dag


def test_the_ssh_style_takes_the_batch_system_from_the_grid_gateway_whatever_the_site_says(
        tmp_path: Path) -> None:
    """Pegasus's SSH style builds grid_resource from the grid gateway always."""
    _, dag = _plan_gateway(tmp_path, Scheduler.SLURM, style="ssh", grid_resource="batch pbs")
    assert "grid_resource = batch slurm me@login.example.org" in dag and "batch pbs" not in dag


@pytest.mark.parametrize("style", ["condorc", "cream", "panda"])
def test_a_style_sheaf_does_not_submit_with_is_warned_about_naming_it(tmp_path: Path, style: str) -> None:
    warnings, _ = _plan_gateway(tmp_path, Scheduler.SLURM, style=style)
    assert [w for w in warnings if f"'style' = '{style}' is not honoured" in w and "site hpc" in w]
    assert not [w for w in _plan_gateway(tmp_path / "glite", Scheduler.SLURM)[0] if "'style'" in w]


def test_a_jobs_grid_jobtype_picks_the_grid_gateway_of_that_job_type(tmp_path: Path) -> None:
    """The selector profile table: ``grid.jobtype = auxillary`` on a compute job runs it through the
    site's gateway for auxiliary jobs."""
    hpc = Site("hpc").add_pegasus_profile(style="glite").add_grids(
        Grid(Grid.BATCH, contact="me@login", scheduler_type=Scheduler.SLURM, job_type=SupportedJobs.COMPUTE),
        Grid(Grid.BATCH, contact="me@login", scheduler_type=Scheduler.PBS, job_type=SupportedJobs.AUXILLARY))
    SiteCatalog().add_sites(hpc, Site("local")).write(str(tmp_path / "sites.yml"))
    (tmp_path / "tc.txt").write_text(TRANSFORMATIONS)
    (tmp_path / "workflow.yml").write_text(WORKFLOW.replace(
        "arguments: []}", "arguments: [], profiles: {selector: {grid.jobtype: auxillary}}}"))
    app.plan(app.PlanRequest(str(tmp_path / "workflow.yml"), base=str(tmp_path / "runs"), relative_dir="p",
                             sites=("hpc",), sc=str(tmp_path / "sites.yml"), tc=str(tmp_path / "tc.txt")))
    assert "grid_resource = batch pbs me@login" in (tmp_path / "runs" / "p" / "batch.dag").read_text()


@pytest.mark.parametrize("style", ["glite", "ssh"])
def test_a_site_of_the_glite_or_ssh_style_without_a_grid_gateway_is_refused(tmp_path: Path,
                                                                            style: str) -> None:
    """Pegasus's GLite and SSH styles build grid_resource from the site's grid gateway: a site with
    none (and, for glite, no grid_resource of its own) cannot be planned, as in Pegasus."""
    SiteCatalog().add_sites(Site("hpc").add_pegasus_profile(style=style), Site("local")).write(
        str(tmp_path / "sites.yml"))
    (tmp_path / "tc.txt").write_text(TRANSFORMATIONS)
    (tmp_path / "workflow.yml").write_text(WORKFLOW)
    with pytest.raises(PlanningError, match=f"site 'hpc' has no grid gateway with a contact for its {style} "
                                            "style's compute jobs"):
        app.plan(app.PlanRequest(str(tmp_path / "workflow.yml"), base=str(tmp_path / "runs"), sites=("hpc",),
                                 sc=str(tmp_path / "sites.yml"), tc=str(tmp_path / "tc.txt")))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.dag"))


def test_a_grid_gateway_that_names_the_fork_scheduler_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PlanningError, match="names no batch scheduler") as caught:
        _plan_gateway(tmp_path, Scheduler.FORK)
    assert caught.value.value == "fork"
