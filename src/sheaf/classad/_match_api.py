"""The public face of matchmaking, re-exported by ``sheaf.classad``::

    classad.symmetric_match(job, resource) -> bool     each ad's Requirements accept the other
    classad.half_match(my, target) -> bool             my's Requirements accept target
    classad.rank(my, target) -> float                  my's Rank of target, as the negotiator reads it
    classad.expand(job, resource) -> Expansion         $$() substitution; .ok, .reason, .ad, .recorded
    classad.negotiate(jobs, resources, limits) -> Cycle    one negotiator cycle: .matches (Match),
                                                           .unmatched {job: reason}, .resources, .kinds
    classad.ConcurrencyLimits(config, usage)           the limits throttle (try_acquire/release/statistics)
    classad.parse_limits(text), limit_for(name, knobs) ConcurrencyLimits strings and HTCondor's limit lookup
    classad.recount_matches(resources, jobs, by, key)  the USCMS matchmaker monitor: CurMatches
                                                       from MATCH_<by>
    classad.unmatch(resources, match, limits)          back out of one match

Policies are stated in the implementing modules: ``_match``, ``_match_expand``, ``_negotiator``
(with ``_negotiator_kinds`` for autoclusters), ``_limits`` and ``_negotiator_monitor``.
"""

from __future__ import annotations

from ._limits import ConcurrencyLimits, Demand, limit_for, parse_limits
from ._match import half_match, rank, symmetric_match
from ._match_expand import Expansion, expand
from ._negotiator import Cycle, Match, negotiate
from ._negotiator_monitor import recount_matches, unmatch

__all__ = ["ConcurrencyLimits", "Cycle", "Demand", "Expansion", "Match", "expand", "half_match", "limit_for",
           "negotiate", "parse_limits", "rank", "recount_matches", "symmetric_match", "unmatch"]
