"""Between cycles: the USCMS matchmaker monitor, and backing out of a match.

The negotiator only ever raises a resource's ``CurMatches``; nothing lowers it when jobs finish.  The
the USCMS report's answer is a *monitor* that periodically scans the job queue and republishes each site ad
with
``CurMatches`` set to the number of queued jobs matched to that site.  A job records the site it was
matched to in its ``MATCH_<Attr>`` attributes (written by ``$$()`` expansion); the monitor counts, for
each resource, the jobs whose ``MATCH_<by>`` equals the resource's own ``<by>`` -- the USCMS report use
``by="SiteEnvironment"``, whose value is unique per site, and read the site's name out of it (pass
``key`` to compare such a part instead of the whole value).  Resources without ``<by>`` are left alone.

``unmatch`` backs out of one scheduling decision (the USCMS report's "stopping the job and rescheduling it"):
the resource's ``CurMatches`` goes down by one (never below zero) and the job's concurrency-limit
grant is released, so that the slot and the limit are free for the next cycle.  A resource without
``WantAdRevaluate`` keeps its ad: it was only out of the cycle that matched it.

Both return new ad lists in the order given; the ads passed in are never modified.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from ._classad import ClassAd, Expr
from ._limits import ConcurrencyLimits
from ._negotiator import Match, cur_matches, resource_name, wants_revaluation

__all__ = ["recount_matches", "unmatch"]


def recount_matches(resources: Sequence[ClassAd], jobs: Iterable[ClassAd], by: str = "SiteEnvironment",
                    key: Callable[[Any], Hashable] | None = None) -> list[ClassAd]:
    """Resource ads with ``CurMatches`` recomputed from the ``MATCH_<by>`` of the queued ``jobs``.

    Without ``key`` a job counts for a resource when the two expressions are equal.  With ``key`` the
    two *values* are mapped by it first -- the USCMS report's monitor reads the site's name out of the
    environment string, which keeps counting right when a site republishes a changed environment.
    A value ``key`` cannot map (it raises ``LookupError``, ``ValueError``, ``TypeError`` or
    ``AttributeError``) counts for no resource.
    """
    counts: dict[Hashable, int] = {}
    for job in jobs:
        expr = job.get_expr(f"MATCH_{by}")
        if expr is not None and (ident := _identity(expr, job, key)) is not None:
            counts[ident] = counts.get(ident, 0) + 1
    fresh: list[ClassAd] = []
    for ad in resources:
        expr = ad.get_expr(by)
        if expr is None:
            fresh.append(ad)
            continue
        ident = _identity(expr, ad, key)
        fresh.append(_with_cur_matches(ad, counts.get(ident, 0) if ident is not None else 0))
    return fresh


def _identity(expr: Expr, ad: ClassAd, key: Callable[[Any], Hashable] | None) -> Hashable | None:
    if key is None:
        return expr.node
    try:
        return key(expr.evaluate_in(ad, None))
    except (LookupError, ValueError, TypeError, AttributeError):
        return None


def unmatch(resources: Sequence[ClassAd], match: Match,
            limits: ConcurrencyLimits | None = None) -> list[ClassAd]:
    """Resource ads with ``match`` backed out: its resource's CurMatches lowered, its limits freed."""
    if limits is not None:
        limits.release(match.demand)
    fresh = list(resources)
    for index, ad in enumerate(fresh):
        if resource_name(ad, index) == match.resource and wants_revaluation(ad):
            fresh[index] = _with_cur_matches(ad, max(0, cur_matches(ad) - 1))
            break
    return fresh


def _with_cur_matches(ad: ClassAd, count: int) -> ClassAd:
    copy = ad.copy()
    copy["CurMatches"] = count
    return copy
