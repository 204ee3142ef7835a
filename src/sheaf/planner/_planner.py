"""``plan()``: the abstract workflow in, the executable workflow out -- pure and deterministic.

Stages, each O(V + E) (clustering adds O(n log n) sorts within groups):

1. catalogs: the standalone ones win over the workflow's inline ones (``merged_with``);
2. the job graph (``build_graph``), a topological order and levels (``Graph.levels``: 1 for a root,
   else 1 + the maximum level of the parents); a cycle is a ``ValidationError`` with its path;
3. site selection and per-job facts (``_sites``, ``_jobs``);
4. the clustering passes, in the order given (``--cluster label,horizontal``);
5. assembly: one ``ExecJob`` per unit, edges mapped through the job -> unit array and merged.

Recursive clustering (the passes' contract with one another)
    Each pass sees the result of the previous ones as its workflow: a cluster made earlier is one
    opaque node, with its own level in the clustered graph, its site, and no transformation of its
    own.  Horizontal and label clustering only ever merge *plain* jobs, so they never merge an
    earlier cluster again (``label,horizontal``: label clusters stay as they are and the unlabelled
    jobs are clustered horizontally, by their level in the label-clustered graph; ``horizontal,label``:
    labelled jobs already in a horizontal cluster keep it).  ``whole`` is the exception: it means
    "one job for the workflow", so it flattens earlier clusters into ``merge_whole-wf``.

Output order and determinism: executable jobs come in the file order of the earliest of their tasks; edges
are unique ``(parent, child)`` pairs.  Nothing depends on hash order, so the plan is identical
under any ``PYTHONHASHSEED``; the Random selector is seeded (``Options.seed``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sheaf._gc import gc_paused
from sheaf.errors import PlanningError, ValidationError
from sheaf.model import (
    Graph,
    Properties,
    ReplicaCatalog,
    SiteCatalog,
    TransformationCatalog,
    Workflow,
    build_graph,
    job_argv,
    merge_profiles,
)
from sheaf.planner._aggregate import AggregatorResolver, combine
from sheaf.planner._context import PassContext
from sheaf.planner._data import Inputs, graph_inputs, plan_data
from sheaf.planner._horizontal import auto_horizontal, horizontal
from sheaf.planner._jobs import JobTable, resolve_jobs
from sheaf.planner._label import label, whole
from sheaf.planner._naming import safe, unique
from sheaf.planner._options import code_generator, mapped_aggregator_note, notifications_on, read_options
from sheaf.planner._plan import DataOptions, ExecJob, ExecutableWorkflow, Task
from sheaf.planner._reuse import reduce_workflow
from sheaf.planner._sites import make_selector, selected_sites
from sheaf.planner._units import Cluster, Units, contract
from sheaf.predict import AutoModel

_PASSES = {"horizontal": horizontal, "label": label, "whole": whole, "auto": auto_horizontal}


def plan(
    workflow: Workflow,
    *,
    tc: TransformationCatalog | None,
    sc: SiteCatalog | None,
    rc: ReplicaCatalog | None,
    properties: Properties,
    sites: Sequence[str] | None = None,
    output_sites: Sequence[str] = (),
    clustering: Sequence[str] = (),
    seed: int | None = None,
    data: DataOptions | None = None,
    auto: AutoModel | Callable[[], AutoModel] | None = None,
) -> ExecutableWorkflow:
    """The executable workflow of ``workflow`` (module docstring); no file system access but the data
    pass's ``--input-dir`` test.  ``data``: the data-staging options; the data jobs are added here when
    ``data.submit_dir`` names the submit directory, else the caller runs ``plan_data`` before writing.
    ``auto``: the platform and overheads ``--cluster auto`` optimises under (default: this package's
    local defaults on one slot), or a function that builds them, called only when a group is clustered
    automatically."""
    data = data or DataOptions()
    with gc_paused():  # planning builds millions of small acyclic objects
        pruned: list[str] = []
        reused: dict[str, bool] = {}
        graph = None
        if not data.force:
            known = rc.merged_with(workflow.replica_catalog) if rc is not None else workflow.replica_catalog
            workflow, pruned, reused, graph = reduce_workflow(workflow, known)
        result, found = _plan(workflow, tc, sc, rc, properties, sites, output_sites, clustering, seed,
                       auto or AutoModel(), graph)
        del graph  # let go with the planner's own references, before the data pass
        result.reused_outputs = reused
        if pruned:
            shown = ", ".join(pruned[:10]) + (f" and {len(pruned) - 10} more" if len(pruned) > 10 else "")
            result.warnings.append(f"data reuse: {len(pruned)} job(s) not planned, their outputs are in the "
                                   f"replica catalog: {shown} (--force plans every job)")
        result.data = data
        result.input_dir = result.input_dir or data.input_dir
        if data.submit_dir is not None:
            plan_data(result, data.submit_dir, data.exec_dir, data.keep, inputs=found)
    return result


def _plan(workflow: Workflow, tc: TransformationCatalog | None, sc: SiteCatalog | None,
          rc: ReplicaCatalog | None, properties: Properties, sites: Sequence[str] | None,
          output_sites: Sequence[str], clustering: Sequence[str], seed: int | None,
          auto: AutoModel | Callable[[], AutoModel],
          graph: Graph | None = None) -> tuple[ExecutableWorkflow, Inputs]:
    """The executable workflow, and the workflow's inputs its job graph found (``graph_inputs``);
    ``graph``: the workflow's job graph where data reuse built it (else it is built here)."""
    tc = (tc.merged_with(workflow.transformation_catalog) if tc is not None
          else workflow.transformation_catalog)
    sc = sc.merged_with(workflow.site_catalog) if sc is not None else workflow.site_catalog
    rc = rc.merged_with(workflow.replica_catalog) if rc is not None else workflow.replica_catalog
    warnings: list[str] = []
    options = code_generator(properties, read_options(properties, clustering, seed), warnings)
    options = replace(options, auto=auto)
    mapped = mapped_aggregator_note(properties.get_str("pegasus.clusterer.job.aggregator") or "",
                                    "pegasus.clusterer.job.aggregator")
    if mapped is not None:
        warnings.append(mapped)
    if "label" not in options.techniques and _asks_for_decaf(workflow):
        # a Decaf data-flow job (DAX <dflow>) runs as one Decaf program whatever the clustering options
        options = replace(options, techniques=(*options.techniques, "label"))
        warnings.append("jobs ask for the decaf aggregator (a Decaf data-flow job): clustered by label, "
                        "as Pegasus runs a data-flow job whatever --cluster says")
    chosen = selected_sites(("local",) if options.submit_host_only else sites, sc)
    graph, order, levels = _graph(workflow, graph)
    warnings.extend(_shared_output_warnings(graph))
    # workflow-level profiles sit just above properties (model.effective_profiles)
    prop_layer = merge_profiles(properties.profiles(), workflow.profiles)
    table = resolve_jobs(workflow, tc=tc, sc=sc, prop_layer=prop_layer, options=options,
                         selected=chosen, selector=make_selector(options.selector, options.seed),
                         fallback=() if sites else ("local",))
    _one_site_per_shared_output(graph, table)
    position = [0] * len(order)
    for pos, j in enumerate(order):
        position[j] = pos
    if tc is None:
        warnings.append("no transformation catalog: every job runs its transformation's name, "
                        "found on the PATH of its site")
    ctx = PassContext(graph, levels, position, table, options, AggregatorResolver(tc, sc, options, warnings),
                      warnings=warnings, notes=list(table.notes))
    units = Units(len(table))
    for technique in options.techniques:
        _PASSES[technique](units, ctx)
    ctx.notes.insert(0, f"site selection: {options.selector} (seed {options.seed}) over {', '.join(chosen)}")
    result = ExecutableWorkflow(workflow.name, workflow, properties, sites=chosen,
                                metadata={"selector": options.selector, "seed": str(options.seed)},
                                output_sites=tuple(output_sites), clustering=options.techniques,
                                notes=ctx.notes, warnings=ctx.warnings, site_catalog=sc, replica_catalog=rc,
                                stageable=table.staged, required=table.required, containers=table.containers,
                                transformation_hooks=_transformation_hooks(table, tc),
                                notifications=notifications_on(properties),
                                autocluster={"groups": ctx.auto_choices} if ctx.auto_choices else {},
                                auto_model=ctx.auto_model() if "auto" in options.techniques else None)
    _assemble(result, units, ctx)
    return result, graph_inputs(graph)


