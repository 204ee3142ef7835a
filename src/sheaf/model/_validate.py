"""Validation of an abstract workflow against its catalogs, and the summary ``sheaf validate`` prints.

Rules, checked in this order, the first broken one raised as a ``ValidationError`` whose ``value``
is the offending id or lfn (readers use it to find the line in the file):

1. dependencies name known jobs, no job depends on itself (``build_graph``);
2. no job produces a file outside its working directory: a produced lfn is not empty, not absolute
   and has no ``..`` part (``build_graph``; a file several jobs produce is valid, as in Pegasus);
3. the graph is acyclic -- the error's detail is the cycle's path ``a -> b -> c -> a``;
4. with a transformation catalog, every compute job's transformation is declared in it;
5. profile values that sheaf reads as numbers are numbers (``clusters.size`` = ``"three"`` is an
   error), on jobs and in every catalog entry;
6. names fit in file names and text holds no NUL (``check_names``): the workflow name, a job id,
   a transformation name and a node label take at most ``MAX_NAME_BYTES`` bytes (UTF-8), a
   transformation namespace and version at most ``MAX_PART_BYTES``.  They become DAGMan node and
   file names (``<name>_<id>.sub``, ``merge_<namespace-name-version>_PID<l>_ID<n>.sub``,
   ``<workflow>.dag.config``, ``create_dir_<workflow>_0_<site>``), which Linux and HTCondor limit to
   255 bytes; refusing a longer name here, with its line, is clearer than a plan failing with
   ENAMETOOLONG.  These names also go into submit descriptions as ClassAd strings, which hold no
   line break: no newline or carriage return in them.  A NUL can reach no program, file name or
   environment, so no id, name, label, lfn, stream or argument may hold one;
7. every quote in a job's arguments is closed, so they split into the argv its program receives
   (``job_argv``), as the planner splits them.

Duplicate job ids are a reader's concern (the model holds a dict), reported with their line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sheaf.errors import ValidationError
from sheaf.model._arguments import job_argv
from sheaf.model._catalogs import SiteCatalog, TransformationCatalog, TransformationKey
from sheaf.model._graph import Graph, build_graph
from sheaf.model._profiles import Profiles, check_profile_values, merge_profiles
from sheaf.model._properties import Properties
from sheaf.model._workflow import Job, Workflow


@dataclass(frozen=True, slots=True)
class Summary:
    """What ``sheaf validate`` prints about a valid workflow."""

    name: str
    jobs: int
    compute_jobs: int
    subworkflow_jobs: int
    files: int
    edges: int
    levels: int
    transformations: int
    sites: tuple[str, ...]


def validate(
    workflow: Workflow,
    tc: TransformationCatalog | None = None,
    sc: SiteCatalog | None = None,
) -> tuple[Graph, list[int], Summary]:
    """Check ``workflow`` (module docstring); return its graph, levels and summary."""
    graph = build_graph(workflow)
    order = graph.topological_order()
    if order is None:
        cycle = graph.find_cycle() or []
        raise ValidationError(
            "the workflow has a cycle", rule="the job graph is acyclic", value=cycle[0] if cycle else None,
            detail="cycle: " + " -> ".join(cycle))
    levels = graph.levels(order)
    transformations = _transformations(workflow)
    check_names(workflow, transformations)
    _check_transformations(workflow, tc)
    check_profiles(workflow, tc, sc)
    for job in workflow.jobs.values():
        if job.arguments:
            job_argv(job.id, job.arguments)
    return graph, levels, _summary(workflow, graph, levels, tc, sc, len(transformations))


#: bytes a workflow name, job id, transformation name or node label may take (module docstring)
MAX_NAME_BYTES = 100
#: bytes a transformation namespace or version may take
MAX_PART_BYTES = 50


_UNSAFE = re.compile("[\x00\n\r]")


def _check_name(value: str | None, what: str, limit: int = MAX_NAME_BYTES) -> None:
    if value is None:
        return
    if "\x00" in value:
        raise ValidationError(f"{what} holds a NUL character", rule="names, lfns and arguments hold no NUL",
                              value=value)
    if "\n" in value or "\r" in value:
        raise ValidationError(f"{what} holds a line break", rule="names hold no newline or carriage return",
                              value=value)
    if len(value) * 4 > limit and len(value.encode("utf-8", "surrogatepass")) > limit:
        kind = what.split(" ", maxsplit=1)[0]
        raise ValidationError(f"{what} is longer than {limit} bytes",
                              rule=f"{kind} names fit in file names ({limit} bytes at most)", value=value)


def check_names(workflow: Workflow, transformations: set[TransformationKey] | None = None) -> None:
    """Rule 6 of the module docstring, at C speed on valid input: each distinct value checked once,
    ids only when one is long enough to matter or a NUL is among them.  (Lfns, arguments and
    streams are checked by ``nul_problem`` when the reader saw that its text can hold a NUL.)"""
    if transformations is None:
        transformations = _transformations(workflow)
    _check_name(workflow.name, "the workflow name")
    ids = workflow.jobs.keys()
    if ids and (max(map(len, ids)) * 4 > MAX_NAME_BYTES or _UNSAFE.search("".join(ids))):
        for job_id in ids:
            _check_name(job_id, "a job id")
    for namespace, name, version in transformations:
        _check_name(name, "a transformation name")
        _check_name(namespace, "a transformation namespace", MAX_PART_BYTES)
        _check_name(version, "a transformation version", MAX_PART_BYTES)
    for label in {job.node_label for job in workflow.jobs.values()}:
        _check_name(label, "a node label")


def _transformations(workflow: Workflow) -> set[TransformationKey]:
    return {(job.namespace, job.name, job.version) for job in workflow.jobs.values()
            if not job.is_subworkflow}


def nul_problem(workflow: Workflow) -> tuple[str, ValidationError] | None:
    """The id of the first job with an lfn, argument or stream holding a NUL, and the error, or ``None``.

    A full walk: readers call it only when their text can hold a NUL (an escape such as ``\\0``)."""
    for job in workflow.jobs.values():
        texts = (*(use.lfn for use in job.uses), *job.arguments, job.stdin, job.stdout, job.stderr, job.file)
        for text in texts:
            if text is not None and "\x00" in str(text):
                return job.id, ValidationError(
                    f"an lfn, argument or stream of job '{job.id}' holds a NUL character",
                    rule="names, lfns and arguments hold no NUL", value=str(text))
    return None


def _check_transformations(workflow: Workflow, tc: TransformationCatalog | None) -> None:
    if tc is None:
        return
    for job in workflow.jobs.values():
        if job.is_subworkflow:
            continue
        if tc.lookup(job.namespace, job.name, job.version) is None:
            many = tc.candidates(job.namespace, job.name, job.version)
            why = (f"ambiguous: {', '.join(t.fqn for t in many)} all match" if many
                   else "not in the transformation catalog")
            raise ValidationError(
                f"job '{job.id}' uses transformation '{job.transformation}', {why}",
                rule="every compute job's transformation is declared", value=job.transformation,
                anchor=job.id)


def check_profiles(workflow: Workflow, tc: TransformationCatalog | None, sc: SiteCatalog | None) -> None:
    """Refuse a malformed numeric profile value of a job, a transformation or a site, naming whose."""
    checked: set[int] = set()  # readers share one dict among jobs with equal profiles: check it once
    for job in workflow.jobs.values():
        if job.profiles and id(job.profiles) not in checked:
            check_profile_values(job.profiles, subject=f"job '{job.id}'")
            checked.add(id(job.profiles))
    for transformation in tc or ():
        check_profile_values(transformation.profiles, subject=f"transformation '{transformation.fqn}'")
        for entry in transformation.sites:
            check_profile_values(entry.profiles,
                                 subject=f"transformation '{transformation.fqn}' on site '{entry.name}'")
    for site in sc or ():
        check_profile_values(site.profiles, subject=f"site '{site.name}'")


def _summary(workflow: Workflow, graph: Graph, levels: list[int], tc: TransformationCatalog | None,
             sc: SiteCatalog | None, transformations: int) -> Summary:
    jobs = workflow.jobs.values()
    files = graph.file_count  # counted while inferring file edges
    if files is None:
        files = len({use.lfn for job in jobs for use in job.uses})  # one comprehension: no generator per job
    subworkflows = sum(1 for job in jobs if job.is_subworkflow)
    sites: set[str] = set(sc.sites) if sc else set()
    for transformation in tc or ():
        sites.update(entry.name for entry in transformation.sites)
    return Summary(
        name=workflow.name, jobs=len(workflow.jobs), compute_jobs=len(workflow.jobs) - subworkflows,
        subworkflow_jobs=subworkflows, files=files, edges=graph.edge_count,
        levels=max(levels, default=0), transformations=transformations, sites=tuple(sorted(sites)))


def effective_profiles(
    job: Job,
    site: str | None,
    tc: TransformationCatalog | None = None,
    sc: SiteCatalog | None = None,
    properties: Properties | Mapping[str, Mapping[str, str]] | None = None,
    workflow_profiles: Mapping[str, Mapping[str, str]] | None = None,
) -> Profiles:
    """A job's profiles on ``site`` with the Pegasus manual's precedence (lowest first):

    properties < the workflow's own profiles < the job in the workflow < the site catalog entry of
    ``site`` < the transformation catalog (transformation-level profiles, then those of its entry
    for ``site``).  The workflow level (Pegasus 5's top-level ``profiles``) is not in the Pegasus manual;
    it sits where its scope puts it: wider than a job, narrower than the properties.
    """
    prop_layer = properties.profiles() if isinstance(properties, Properties) else properties
    site_entry = sc.get(site) if (sc is not None and site is not None) else None
    transformation = (tc.lookup(job.namespace, job.name, job.version)
                      if tc is not None and not job.is_subworkflow else None)
    tc_site = transformation.site(site) if (transformation is not None and site is not None) else None
    return merge_profiles(
        prop_layer,
        workflow_profiles,
        job.profiles,
        site_entry.profiles if site_entry else None,
        transformation.profiles if transformation else None,
        tc_site.profiles if tc_site else None,
    )
