"""Label and whole-workflow clustering, and the check that makes a labelling valid.

Label clustering
    Every plain compute job (not yet in a cluster, not a sub-workflow job) whose effective pegasus
    profile named by ``pegasus.clusterer.label.key`` (default ``label``) is set joins the cluster
    ``merge_<label>`` of that value; unlabelled jobs stay as they are.  A cluster's tasks run in
    the abstract workflow's topological order, so dependencies inside a cluster are honoured.
    Jobs of one label on different sites are a ``PlanningError``; a label of a single job runs as
    the plain job unless ``pegasus.clusterer.allow.single`` is true.

Whole-workflow clustering
    A label clustering where every compute job carries the label ``whole-wf`` (``merge_whole-wf``):
    it also absorbs clusters made by earlier passes (their tasks are flattened into it -- an
    aggregator cannot run another aggregator).  Sub-workflow jobs stay out, so a sub-workflow job
    between two compute jobs (``a -> subworkflow -> b``) makes whole clustering impossible: that is
    reported as the cycle it would create.

Validity (the Pegasus manual's "outstanding issue")
    A labelling is valid when the graph of units, with each label's jobs contracted into one node,
    is acyclic.  ``A(x) -> B -> C(x)`` is not: ``merge_x`` would have to run both before and after
    ``B``.  The check contracts *every* label (even those a missing aggregator will leave
    unclustered) and reports the first cycle with its path through the abstract jobs, e.g.
    ``A(x) -> B -> C(x)`` -- ``~`` marks a step between two jobs of one cluster.  Edges are never
    dropped: an edge entering a cluster at a member that is not one of its roots still orders the
    whole cluster after its source.
"""

from __future__ import annotations

from sheaf.errors import PlanningError
from sheaf.model import EMPTY
from sheaf.planner._context import PassContext
from sheaf.planner._naming import WHOLE_ID, WHOLE_LABEL, label_id
from sheaf.planner._units import Cluster, UnitGraph, Units, contract


def label(units: Units, ctx: PassContext) -> None:
    """Apply label clustering to ``units`` (module docstring)."""
    key = ctx.options.label_key
    groups: dict[str, list[int]] = {}
    for j, profiles in enumerate(ctx.table.profiles):
        if ctx.table.tkeys[j] is None or units.unit_of[j] != j:
            continue
        value = profiles.get("pegasus", EMPTY).get(key)
        if value:
            groups.setdefault(value, []).append(j)
    _apply(units, ctx, {value: members for value, members in groups.items()
                        if len(members) > 1 or ctx.options.allow_single}, "label")


def whole(units: Units, ctx: PassContext) -> None:
    """Apply whole-workflow clustering to ``units`` (module docstring)."""
    members = [j for j, tkey in enumerate(ctx.table.tkeys) if tkey is not None]
    if len(members) > 1 or (members and ctx.options.allow_single):
        _apply(units, ctx, {WHOLE_LABEL: members}, "whole")


def _apply(units: Units, ctx: PassContext, groups: dict[str, list[int]], technique: str) -> None:
    position = ctx.topo_position
    clusters: list[Cluster] = []
    for value, members in groups.items():
        members.sort(key=position.__getitem__)
        site = _one_site(value, members, ctx)
        name = WHOLE_ID if technique == "whole" else label_id(value)
        tkeys = {ctx.table.tkeys[j] for j in members}
        tkey = next(iter(tkeys)) if len(tkeys) == 1 else None
        clusters.append(Cluster(members, site, technique, name, tkey, "", value))
    trial = Units(units.n, list(units.unit_of), list(units.clusters))
    for cluster in clusters:
        trial.add(cluster)
    _check_acyclic(trial, contract(trial, ctx.graph, witness=True), ctx)
    for cluster in clusters:
        cluster.aggregator, found = ctx.aggregator_for(cluster.members, cluster.site, cluster.name)
        if found is not None:
            units.add(cluster)
        ctx.notes.append(f"{technique}: label {cluster.label!r}: {len(cluster.members)} jobs on site "
                         f"{cluster.site} -> {cluster.name if found else 'left unclustered'}")


def _one_site(value: str, members: list[int], ctx: PassContext) -> str:
    sites = ctx.table.sites
    first = members[0]
    for j in members:
        if sites[j] != sites[first]:
            a, b = ctx.table.jobs[first].id, ctx.table.jobs[j].id
            if value == WHOLE_LABEL:
                raise PlanningError(
                    f"whole-workflow clustering needs every job on one site, but '{a}' runs on "
                    f"'{sites[first]}' and '{b}' on '{sites[j]}'",
                    rule="whole clustering runs the workflow as one job on one site "
                         "(choose one with --sites)",
                    value=b)
            raise PlanningError(
                f"jobs '{a}' and '{b}' carry label '{value}' but run on different sites "
                f"('{sites[first]}' and '{sites[j]}')",
                rule="the jobs of one label run on one site (pin them with the execution.site profile)",
                value=value)
    return sites[first]


def _check_acyclic(units: Units, ug: UnitGraph, ctx: PassContext) -> None:
    if ug.acyclic:
        return
    cycle = ug.find_cycle()[:-1]
    # The graph before this pass was acyclic, so the cycle passes through a cluster of this pass:
    # begin (and end) there.
    start = next(i for i, c in enumerate(cycle) if _new(units.cluster(ug.units[c])))
    cycle = cycle[start:] + cycle[:start] + [cycle[start]]
    hops = [ug.witness[(cycle[i], cycle[i + 1])] for i in range(len(cycle) - 1)]
    culprit = units.cluster(ug.units[cycle[0]])
    assert culprit is not None
    path = _render(hops, units, ctx)
    what = ("whole-workflow clustering is impossible: a job outside the cluster (a sub-workflow job) "
            "would run both after and before it" if culprit.technique == "whole"
            else f"invalid labelling: the jobs labelled '{culprit.label}' cannot run as one job "
                 f"({culprit.name}): a job outside the label would have to run both after and before it")
    raise PlanningError(what, rule="a label's jobs do not depend on each other through jobs outside "
                        "the label", value=culprit.label, detail=f"cycle: {path}  ('~': same cluster)")


def _new(cluster: Cluster | None) -> bool:
    """A cluster of the pass being checked (its aggregator is chosen only after the check)."""
    return cluster is not None and cluster.technique in ("label", "whole") and not cluster.aggregator


def _render(hops: list[tuple[int, int]], units: Units, ctx: PassContext) -> str:
    def name(j: int) -> str:
        cluster = units.cluster(units.unit_of[j])
        job_id = ctx.table.jobs[j].id
        return f"{job_id}({cluster.label})" if cluster is not None and cluster.label else job_id

    text = name(hops[0][0])
    for i, (a, b) in enumerate(hops):
        if i > 0 and a != hops[i - 1][1]:
            text += " ~ " + name(a)
        text += " -> " + name(b)
    if hops[-1][1] != hops[0][0]:
        text += " ~ " + name(hops[0][0])
    return text