def _transformation_hooks(table: JobTable, tc: TransformationCatalog | None) -> dict[str, Mapping[str, Any]]:
    """Task transformation (``Task.transformation``) -> the hooks its catalog entry declares: Pegasus
    runs a transformation's notifications for every job that invokes it."""
    out: dict[str, Mapping[str, Any]] = {}
    seen: set[str] = set()
    for key, fqn in zip(table.tkeys, table.fqns, strict=True):
        if key is None or tc is None or fqn in seen:
            continue
        seen.add(fqn)
        found = tc.lookup(*key)
        if found is not None and found.hooks:
            out[fqn] = found.hooks
    return out


def _graph(workflow: Workflow, graph: Graph | None) -> tuple[Graph, list[int], list[int]]:
    graph = graph if graph is not None else build_graph(workflow)
    order = graph.topological_order()
    if order is None:
        cycle = graph.find_cycle() or []
        raise ValidationError("the workflow has a cycle", rule="the job graph is acyclic",
                              value=cycle[0] if cycle else None, detail="cycle: " + " -> ".join(cycle))
    return graph, order, graph.levels(order)


#: files produced by more than one job named each in a warning; the rest counted in one more
SHARED_OUTPUTS_SHOWN = 10


def _shared_output_warnings(graph: Graph) -> list[str]:
    """A warning for each file several jobs produce: Pegasus plans it without a word, but which copy
    the readers and the stage-out see depends on the order the producers run in."""
    shared = graph.shared_outputs
    ids = graph.ids
    out = []
    for lfn, makers in list(shared.items())[:SHARED_OUTPUTS_SHOWN]:
        names = ", ".join(f"'{ids[m]}'" for m in makers)
        out.append(f"file '{lfn}' is produced by {len(makers)} jobs: {names}; the jobs that read it "
                   f"depend on the last, '{ids[makers[-1]]}' (as pegasus-plan infers data dependencies), "
                   "and the copy there once every producer has run is the one staged out")
    if len(shared) > SHARED_OUTPUTS_SHOWN:
        out.append(f"{len(shared) - SHARED_OUTPUTS_SHOWN} more file(s) are produced by more than one job")
    return out


