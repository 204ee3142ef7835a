"""Data reuse: jobs whose outputs already exist are not planned (pegasus-plan's default; ``--force`` off).

The rule, over the abstract workflow before anything else is planned:

1. a job is *reused* when it produces at least one file and every file it produces has a replica in
   the replica catalog;
2. then, from the sinks up (reverse topological order), a job whose children are all reused or pruned
   is pruned too when every file it marks ``stage_out`` has a replica: nothing that runs needs it, and
   nothing the user asked to keep is lost.

The remaining jobs' inputs that pruned jobs would have made are now workflow inputs, staged in from
the catalog like any other.  The files pruned jobs mark ``stage_out`` are returned too (with their
``register_replica`` flags): they are still the workflow's outputs, so the data pass stages them out
from where the catalog has them, as Pegasus keeps only the stage-out and register jobs of a fully
reused workflow (test/core 022-data-reuse-full).  The plan lists the pruned jobs in a warning.  A
workflow with a cycle is left as it is (the planner reports the cycle next).
"""

from __future__ import annotations

from dataclasses import replace

from sheaf.model import Graph, ReplicaCatalog, Workflow, all_uses, build_graph

#: the workflow left to plan, the pruned jobs' ids, the files they mark ``stage_out`` (lfn ->
#: registered), and the job graph when nothing was pruned (None when jobs were, or the catalog is empty)
Reduced = tuple[Workflow, list[str], dict[str, bool], Graph | None]


def reduce_workflow(workflow: Workflow, rc: ReplicaCatalog | None) -> Reduced:
    """``workflow`` without its reusable jobs, their ids in file order, the files they mark
    ``stage_out`` (lfn -> registered; module docstring), and the job graph when nothing was pruned
    from a non-empty catalog: built here watching the catalog's names, it is the planner's then
    (``ValidationError`` as ``build_graph`` raises it)."""
    if rc is None or not len(rc):
        return workflow, [], {}, None
    exact = {r.lfn for r in rc if not r.regex}
    has_regex = any(r.regex for r in rc)
    graph = build_graph(workflow, watch=exact)
    known: dict[str, bool] = {}

    def available(lfn: str) -> bool:
        hit = known.get(lfn)
        if hit is None:
            hit = known[lfn] = lfn in exact or (has_regex and bool(rc.lookup(lfn)))
        return hit

    if has_regex:  # a pattern can match any name: every output is looked up
        made = (u.lfn for job in workflow.jobs.values() for u in all_uses(job) if u.type != "input")
        if not any(available(lfn) for lfn in made):
            return workflow, [], {}, graph
    elif not graph.produced_watched:
        return workflow, [], {}, graph
    order = graph.topological_order()
    if order is None:
        return workflow, [], {}, graph
    ids = graph.ids
    outputs = [[(u.lfn, u.stage_out) for u in all_uses(workflow.jobs[i]) if u.type != "input"] for i in ids]
    gone = [bool(outs) and all(available(lfn) for lfn, _ in outs) for outs in outputs]
    for j in reversed(order):
        if gone[j]:
            continue
        children = graph.children(j)
        if len(children) and all(gone[c] for c in children) and all(
                available(lfn) for lfn, keep in outputs[j] if keep):
            gone[j] = True
    if not any(gone):
        return workflow, [], {}, graph
    kept = {ids[j] for j in range(len(ids)) if not gone[j]}
    jobs = {i: job for i, job in workflow.jobs.items() if i in kept}
    deps = {p: [c for c in cs if c in kept] for p, cs in workflow.dependencies.items() if p in kept}
    pruned = [ids[j] for j in range(len(ids)) if gone[j]]
    delivered: dict[str, bool] = {}
    for job_id in pruned:
        for use in all_uses(workflow.jobs[job_id]):
            if use.type != "input" and use.stage_out:
                delivered[use.lfn] = delivered.get(use.lfn, False) or use.register_replica
    return replace(workflow, jobs=jobs, dependencies=deps), pruned, delivered, None
