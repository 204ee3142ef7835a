"""Horizontal and runtime clustering: merge jobs of one level, site and transformation.

Grouping
    A *group* is the plain compute jobs (not yet in a cluster, not sub-workflow jobs) sharing
    ``(level, site, (namespace, name, version))``; the level is the job's unit's level in the
    current unit graph (the abstract level before any other pass).  Only a group is ever merged,
    so a horizontal cluster never mixes levels, sites or transformations -- and, since every edge
    goes from a lower level to a higher one, merging never makes a cycle.  Groups are processed by
    level, then by their first job in file order; cluster ids count 1.. per level.

Cutting a group (``_bins``)
    - ``clusters.num`` b: b chunks as even as possible (4 jobs, b = 3: 2, 1, 1); it wins over
      ``clusters.size`` s: chunks of s (4 jobs, s = 3: 3, 1); neither: size 1, nothing merged;
    - with ``pegasus.clusterer.preference = Runtime``: ``clusters.maxruntime`` M gives first-fit
      decreasing bins of summed runtime <= M (a job longer than M stays as it is), else
      ``clusters.num`` k gives k bins by longest-processing-time; neither: a warning and the rules
      above.  A member without a ``runtime`` profile is a ``PlanningError`` naming it.  Without that
      preference ``clusters.maxruntime`` is not read, as in Pegasus: a warning names it, once per
      transformation and value;
    - a group of one job is never clustered; a chunk of one runs as the plain job unless
      ``pegasus.clusterer.allow.single`` is true.

Automatic clustering (``--cluster auto``, or ``clusters.size``/``clusters.maxruntime`` = ``auto``)
    A group whose members set no ``clusters.*`` value under ``--cluster auto`` -- or set one to
    ``auto`` -- is cut into the number of jobs that :func:`sheaf.predict.best_count` says finishes
    soonest under the site's overheads (``Options.auto``), balanced by runtime (longest first onto
    the least loaded job).  The group is given the share of the site's slots that its runtime is of
    its level's (groups of one level run side by side).  A wall-time limit (the members'
    ``maxwalltime`` profile, in minutes, else the model's) bounds every job: at least
    ``ceil(runtime / limit)`` jobs, and first-fit bins of at most the limit when balancing overshoots
    (a task longer than the limit runs alone).  A member's runtime is its ``runtime`` profile, else
    the model's estimate for its transformation; a group with a member of neither is left
    unclustered, with a warning naming it.  A ``clusters.*`` value the user set wins.

The group's ``clusters.*`` values come from each member's effective profiles; members that
disagree are a ``PlanningError`` naming two of them.  A group whose site has no executable for
its aggregator is left unclustered (the resolver warns once per site).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sheaf.errors import PlanningError
from sheaf.model import is_auto, profile_float, profile_int
from sheaf.planner import _bins
from sheaf.planner._context import PassContext
from sheaf.planner._jobs import TKey
from sheaf.planner._naming import horizontal_id
from sheaf.planner._units import Cluster, Units
from sheaf.predict import best_count, group_makespan

GroupKey = tuple[int, str, TKey]


@dataclass(frozen=True, slots=True)
class _Params:
    size: int | None
    num: int | None
    maxruntime: float | None
    auto: bool = False

    @property
    def unset(self) -> bool:
        return self.size is None and self.num is None and self.maxruntime is None


def auto_horizontal(units: Units, ctx: PassContext) -> None:
    """``--cluster auto``: horizontal clustering, each group cut as the model says (module docstring)."""
    horizontal(units, ctx, auto=True)


def horizontal(units: Units, ctx: PassContext, auto: bool = False) -> None:
    """Apply horizontal (or runtime) clustering to ``units`` (module docstring)."""
    groups = _groups(units, ctx)
    counters: dict[int, int] = {}
    shares = _AutoShares(groups, ctx)
    for key in sorted(groups, key=lambda k: (k[0], groups[k][0])):
        members = groups[key]
        if len(members) < 2:
            continue
        params = _params(members, key, ctx)
        if params.auto or (auto and params.unset):
            technique, bins, how = _auto_cut(members, key, ctx, shares)
        else:
            technique, bins, how = _cut(members, key, params, ctx)
        made = 0
        for b in bins:
            if len(b) == 1 and not ctx.options.allow_single:
                continue
            tasks = [members[i] for i in b]
            level, site, tkey = key
            name = horizontal_id(*tkey, level, counters.get(level, 0) + 1)
            aggregator, found = ctx.aggregator_for(tasks, site, name)
            if found is None:
                continue
            counters[level] = counters.get(level, 0) + 1
            units.add(Cluster(tasks, site, technique, name, tkey, aggregator, None, level))
            made += 1
        sizes = _run_lengths([len(b) for b in bins])
        ctx.notes.append(f"{technique}: level {key[0]}, site {key[1]}, {ctx.table.fqns[members[0]]}: "
                         f"{len(members)} jobs -> {made} clusters (chunks {sizes}) by {how}")


def _run_lengths(sizes: list[int]) -> str:
    """``[7, 7, 7, 1]`` -> ``"7x3, 1"`` (a short note even for a group of 10^5 jobs)."""
    runs: list[list[int]] = []
    for size in sizes:
        if runs and runs[-1][0] == size:
            runs[-1][1] += 1
        else:
            runs.append([size, 1])
    return ", ".join(f"{size}x{count}" if count > 1 else str(size) for size, count in runs)


def _groups(units: Units, ctx: PassContext) -> dict[GroupKey, list[int]]:
    levels = ctx.unit_levels(units)
    sites, tkeys, unit_of = ctx.table.sites, ctx.table.tkeys, units.unit_of
    groups: dict[GroupKey, list[int]] = {}
    for j, tkey in enumerate(tkeys):
        if tkey is None or unit_of[j] != j:
            continue
        key = (levels[j], sites[j], tkey)
        found = groups.get(key)
        if found is None:
            groups[key] = [j]
        else:
            found.append(j)
    return groups


def _cut(members: list[int], key: GroupKey, params: _Params,
         ctx: PassContext) -> tuple[str, list[list[int]], str]:
    """(technique, bins over member positions, how it was cut) for one group."""
    if ctx.options.runtime:
        if params.maxruntime is not None or params.num is not None:
            return _by_runtime(members, params, ctx)
        ctx.warnings.append(
            f"runtime clustering: neither clusters.maxruntime nor clusters.num is set for "
            f"{ctx.table.fqns[members[0]]} on site {key[1]} at level {key[0]}; using the horizontal rules")
    elif params.maxruntime is not None:
        # Pegasus's horizontal clusterer reads the profile only under the Runtime preference
        ignored = (f"the pegasus profile clusters.maxruntime ({params.maxruntime:g}) of "
                   f"{ctx.table.fqns[members[0]]} is ignored: runtime clustering needs the property "
                   "pegasus.clusterer.preference = Runtime; its jobs are cut by clusters.num and "
                   "clusters.size")
        if ignored not in ctx.warnings:
            ctx.warnings.append(ignored)
    n = len(members)
    if params.num is not None:
        return "horizontal", _bins.by_num(n, params.num), f"clusters.num {params.num}"
    if params.size is not None:
        return "horizontal", _bins.by_size(n, params.size), f"clusters.size {params.size}"
    return "horizontal", _bins.by_size(n, 1), "no clusters.size or clusters.num (size 1)"


def _by_runtime(members: list[int], params: _Params, ctx: PassContext) -> tuple[str, list[list[int]], str]:
    runtimes = [_runtime(j, ctx) for j in members]
    if params.maxruntime is not None:
        bins, too_long = _bins.first_fit_decreasing(runtimes, params.maxruntime)
        if too_long:
            ids = ", ".join(ctx.table.jobs[members[i]].id for i in too_long[:5])
            ctx.notes.append(f"runtime clustering: {len(too_long)} job(s) longer than clusters.maxruntime "
                             f"{params.maxruntime:g} left unclustered: {ids}")
        return "runtime", bins, f"clusters.maxruntime {params.maxruntime:g}"
    assert params.num is not None
    return "runtime", _bins.longest_processing_time(runtimes, params.num), f"clusters.num {params.num}"


def _runtime(j: int, ctx: PassContext) -> float:
    job = ctx.table.jobs[j]
    value = profile_float(ctx.table.profiles[j], "pegasus", "runtime", subject=f"job '{job.id}'")
    if value is None:
        raise PlanningError(f"job '{job.id}' has no runtime profile, which runtime clustering needs",
                            rule="with pegasus.clusterer.preference = Runtime, clustered jobs have a "
                                 "pegasus runtime profile", value=job.id)
    return value


def _params(members: list[int], key: GroupKey, ctx: PassContext) -> _Params:
    """The group's clusters.* values; members that disagree are a PlanningError."""
    table = ctx.table
    first: tuple[int, _Params] | None = None
    seen: set[int] = set()
    for j in members:
        profiles = table.profiles[j]
        if id(profiles) in seen:
            continue
        seen.add(id(profiles))
        subject = f"job '{table.jobs[j].id}'"
        pegasus = profiles.get("pegasus", {})
        auto = is_auto(pegasus.get("clusters.size")) or is_auto(pegasus.get("clusters.maxruntime"))
        size = None if is_auto(pegasus.get("clusters.size")) else \
            profile_int(profiles, "pegasus", "clusters.size", subject=subject)
        maxruntime = None if is_auto(pegasus.get("clusters.maxruntime")) else \
            profile_float(profiles, "pegasus", "clusters.maxruntime", subject=subject)
        num = profile_int(profiles, "pegasus", "clusters.num", subject=subject)
        params = _Params(size, num, maxruntime, auto)
        if first is None:
            first = (j, params)
        elif params != first[1]:
            _disagree(first, (j, params), key, ctx)
    assert first is not None
    return first[1]