def _one_site_per_shared_output(graph: Graph, table: JobTable) -> None:
    """Refuse a file whose producers run on different sites: each site would hold its own copy, so a
    reader there would read that site's copy rather than the last producer's, and the copies' deliveries
    would contradict one another's integrity record."""
    sites = table.sites
    for lfn, makers in graph.shared_outputs.items():
        if len({sites[m] for m in makers}) > 1:
            shown = ", ".join(f"'{graph.ids[m]}' on {sites[m]}" for m in makers)
            raise PlanningError(f"file '{lfn}' is produced on more than one site ({shown})",
                                rule="the jobs that produce one file run on one site", value=lfn,
                                anchor=lfn)


def _assemble(result: ExecutableWorkflow, units: Units, ctx: PassContext) -> None:
    if not units.clustered:
        jobs = _plain_jobs(range(len(ctx.table)), ctx.levels, ctx)
        result.edges = list(ctx.graph.edges())
    else:
        ug = contract(units, ctx.graph)
        if not ug.acyclic:  # the passes check this; a failure here is a planner bug
            raise PlanningError("clustering produced a cycle", rule="the executable graph is acyclic")
        plain = [u for u in ug.units if u < units.n]
        plain_jobs = iter(_plain_jobs(plain, [ug.levels[ug.compact[j]] for j in plain], ctx))
        jobs = []
        for c, unit in enumerate(ug.units):
            cluster = units.cluster(unit)
            jobs.append(next(plain_jobs) if cluster is None else _cluster(cluster, ctx, ug.levels[c]))
        result.edges = ug.edges()
    for job, name in zip(jobs, unique([job.id for job in jobs]), strict=True):
        job.id = name
    result.jobs = jobs


