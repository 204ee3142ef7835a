"""Grid sites: whole group DAGs bound to sites by ClassAd matchmaking (the USCMS recipe).

Public surface of the grid pieces: the collector (``_collector``).
"""

from __future__ import annotations

from sheaf.backends._collector import COLLECTOR_PROPERTY, Collector, Update, collector_path, read_ads

__all__ = ["COLLECTOR_PROPERTY", "Collector", "Update", "collector_path", "read_ads"]