def _disagree(a: tuple[int, _Params], b: tuple[int, _Params], key: GroupKey, ctx: PassContext) -> None:
    names = {"size": "clusters.size", "num": "clusters.num", "maxruntime": "clusters.maxruntime",
             "auto": "clusters.* = auto"}
    field_name = next(f for f in names if getattr(a[1], f) != getattr(b[1], f))
    ida, idb = ctx.table.jobs[a[0]].id, ctx.table.jobs[b[0]].id
    raise PlanningError(
        f"jobs '{ida}' and '{idb}' are clustered together (level {key[0]}, site {key[1]}, "
        f"{ctx.table.fqns[a[0]]}) but have different {names[field_name]} values: "
        f"{getattr(a[1], field_name)} and {getattr(b[1], field_name)}",
        rule="jobs of one horizontal group agree on clusters.size, clusters.num and clusters.maxruntime",
        value=idb)


class _AutoShares:
    """Each group's share of its site's slots under automatic clustering: its runtime's share of its
    level's on that site (groups of one level run side by side), computed once per pass."""

    def __init__(self, groups: dict[GroupKey, list[int]], ctx: PassContext) -> None:
        self._groups, self._ctx = groups, ctx
        self._totals: dict[tuple[int, str], float] | None = None

    def runtime(self, j: int) -> float | None:
        """A member's runtime: its profile, else the model's estimate for its transformation."""
        table = self._ctx.table
        value = profile_float(table.profiles[j], "pegasus", "runtime", subject=f"job '{table.jobs[j].id}'")
        return value if value is not None else self._ctx.auto_model().estimates.get(table.fqns[j])

    def slots(self, key: GroupKey, total: float) -> int:
        if self._totals is None:
            self._totals = {}
            for (level, site, _), members in self._groups.items():
                known = [self.runtime(j) for j in members]
                work = sum(v or 0.0 for v in known)
                self._totals[(level, site)] = self._totals.get((level, site), 0.0) + work
        whole = self._totals.get((key[0], key[1]), 0.0)
        slots = self._ctx.auto_model().slots
        return max(1, round(slots * total / whole)) if whole > 0 else slots


