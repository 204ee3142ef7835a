"""A site whose catalogued shared scratch only a remote URL serves (``stash://``, ``gsiftp://``): sheaf
works through ``file://`` paths only, so the site works in the submit directory's ``scratch/<site>``,
and the plan says so, naming the site, the directory and the URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from Pegasus import api as pg
from pegasus_inputs import plan_into


def _inputs(tmp: Path, path: str, url: str) -> None:
    scratch = pg.Directory(pg.Directory.SHARED_SCRATCH, path).add_file_servers(
        pg.FileServer(url, pg.Operation.ALL))
    cluster = pg.Site("cluster").add_directories(scratch)
    pg.SiteCatalog().add_sites(pg.Site("local"), cluster).write(str(tmp / "sites.yml"))
    pg.TransformationCatalog().add_transformations(
        pg.Transformation("tool", site="cluster", pfn="/bin/true")).write(str(tmp / "transformations.yml"))
    pg.Workflow("remote").add_jobs(pg.Job("tool", _id="J1")).write(str(tmp / "workflow.yml"))


@pytest.mark.parametrize("url", ["stash:///osgconnect/public/user/staging",
                                 "gsiftp://example.org/public/user/staging"])
def test_a_scratch_served_only_by_a_remote_url_is_warned_about(tmp_path: Path, url: str) -> None:
    _inputs(tmp_path, "/public/user/staging", url)
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target)
    assert exec_wf.workdirs["cluster"] == str(target / "scratch" / "cluster")
    (warning,) = [w for w in exec_wf.warnings if "shared scratch" in w]
    assert "site 'cluster'" in warning and "/public/user/staging" in warning and url in warning
    assert str(target / "scratch" / "cluster") in warning


def test_a_file_url_scratch_is_used_without_a_warning(tmp_path: Path) -> None:
    _inputs(tmp_path, str(tmp_path / "scratch"), f"file://{tmp_path}/scratch")
    _, exec_wf = plan_into(tmp_path, "workflow.yml", tmp_path / "plan")
    assert exec_wf.workdirs["cluster"] == str(tmp_path / "scratch")
    assert not [w for w in exec_wf.warnings if "shared scratch" in w]
