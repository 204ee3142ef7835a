"""Grid sites: whole group DAGs bound to sites by ClassAd matchmaking (the USCMS recipe).

Public surface of the grid pieces: the collector (``_collector``), site ads (``_sites``, from the
site configuration read by ``sheaf.formats._site_config``), the grid backend (``_grid_backend``)
whose group DAG jobs run the group DAGs on the matched site's backend (``_grid_group``).
"""

from __future__ import annotations

import json
from pathlib import Path

from sheaf.backends._collector import COLLECTOR_PROPERTY, Collector, Update, collector_path, read_ads
from sheaf.backends._grid_backend import BackOut, GridBackend
from sheaf.backends._sites import site_ad, site_ads, site_of_environment
from sheaf.backends._slotconfig import load_config as load_pool_config
from sheaf.formats import SiteConfig, SiteSpec, read_site_config

__all__ = ["COLLECTOR_PROPERTY", "BackOut", "Collector", "GridBackend", "SiteConfig", "SiteSpec", "Update",
           "collector_path", "load_pool_config", "plan_collector", "read_ads", "read_site_config", "site_ad",
           "site_ads", "site_of_environment"]


def plan_collector(directory: str) -> Collector:
    """The collector a grid plan names (``sheaf.collector.file`` at plan time), else the default."""
    record = json.loads((Path(directory) / "grid" / "groups.json").read_text(encoding="utf-8"))
    named = record.get("collector") if isinstance(record, dict) else None
    return Collector(named if isinstance(named, str) else None)