def _auto_cut(members: list[int], key: GroupKey, ctx: PassContext,
              shares: _AutoShares) -> tuple[str, list[list[int]], str]:
    """Automatic clustering of one group (module docstring)."""
    runtimes = [shares.runtime(j) for j in members]
    known = [value for value in runtimes if value is not None]
    fqn = ctx.table.fqns[members[0]]
    if len(known) < len(runtimes):
        missing = ctx.table.jobs[members[runtimes.index(None)]].id
        ctx.warnings.append(f"automatic clustering: job '{missing}' ({fqn}) has no runtime profile and no "
                            f"earlier run gives one; its group at level {key[0]} on site {key[1]} is not "
                            "clustered")
        return "horizontal", _bins.by_size(len(members), 1), "auto: a member's runtime is unknown (size 1)"
    model = ctx.auto_model()
    overheads = model.overheads(key[1])
    total = sum(known)
    slots = shares.slots(key, total)
    limit = _walltime(members[0], ctx)
    fewest = math.ceil(total / limit) if limit else 1

    def cut(count: int) -> list[list[int]]:
        bins = _bins.longest_processing_time(known, count)
        if limit and any(sum(known[i] for i in b) > limit for b in bins):
            fitted, alone = _bins.first_fit_decreasing(known, limit)
            bins = fitted + [[i] for i in alone]
        return bins

    # longest first: the order the jobs are costed in, and the order they are written and submitted in
    bins = sorted(cut(best_count(known, overheads, slots, fewest=fewest, cut=cut)),
                  key=lambda b: -sum(known[i] for i in b))
    loads = [sum(known[i] for i in b) for b in bins]
    clustered = group_makespan(loads, [len(b) for b in bins], overheads, slots)
    single = group_makespan(sorted(known, reverse=True), [1] * len(known), overheads, slots)
    ctx.auto_choices.append({"level": key[0], "site": key[1], "transformation": fqn, "tasks": len(members),
                             "jobs": len(bins), "slots": slots, "predicted_s": clustered,
                             "unclustered_s": single, "walltime_s": limit})
    return "horizontal", bins, (f"auto: {len(bins)} jobs on {slots} slots, predicted {clustered:.1f} s "
                                f"against {single:.1f} s unclustered")


def _walltime(j: int, ctx: PassContext) -> float | None:
    """The wall-time limit of a member's job in seconds: its ``maxwalltime`` profile (minutes; globus
    over pegasus), else the model's."""
    profiles, subject = ctx.table.profiles[j], f"job '{ctx.table.jobs[j].id}'"
    minutes = profile_float(profiles, "globus", "maxwalltime", subject=subject)
    if minutes is None:
        minutes = profile_float(profiles, "pegasus", "maxwalltime", subject=subject)
    if minutes:
        return minutes * 60.0
    return ctx.auto_model().walltime

