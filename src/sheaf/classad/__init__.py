"""sheaf.classad: the HTCondor ClassAd language, matchmaking and a negotiator (a leaf package)."""

from __future__ import annotations

__all__: list[str] = []
