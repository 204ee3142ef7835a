"""The negotiator: one matchmaking cycle of job ads against resource ads, HTCondor's way.

Policy
------
* **Job order.** Jobs are served by ``JobPrio`` (higher first; a missing or non-numeric JobPrio is 0),
  then in the order given.  Each job gets at most one resource per cycle.
* **Best resource.** Among the resources that match symmetrically (``_match.symmetric_match``), the
  job takes the best by HTCondor's lexicographic order (``matchmaker.cpp``): first
  ``NEGOTIATOR_PRE_JOB_RANK``, then the job's ``Rank``, then ``NEGOTIATOR_POST_JOB_RANK``, then the
  list order.  The two negotiator ranks are evaluated with the resource as MY and the job as TARGET,
  rounded to single precision as HTCondor stores them, anything but a number being the worst value;
  their defaults are HTCondor's (``PRE_JOB_RANK``: the slot's own Rank of the job first, then idle
  slots, then best fit -- fewest Cpus, least Memory; ``POST_JOB_RANK``: idle, fast, low SlotID, not
  offline); ``None`` leaves one out.  The job's ``Rank`` is read as ``EvalFloat`` reads it: from the
  job, or -- when the job has none -- the resource's Rank evaluated in the resource; undefined, error
  or non-numeric is 0.0, a boolean 1.0/0.0, NaN worse than anything.  ``PREEMPTION_RANK`` only orders
  matches that preempt a claimed slot, which this negotiator does not make.
* **Resources used once.** A resource whose ``WantAdRevaluate`` is not true leaves the cycle once
  matched.  It is read as ``LookupBool`` reads it: a boolean, or a number other than 0 (``1`` is true).
* **WantAdRevaluate.** A resource with ``WantAdRevaluate`` true stays: after each match its
  ``CurMatches`` (missing or not a number counts as 0, ``true`` as 1) goes up by one in a new copy
  of its ad, the ad is evaluated again for the rest of the cycle (so ``Requirements = CurMatches <
  MaxMatches`` caps it), and it moves to the END of the list -- which, among equal ranks, spreads
  jobs round-robin.
* **Concurrency limits.** A job's ``ConcurrencyLimits`` (evaluated against the candidate resource, as
  HTCondor does) is checked against a ``ConcurrencyLimits`` throttle; a candidate whose grant would
  exceed a limit is passed over, and a job with no acceptable candidate is not matched this cycle.
* **Autoclusters.** Jobs are grouped into kinds by their significant attributes
  (``_negotiator_kinds``) and resources into classes; the match/rank/limits of a (kind, class) pair
  is evaluated once.  A kind that fails to match is skipped for the rest of the cycle with the same
  reason (resources only get used up, and limits only fill up, during a cycle) -- HTCondor's
  rejected-autocluster cache.

Invariants: a match always satisfies both Requirements at the moment it is made (with the resource's
``CurMatches`` of that moment); a WantAdRevaluate resource is re-evaluated after every match it
takes; no limit's usage exceeds its maximum; the outcome depends only on the inputs (no hashing of
ids or sets decides anything).

How the best resource is found fast
-----------------------------------
Each kind keeps a heap of candidate entries ``(-rank, position, resource, version)``.  A resource
that changes (WantAdRevaluate) gets a new version and position and is appended to a change log;
before a kind serves a job it re-evaluates the resources changed since it last looked (a cached
(kind, class) look-up each) and pushes fresh entries.  Entries of used or changed resources are
dropped when they surface.  A cycle therefore costs about one evaluation per (kind, class) pair plus
a heap operation per job, not a scan of every resource for every job.
"""

from __future__ import annotations

import gc
import heapq
import math
import struct
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ._classad import NOT_CONSTANT, ClassAd, Expr, parse
from ._limits import ConcurrencyLimits, Demand, parse_limits
from ._match import _accepts, rank
from ._negotiator_kinds import (
    JOB_ROOTS,
    RESOURCE_ROOTS,
    JobKinds,
    ResourceClasses,
    _exprs,
    lookups,
    references,
    with_expr,
)

__all__ = ["NO_MATCH", "Cycle", "Match", "cur_matches", "negotiate", "resource_name", "wants_revaluation"]

NO_MATCH = "no matching resource"
_Key = tuple[float, float, float]  # (-pre-job rank, -job rank, -post-job rank): smaller is better
_Verdict = tuple[_Key, Demand] | None  # (key, demand) when the pair matches
_Entry = tuple[_Key, int, int, int]  # (key, list position, resource index, resource version)
PRE_JOB_RANK: Final = ("(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus)"
                       " - Memory")
