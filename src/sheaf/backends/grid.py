"""Grid sites: whole group DAGs bound to sites by ClassAd matchmaking (the USCMS recipe).

Public surface of the grid pieces: the collector (``_collector``), site ads (``_sites``, from the
site configuration read by ``sheaf.formats._site_config``), the grid backend (``_grid_backend``)
whose group DAG jobs run the group DAGs on the matched site's backend (``_grid_group``).
"""

from __future__ import annotations

from pathlib import Path

from sheaf.backends._collector import COLLECTOR_PROPERTY, Collector, Update, collector_path, read_ads
from sheaf.backends._grid_backend import BackOut, GridBackend
from sheaf.backends._sites import site_ad, site_ads, site_of_environment
from sheaf.formats._site_config import SiteConfig, SiteSpec, read_site_config

__all__ = ["COLLECTOR_PROPERTY", "BackOut", "Collector", "GridBackend", "SiteConfig", "SiteSpec", "Update",
           "collector_path", "is_grid_plan", "read_ads", "read_site_config", "site_ad", "site_ads",
           "site_of_environment"]


def is_grid_plan(directory: str) -> bool:
    """True for a directory ``sheaf plan --group-size`` wrote (its outer DAG runs on a GridBackend)."""
    return (Path(directory) / "grid" / "groups.json").is_file()
