"""A site catalog's batch systems: Pegasus's glite style submits a site's jobs to the batch system its
``condor.grid_resource`` names (``batch pbs``, or the single word ``pbs`` Pegasus reads alike);
``sheaf run`` sends only ``batch slurm`` to one, so a plan naming another says where its jobs run."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import app

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