POST_JOB_RANK: Final = ("(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops)"
                        " - SlotID - 1.0e10*(Offline=?=True))")
_WORST: Final = math.inf  # the negated -DBL_MAX a negotiator rank that is not a number gets


@dataclass(frozen=True, slots=True)
class Match:
    """One job bound to one resource; ``resource_ad`` is the resource as it was when matched."""

    job: Hashable
    resource: str
    rank: float
    job_ad: ClassAd
    resource_ad: ClassAd
    demand: Demand = ()


@dataclass(frozen=True, slots=True)
class Cycle:
    """What one cycle did: matches in the order made, why the others were not matched, and the
    resource ads afterwards (CurMatches updated, in their new list order) for the next cycle."""

    matches: list[Match]
    unmatched: dict[Hashable, str]
    resources: list[ClassAd]
    kinds: int
    limits: ConcurrencyLimits


def negotiate(jobs: Mapping[Hashable, ClassAd] | Sequence[ClassAd], resources: Sequence[ClassAd],
              limits: ConcurrencyLimits | Mapping[str, object] | None = None, *,
              pre_job_rank: str | None = PRE_JOB_RANK, post_job_rank: str | None = POST_JOB_RANK) -> Cycle:
    """Run one negotiation cycle (see the module docstring).

    ``jobs`` maps job ids to ads (a sequence is keyed by position).  ``limits`` is a throttle (its
    usage is updated in place) or a configuration mapping (``<NAME>_LIMIT``,
    ``CONCURRENCY_LIMIT_DEFAULT``, ``CONCURRENCY_LIMIT_DEFAULT_<PREFIX>``) starting from no usage.
    ``pre_job_rank``/``post_job_rank`` are ``NEGOTIATOR_PRE_JOB_RANK``/``NEGOTIATOR_POST_JOB_RANK``.
    """
    ranks = (None if pre_job_rank is None else parse(pre_job_rank),
             None if post_job_rank is None else parse(post_job_rank))
    items: list[tuple[Hashable, ClassAd]] = (list(jobs.items()) if isinstance(jobs, Mapping)
                                              else list(enumerate(jobs)))
    throttle = limits if isinstance(limits, ConcurrencyLimits) else ConcurrencyLimits(limits)
    # A cycle allocates many small, acyclic objects (keys, heap entries, ad copies); each allocation
    # burst would make the cyclic garbage collector walk the caller's 100,000 ads again, which costs
    # more than the cycle itself.  It is paused for the cycle and restored as it was.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Negotiation(items, list(resources), throttle, ranks).run()
    finally:
        if collecting:
            gc.enable()


def resource_name(ad: ClassAd, index: int) -> str:
    """A resource's ``Name`` when it is a string, else ``#<index>``."""
    name = ad.eval("Name") if "Name" in ad else None
    return name if isinstance(name, str) else f"#{index}"


def wants_revaluation(ad: ClassAd) -> bool:
    """``WantAdRevaluate`` evaluates to true (HTCondor's spelling of the attribute, kept)."""
    if "WantAdRevaluate" not in ad:
        return False
    value = ad.eval("WantAdRevaluate")
    return value is True or (type(value) in (int, float) and value != 0)


def cur_matches(ad: ClassAd) -> int:
    """``CurMatches`` as the negotiator reads it (``EvalInteger``; 0 when missing or not a number)."""
    expr = ad.get_expr("CurMatches")
    if expr is None:
        return 0
    value = expr.const if expr.const is not NOT_CONSTANT else expr.evaluate_in(ad, None)
    if type(value) is float and math.isfinite(value):
        return int(value)
    if type(value) is bool:
        return int(value)
    return value if type(value) is int else 0


def _priority(ad: ClassAd) -> float:
    expr = _exprs(ad).get("jobprio")
    if expr is None:
        return 0
    value = expr.const if expr.const is not NOT_CONSTANT else expr.evaluate_in(ad, None)
    return value if (type(value) is int or type(value) is float) and not math.isnan(value) else 0


def _negotiator_rank(expr: Expr | None, job: ClassAd, resource: ClassAd) -> float:
    """A negotiator rank of the pair, negated for the heap: evaluated with the resource as MY, kept
    as the C ``float`` HTCondor stores; not a number (or no expression) is the worst value."""
    if expr is None:
        return _WORST
    value = expr.evaluate_in(resource, job)
    if type(value) not in (int, float, bool) or math.isnan(value):
        return _WORST
    return -_single(float(value))


