"""Site ads: the USCMS report's site ClassAd, built from the site configuration and the site catalog.

Each configured site becomes one ad (the report's attributes, with their meaning)::

    MyType = "Machine"; TargetType = "Job"; Name = "<site>-Site"     a unique Name per site
    StartdIpAddr = "<127.0.0.1:0>"                                   meaningless on a grid, kept for tools
    UpdateSequenceNumber = <UNIX time>                              higher at every publication
    Rank = 0.0; CurrentRank = 0.0
    WantAdRevaluate = True                                           the negotiator bumps CurMatches
    CurMatches = 0; MaxMatches = max(1, max_queued // group size)    the report's division
    Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)
    Is_USCMS_Site = True
    MatchmakerURL, MatchmakerSchedd, MatchmakerPool                  where group DAGs run: this machine
    GatekeeperURL   the site's gatekeeper (per-job binding)
    SiteEnvironment = "SheafSite=<site>;SiteBackend=...;SiteSlots=n;SiteGatekeeperURL=...;<yours>"
    MOP_SITE = "<site>"

``SiteEnvironment`` is what a matched group DAG job gets as its environment; ``SheafSite`` in it names
the site, and the matchmaker monitor counts matches by it (:func:`site_of_environment`).  The
gatekeeper is the configuration's, else the site catalog's first grid contact, else ``sheaf://<site>``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping

from sheaf.classad import ClassAd
from sheaf.formats import FAILURE_MODES, SiteConfig, SiteSpec
from sheaf.model import SiteCatalog

__all__ = ["REQUIREMENTS", "SITE_KEY", "max_matches", "sequence_number", "site_ad", "site_ads",
           "site_environment", "site_of_environment"]

SITE_KEY = "SheafSite"
REQUIREMENTS = "(CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)"


def sequence_number(after: int | None = None) -> int:
    """A fresh ``UpdateSequenceNumber``: the UNIX time, as the report uses, and always above ``after``."""
    now = int(time.time())
    return now if after is None or now > after else after + 1


def max_matches(spec: SiteSpec, group_size: int) -> int:
    """The report's MaxMatches: the deepest queue divided by the group size (at least one group)."""
    return max(1, spec.max_queued // max(1, group_size))


def site_environment(spec: SiteSpec, gatekeeper: str) -> str:
    entries = {SITE_KEY: spec.name, "SiteBackend": spec.backend, "SiteSlots": str(spec.slots),
               "SiteGatekeeperURL": gatekeeper, **spec.environment}
    for mode in FAILURE_MODES:  # dies_after -> SiteDiesAfter, ...
        if (after := getattr(spec, mode)) is not None:
            entries["Site" + mode.title().replace("_", "")] = str(after)
    return ";".join(f"{name}={value}" for name, value in entries.items())


def site_of_environment(value: object) -> str:
    """The site a ``SiteEnvironment`` string names (``SheafSite=...``); ``LookupError`` if none."""
    if not isinstance(value, str):
        raise TypeError("SiteEnvironment is not a string")
    for entry in value.split(";"):
        name, _, site = entry.partition("=")
        if name.strip() == SITE_KEY:
            return site
    raise LookupError(f"no {SITE_KEY} in SiteEnvironment")


def _gatekeeper(spec: SiteSpec, catalog: SiteCatalog | None) -> str:
    if spec.gatekeeper:
        return spec.gatekeeper
    site = catalog.get(spec.name) if catalog is not None else None
    if site is not None and site.grids:
        return site.grids[0].contact
    return f"sheaf://{spec.name}"


def site_ad(spec: SiteSpec, group_size: int, *, catalog: SiteCatalog | None = None,
            sequence: int | None = None, extra: Mapping[str, object] | None = None) -> ClassAd:
    """The ad of one site (see the module docstring)."""
    host = socket.getfqdn()
    gatekeeper = _gatekeeper(spec, catalog)
    ad = ClassAd.parse_old(f"Requirements = {REQUIREMENTS}\nRank = 0.0\nCurrentRank = 0.0\n")
    values: dict[str, object] = {
        "MyType": "Machine", "TargetType": "Job", "Name": f"{spec.name}-Site",
        "StartdIpAddr": "<127.0.0.1:0>", "UpdateSequenceNumber": sequence or sequence_number(),
        "WantAdRevaluate": True, "CurMatches": 0, "MaxMatches": max_matches(spec, group_size),
        "Is_USCMS_Site": True, "MatchmakerURL": f"sheaf://{host}", "MatchmakerSchedd": host,
        "MatchmakerPool": host, "GatekeeperURL": gatekeeper,
        "SiteEnvironment": site_environment(spec, gatekeeper), "MOP_SITE": spec.name, **(extra or {})}
    for name, value in values.items():
        ad[name] = value
    return ad


def site_ads(config: SiteConfig, group_size: int | None = None, *,
             catalog: SiteCatalog | None = None) -> list[ClassAd]:
    """One ad per configured site, in the file's order, all with one fresh sequence number."""
    size = group_size or config.group_size or 1
    sequence = sequence_number()
    return [site_ad(spec, size, catalog=catalog, sequence=sequence) for spec in config.sites]
