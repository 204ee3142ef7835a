"""sheaf.backends.grid: whole group DAGs bound to grid sites by ClassAd matchmaking (the USCMS recipe).

Everything that runs a grid plan (one ``sheaf plan --group-size`` wrote; ``sheaf.codegen`` writes its
group DAGs, their submit descriptions and the matchmaker monitor's script) is here:

- ``_collector``: the collector, the durable store of site ads (``sheaf advertise`` feeds it);
- ``_sites``: the site ads, from the site configuration (``sheaf.formats``) and the site catalog;
- ``_backend``: ``GridBackend``, which negotiates the outer DAG's group DAG jobs onto the site ads,
  starts each matched one and backs out of sites that stall or fail (``BackOut``), within the
  gridmanager's per-site throttles (``_gridmanager``);
- ``_group``: the group DAG job itself (``python -m sheaf.backends.grid._group DIR GROUP_DAG``), which
  runs one group DAG on the backend of the site its environment names;
- ``_rescue``: where a group's nodes ran, and the rescue DAG a group restarts from on a new site;
- ``_monitor``: the matchmaker monitor for a real pool (``condor_q -l`` in, site ad files out).

Imported lazily: the group DAG jobs and the monitor run modules of this package as programs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports
from sheaf.backends._slotconfig import load_config as load_pool_config
from sheaf.formats import SiteConfig, SiteSpec, read_site_config

if TYPE_CHECKING:
    from sheaf.backends.grid._backend import BackOut, GridBackend
    from sheaf.backends.grid._collector import (
        COLLECTOR_PROPERTY,
        Collector,
        Update,
        collector_path,
        plan_collector,
        read_ads,
    )
    from sheaf.backends.grid._sites import site_ad, site_ads, site_of_environment

__all__ = ["COLLECTOR_PROPERTY", "BackOut", "Collector", "GridBackend", "SiteConfig", "SiteSpec", "Update",
           "collector_path", "load_pool_config", "plan_collector", "read_ads", "read_site_config", "site_ad",
           "site_ads", "site_of_environment"]

__getattr__ = lazy_exports(__name__, {
    "BackOut": "_backend", "GridBackend": "_backend", "COLLECTOR_PROPERTY": "_collector",
    "Collector": "_collector", "Update": "_collector", "collector_path": "_collector",
    "plan_collector": "_collector", "read_ads": "_collector", "site_ad": "_sites", "site_ads": "_sites",
    "site_of_environment": "_sites",
})