def _single(value: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


class _Kind:
    """Per-kind state for one cycle: candidate heap, change-log cursor, failure reason."""

    __slots__ = ("cursor", "failed", "heap")

    def __init__(self) -> None:
        self.heap: list[_Entry] | None = None
        self.cursor = 0
        self.failed: str | None = None


class _Negotiation:
    """One cycle's state.  Resources are indexed by their input position ``r``: ``ads[r]`` is the
    current ad, ``seq[r]`` its list position (moving to the end = a new, larger seq), ``version[r]``
    counts its changes, ``alive[r]`` is False once a use-once resource is taken, ``cls[r]`` its class."""

    def __init__(self, jobs: list[tuple[Hashable, ClassAd]], resources: list[ClassAd],
                 limits: ConcurrencyLimits, ranks: tuple[Expr | None, Expr | None]) -> None:
        self.jobs, self.ads, self.limits, self.ranks = jobs, resources, limits, ranks
        # what the negotiator's ranks read: plain names in the resource (else, compat, the job),
        # TARGET.x in the job
        refs = set().union(*(references(expr) for expr in ranks if expr is not None))
        self.rank_resource_names = {name for name in refs if not name.startswith("target.")}
        self.rank_job_names = {name.removeprefix("target.") for name in refs}
        count = len(resources)
        self.names = [resource_name(ad, i) for i, ad in enumerate(resources)]
        self.alive = [True] * count
        self.version = [0] * count
        self.seq = list(range(count))
        self.next_seq = count
        self.want = [wants_revaluation(ad) for ad in resources]
        self.changes: list[int] = []
        self.cache: dict[tuple[int, int], _Verdict] = {}
        self.bumped: dict[tuple[int, int], int] = {}
        self.counts: dict[int, int] = {}  # CurMatches of the resources that took a match this cycle
        self.count_exprs: dict[int, Expr] = {}
        self.demands: dict[str, Demand] = {}
        self.matches: list[Match] = []
        self.unmatched: dict[Hashable, str] = {}

    # -- grouping -------------------------------------------------------------------------------
    def group(self) -> None:
        """Kinds for jobs, classes for resources, widened until the significant names settle.

        ``reach`` is what resource expressions may look up in a job; the job side's own closure is
        followed by ``JobKinds``.  A second pass is needed only when a name the jobs reference leads,
        through a resource's attributes, to a name not yet in ``reach``.
        """
        reach = self.rank_job_names.union(*(lookups(ad, RESOURCE_ROOTS)[1] for ad in self.ads))
        while True:
            kinds = JobKinds(reach)
            self.kind_of = [kinds.kind(ad) for _, ad in self.jobs]
            self.rep: dict[int, ClassAd] = {}
            for (_, ad), kind in zip(self.jobs, self.kind_of, strict=True):
                self.rep.setdefault(kind, ad)
            roots = (*JOB_ROOTS, *kinds.base)
            job_names = set().union(*(lookups(ad, roots)[1] for ad in self.rep.values()))
            classes = ResourceClasses(job_names | self.rank_resource_names)
            wider = reach.union(*(lookups(ad, (*RESOURCE_ROOTS, *job_names))[1] for ad in self.ads))
            if wider <= reach or kinds.everything:
                break
            reach = wider
        self.classes = classes
        self.class_names = [classes.names_for(ad) for ad in self.ads]
        self.cls = [classes.class_of(ad, names) for ad, names in zip(self.ads, self.class_names, strict=True)]
        self.kinds = {kind: _Kind() for kind in self.rep}

    # -- evaluation -----------------------------------------------------------------------------
    def verdict(self, kind: int, r: int) -> _Verdict:
        key = (kind, self.cls[r])
        try:
            return self.cache[key]
        except KeyError:
            found = self.cache[key] = self.judge(self.rep[kind], self.ads[r])
            return found

    def judge(self, job: ClassAd, resource: ClassAd) -> _Verdict:
        if not (_accepts(job, resource) and _accepts(resource, job)):
            return None
        pre, post = (_negotiator_rank(expr, job, resource) for expr in self.ranks)
        value = rank(job, resource)
        return ((pre, math.inf if math.isnan(value) else -value, post), self.demand(job, resource))

    def demand(self, job: ClassAd, resource: ClassAd) -> Demand:
        expr = job.get_expr("ConcurrencyLimits")
        if expr is None:
            return ()
        text = expr.const if expr.const is not NOT_CONSTANT else expr.evaluate_in(job, resource)
        if not isinstance(text, str):
            return ()
        found = self.demands.get(text)
        if found is None:
            found = self.demands[text] = parse_limits(text)
        return found

    # -- the cycle ------------------------------------------------------------------------------
    def run(self) -> Cycle:
        self.group()
        priorities = [_priority(ad) for _, ad in self.jobs]
        order: Sequence[int] = range(len(self.jobs))
        if any(priorities):
            order = sorted(order, key=priorities.__getitem__, reverse=True)  # stable: ties keep order
        for index in order:
            self.serve(index)
        final = sorted(range(len(self.ads)), key=self.seq.__getitem__)
        return Cycle(self.matches, self.unmatched, [self.ads[r] for r in final], len(self.kinds), self.limits)

    def serve(self, index: int) -> None:
        job_id, job = self.jobs[index]
        kind_id = self.kind_of[index]
        kind = self.kinds[kind_id]
        if kind.failed is None:
            picked = self.pick(self.candidates(kind_id, kind), kind_id, kind)
            if picked is not None:
                self.bind(job_id, job, *picked)
                return
        self.unmatched[job_id] = kind.failed or NO_MATCH

    def candidates(self, kind_id: int, kind: _Kind) -> list[_Entry]:
        heap = kind.heap
        if heap is None:
            heap = kind.heap = []
            alive, verdict = self.alive, self.verdict
            for r in range(len(self.ads)):
                if alive[r] and (found := verdict(kind_id, r)) is not None:
                    heap.append((found[0], self.seq[r], r, self.version[r]))
            heapq.heapify(heap)
        elif kind.cursor < len(self.changes):
            for r in dict.fromkeys(self.changes[kind.cursor:]):
                if self.offer(heap, kind_id, r):
                    heapq.heappush(heap, heap.pop())
        kind.cursor = len(self.changes)
        return heap

    def offer(self, heap: list[_Entry], kind_id: int, r: int) -> bool:
        """Append r's entry for this kind (not yet in heap order); False if r cannot take the kind."""
        if not self.alive[r]:
            return False
        verdict = self.verdict(kind_id, r)
        if verdict is None:
            return False
        heap.append((verdict[0], self.seq[r], r, self.version[r]))
        return True

    def pick(self, heap: list[_Entry], kind_id: int, kind: _Kind) -> tuple[int, _Key, Demand] | None:
        """Pop the best live candidate the limits allow; candidates passed over go back in the heap.

        With no candidate left the kind fails for the rest of the cycle: with the first limit that
        refused it, or ``NO_MATCH``.
        """
        aside: list[_Entry] = []
        refused: str | None = None
        picked = None
        while heap:
            entry = heapq.heappop(heap)
            r = entry[2]
            if not self.alive[r] or self.version[r] != entry[3]:
                continue  # stale: used up, or changed since (a fresher entry was pushed)
            verdict = self.verdict(kind_id, r)
            assert verdict is not None
            refusal = self.limits.refusal(verdict[1]) if verdict[1] else None
            if refusal is None:
                picked = (r, verdict[0], verdict[1])
                break
            refused = refused or refusal
            aside.append(entry)
        for entry in aside:
            heapq.heappush(heap, entry)
        if picked is None:
            kind.failed = refused or NO_MATCH
        return picked

    def bind(self, job_id: Hashable, job: ClassAd, r: int, key: _Key, demand: Demand) -> None:
        ad = self.ads[r]
        self.limits.try_acquire(demand)
        rank = -key[1] if key[1] != math.inf else math.nan
        self.matches.append(Match(job_id, self.names[r], rank, job, ad, demand))
        if not self.want[r]:
            self.alive[r] = False
            return
        count = self.counts[r] = (self.counts[r] if r in self.counts else cur_matches(ad)) + 1
        count_expr = self.count_exprs.get(count)
        if count_expr is None:
            count_expr = self.count_exprs[count] = parse(str(count))
        fresh = self.ads[r] = with_expr(ad, "CurMatches", count_expr)
        self.version[r] += 1
        self.seq[r] = self.next_seq
        self.next_seq += 1
        self.cls[r] = self.reclass(r, fresh, count)
        self.changes.append(r)

    def reclass(self, r: int, ad: ClassAd, count: int) -> int:
        """The class of r after CurMatches became ``count`` (cached: the old class and the count
        decide it, since nothing else changed)."""
        key = (self.cls[r], count)
        found = self.bumped.get(key)
        if found is None:
            found = self.bumped[key] = self.classes.class_of(ad, self.class_names[r])
        return found
