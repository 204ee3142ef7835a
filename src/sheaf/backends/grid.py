"""Grid sites: whole group DAGs bound to sites by ClassAd matchmaking (the USCMS recipe).

Public surface of the grid pieces: the collector (``_collector``).
"""

from __future__ import annotations

from sheaf.backends._collector import COLLECTOR_PROPERTY, Collector, Update, collector_path, read_ads
from sheaf.backends._sites import site_ad, site_ads, site_of_environment
from sheaf.formats._site_config import SiteConfig, SiteSpec, read_site_config

__all__ = ["COLLECTOR_PROPERTY", "Collector", "SiteConfig", "SiteSpec", "Update", "collector_path",
           "read_ads", "read_site_config", "site_ad", "site_ads", "site_of_environment"]
