"""Pegasus 5's default sites and its site choice when ``--sites`` is absent."""

from __future__ import annotations

import pytest
from planner_builders import catalog, job, run, sites, workflow

from sheaf.errors import PlanningError


def test_condorpool_exists_when_the_catalog_lacks_it() -> None:
    ew = run(workflow([job("a", "T")]), catalog("T", sites=("condorpool",)), sites("local"))
    assert ew.sites == ("condorpool",) and ew.jobs[0].site == "condorpool"


def test_without_sites_every_site_but_local_with_condorpool_added() -> None:
    ew = run(workflow([job("a", "T")]), catalog("T", sites=("hpc",)), sites("local", "hpc"))
    assert ew.sites == ("hpc", "condorpool") and ew.jobs[0].site == "hpc"


def test_a_site_named_compute_is_the_only_one_chosen_without_sites() -> None:
    ew = run(workflow([job("a", "T")]), catalog("T", sites=("compute", "hpc")), sites("compute", "hpc"))
    assert ew.sites == ("compute",)


def test_star_selects_every_site() -> None:
    ew = run(workflow([job("a", "T")]), catalog("T", sites=("hpc",)), sites("local", "hpc"), sites=["*"])
    assert ew.sites == ("hpc", "condorpool")


def test_local_only_transformation_still_runs_on_local_without_sites() -> None:
    ew = run(workflow([job("a", "T")]), catalog("T", sites=("local",)), sites("local"))
    assert ew.jobs[0].site == "local"
    with pytest.raises(PlanningError, match="not installed on condorpool"):
        run(workflow([job("a", "T")]), catalog("T", sites=("local",)), sites("local"), sites=["condorpool"])