def _tasks(members: list[int], ctx: PassContext) -> tuple[Task, ...]:
    table = ctx.table
    jobs, fqns, executables, profiles, levels = (table.jobs, table.fqns, table.executables, table.profiles,
                                                 ctx.levels)
    return tuple([Task(jobs[j].id, fqns[j], executables[j], job_argv(jobs[j].id, jobs[j].arguments),
                       profiles[j], levels[j]) for j in members])


def _plain_jobs(selection: Iterable[int], levels: Sequence[int], ctx: PassContext) -> list[ExecJob]:
    """One ExecJob per plain job of ``selection`` (hot at 10^6 jobs: a flat loop, names cached)."""
    table = ctx.table
    jobs, sites, fqns, executables, profiles = (table.jobs, table.sites, table.fqns, table.executables,
                                                table.profiles)
    abstract_levels = ctx.levels
    prefix: dict[str, str] = {}
    result: list[ExecJob] = []
    for j, level in zip(selection, levels, strict=True):
        job = jobs[j]
        name = prefix.get(job.name)
        if name is None:
            name = prefix[job.name] = safe(job.name) + "_"
        task = Task(job.id, fqns[j], executables[j], job_argv(job.id, job.arguments), profiles[j],
                    abstract_levels[j])
        if job.is_subworkflow:
            result.append(ExecJob(name + safe(job.id), "subworkflow", "local", None, level, (task,), None,
                                  task.profiles, None, task.argv))
        else:
            result.append(ExecJob(name + safe(job.id), "compute", sites[j], fqns[j], level, (task,), None,
                                  task.profiles, task.executable, task.argv))
    return result


def _cluster(cluster: Cluster, ctx: PassContext, level: int) -> ExecJob:
    table = ctx.table
    tasks = _tasks(cluster.members, ctx)
    aggregator = ctx.resolver.resolve(cluster.site, cluster.aggregator)
    assert aggregator is not None  # a pass only makes clusters whose aggregator resolved
    combined = combine([t.profiles for t in tasks], ctx.options.label_key, cluster.name, ctx.notes)
    profiles = merge_profiles(combined, aggregator.profiles)
    transformation = table.fqns[cluster.members[0]] if cluster.tkey is not None else None
    return ExecJob(cluster.name, "cluster", cluster.site, transformation, level, tasks,
                   aggregator=cluster.aggregator,  # type: ignore[arg-type]  # checked by _options
                   profiles=profiles, executable=aggregator.executable,
                   arguments=ctx.resolver.arguments(aggregator, profiles, cluster.name),
                   label=cluster.label, technique=cluster.technique)


def _asks_for_decaf(workflow: Workflow) -> bool:
    """Whether a job's pegasus profiles ask for the decaf aggregator with a label (a Decaf data-flow job)."""
    for job in workflow.jobs.values():
        pegasus = job.profiles.get("pegasus") if job.profiles else None
        if pegasus and str(pegasus.get("job.aggregator", "")).lower() == "decaf" and pegasus.get("label"):
            return True
    return False
