"""FIRST SLICE of data staging: working directories and stage-in for the embedded engine.

This is deliberately small; the full data-staging work (stage-out, inter-site transfers, cleanup,
registration, non-file URLs, bypass) comes later and will replace it.

Policy, for every site that runs jobs (all sites run on the embedded engine for now):

- **Working directory.**  A site's jobs run in its ``sharedScratch`` directory from the site
  catalog when that is a local path (absolute, served by ``file://`` or by nothing), else in
  ``DIR/scratch/<site>``; the ``local`` site that no catalog defines has Pegasus's default
  scratch directory, ``wf-scratch/LOCAL`` beside the submit directory (its ``wf-output`` storage
  beside it is for stage-out, the next issue's).  Intermediate files flow between jobs of one site through it.
- **create_dir.**  One ``create_dir`` job per site (``/bin/mkdir -p <dir>``, local universe) is a
  parent of every job of the site that has no parent on the same site -- so every job of the site
  comes after it, transitively, with one edge per such job rather than one per job.
- **stage_in.**  The workflow's input files (consumed by some job, produced by none) that a site's
  jobs read are found in ``--input-dir`` (``D/<lfn>``), else as a ``file://`` URL or a path (relative:
  from where ``sheaf plan`` runs) in the replica catalog -- a replica for the site first, then for
  ``local``, then any.
  One ``stage_in`` job per site copies them into the working directory with ``sheaf-transfer``
  (a file of ``src dst`` pairs, local universe); it is a child of the site's ``create_dir`` job and
  a parent of every job that reads one of them.  An input found nowhere is a warning: the job must
  find it by itself.  An lfn that would escape the working directory (absolute, ``..``) is a
  ``PlanningError``.
- **stageable executables.**  A task whose transformation entry is ``type: stageable``
  (``ExecutableWorkflow.stageable``) runs the copy its site's ``stage_in`` job puts in the working
  directory (``<workdir>/<namespace-name-version>``, made executable by ``sheaf-transfer``): the
  slice adds the transfer, the edge to the job, and points the task (and a compute job's
  ``executable``) at the copy.  The source is a path (relative: from where ``sheaf plan`` runs), a
  ``file://`` or an ``http(s)://`` URL.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from sheaf.codegen._layout import Layout
from sheaf.errors import PlanningError
from sheaf.formats._shellwords import join_words
from sheaf.model import ReplicaCatalog, SiteCatalog, Workflow
from sheaf.model._urls import file_url_path, url_scheme
from sheaf.model._workflow import all_uses
from sheaf.planner import ExecJob, ExecutableWorkflow

_RUNS_TASKS = ("compute", "cluster", "subworkflow")


@dataclass(slots=True)
class Staging:
    """What the slice adds: jobs (placed before the planner's), edges over the combined list."""

    jobs: list[ExecJob] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    workdirs: dict[str, str] = field(default_factory=dict)
    transfers: dict[str, str] = field(default_factory=dict)  # stage_in job id -> pairs file text
    #: site -> {file name in the working directory: source} of the stageable executables its jobs run
    executables: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def site_workdir(site: str, sites: SiteCatalog | None, layout: Layout) -> str:
    entry = sites.get(site) if sites is not None else None
    if entry is None and site == "local":  # Pegasus's default local site: beside the submit directory
        return os.path.join(os.path.dirname(layout.final_dir), "wf-scratch", "LOCAL")
    scratch = entry.directory("sharedScratch") if entry is not None else None
    if scratch is not None and os.path.isabs(scratch.path):
        urls = [server.url for server in scratch.file_servers]
        if not urls or any(url.startswith("file://") for url in urls):
            return layout.in_scratch(scratch.path)
    return layout.scratch(site)


def _local_path(pfn: str) -> str | None:
    """The local file a replica names: a ``file://`` URL, or a path (a relative one from the directory
    ``sheaf plan`` runs in, as relative executables are); None for other URLs."""
    if url_scheme(pfn) is not None:
        return file_url_path(pfn)
    return os.path.abspath(pfn)


def find_local(lfn: str, site: str, input_dir: str | None, rc: ReplicaCatalog | None) -> str | None:
    """A local path of ``lfn``: ``<input dir>/lfn``, else a local replica (``site``, then ``local``, then
    any).  ``input_dir`` lists the ``--input-dir`` directories as PATH does, the first holding it wins."""
    for directory in (input_dir or "").split(os.pathsep):
        candidate = os.path.join(directory, lfn)
        if directory and os.path.isfile(candidate):
            return os.path.abspath(candidate)
    if rc is None:
        return None
    pfns = rc.lookup(lfn)
    for wanted in (site, "local", None):
        for pfn in pfns:
            path = _local_path(pfn.pfn)
            if path is not None and (wanted is None or pfn.site == wanted):
                return path
    return None


def _check_lfn(lfn: str) -> None:
    parts = lfn.split("/")
    if os.path.isabs(lfn) or ".." in parts or not lfn or "\0" in lfn or "\n" in lfn:
        raise PlanningError("an input file name would escape the working directory",
                            rule="lfns are relative paths without '..'", value=lfn)


def _workflow_inputs(workflow: Workflow) -> set[str]:
    produced: set[str] = set()
    consumed: set[str] = set()
    produce, consume = produced.add, consumed.add
    for job in workflow.jobs.values():
        for use in all_uses(job):
            kind = use.type  # plain attribute reads: this loop sees every use of 10^6 jobs
            if kind == "input":
                consume(use.lfn)
            elif kind == "output":
                produce(use.lfn)
            else:  # checkpoint: both
                produce(use.lfn)
                consume(use.lfn)
    return consumed - produced


def plan_staging(exec_wf: ExecutableWorkflow, layout: Layout) -> Staging:
    """The slice's jobs and edges for ``exec_wf`` (indices: the slice's jobs first)."""
    out = Staging()
    jobs = exec_wf.jobs
    sites = sorted({job.site for job in jobs if job.site is not None and job.type in _RUNS_TASKS})
    for site in sites:
        out.workdirs[site] = site_workdir(site, exec_wf.site_catalog, layout)
    readers = _readers(exec_wf)
    pairs = _resolve(readers, exec_wf, out)
    runners = _stage_executables(exec_wf, out)
    for site in sites:
        _add_site(out, site, pairs.get(site, {}), exec_wf.name, out.executables.get(site, {}))
    _link(out, exec_wf, readers)
    _link_runners(out, exec_wf, runners)
    return out


def _stage_executables(exec_wf: ExecutableWorkflow, out: Staging) -> list[int]:
    """Point tasks that run a stageable executable at its copy in their site's working directory;
    return the indices of their jobs (module docstring)."""
    if not exec_wf.stageable:
        return []
    runners = []
    for index, job in enumerate(exec_wf.jobs):
        if job.site is None or job.type not in ("compute", "cluster"):
            continue
        tasks = []
        for task in job.tasks:
            name = exec_wf.stageable.get((job.site, task.executable))
            if name is None:
                tasks.append(task)
                continue
            source = task.executable if url_scheme(task.executable) else os.path.abspath(task.executable)
            out.executables.setdefault(job.site, {})[name] = source
            tasks.append(replace(task, executable=os.path.join(out.workdirs[job.site], name)))
        if any(new is not old for new, old in zip(tasks, job.tasks, strict=True)):
            job.tasks = tuple(tasks)
            if job.type == "compute":
                job.executable = tasks[0].executable
            runners.append(index)
    return runners


def _link_runners(out: Staging, exec_wf: ExecutableWorkflow, runners: list[int]) -> None:
    shift = len(out.jobs)
    stage_of = {job.site: i for i, job in enumerate(out.jobs) if job.type == "stage_in"}
    for index in runners:
        out.edges.append((stage_of[exec_wf.jobs[index].site], index + shift))


def _readers(exec_wf: ExecutableWorkflow) -> dict[str, list[int]]:
    """Workflow input lfn -> indices (in exec_wf.jobs) of the jobs that read it."""
    inputs = _workflow_inputs(exec_wf.workflow)
    readers: dict[str, list[int]] = {}
    if not inputs:
        return readers
    get = exec_wf.workflow.jobs.get
    for index, job in enumerate(exec_wf.jobs):  # every use of 10^6 jobs: plain reads, no calls
        for task in job.tasks:
            source = get(task.id)
            if source is None:
                continue
            # a sub-workflow's own file is read where it is, by its planner on the submit host
            own = source.file if job.type == "subworkflow" else None
            for use in all_uses(source):
                lfn = use.lfn
                if lfn in inputs and use.type != "output" and lfn != own:  # ``use.consumes``
                    found = readers.get(lfn)
                    if found is None:
                        readers[lfn] = [index]
                    elif found[-1] != index:
                        found.append(index)
    return readers


def _resolve(readers: dict[str, list[int]], exec_wf: ExecutableWorkflow,
             out: Staging) -> dict[str, dict[str, str]]:
    """site -> {lfn: source path}; unresolved inputs become one warning."""
    pairs: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for lfn in sorted(readers):
        _check_lfn(lfn)
        for site in sorted({s for i in readers[lfn] if (s := exec_wf.jobs[i].site) is not None}):
            source = find_local(lfn, site, exec_wf.input_dir, exec_wf.replica_catalog)
            if source is None:
                missing.append(lfn)
            else:
                pairs.setdefault(site, {})[lfn] = source
    if missing:
        shown = ", ".join(sorted(set(missing))[:5]) + (" ..." if len(set(missing)) > 5 else "")
        out.warnings.append(f"{len(set(missing))} input file(s) found neither in --input-dir nor as a "
                            f"file:// replica, not staged in: {shown}")
    return pairs


def _add_site(out: Staging, site: str, files: dict[str, str], workflow: str,
              executables: dict[str, str]) -> None:
    workdir = out.workdirs[site]
    create = ExecJob(id=f"create_dir_{_safe(workflow)}_0_{_safe(site)}", type="create_dir", site=site,
                     transformation=None, level=0, executable="/bin/mkdir", arguments=("-p", workdir))
    out.jobs.append(create)
    if files or executables:
        stage = ExecJob(id=f"stage_in_local_{_safe(site)}_0_0", type="stage_in", site=site,
                        transformation=None, level=0)
        staged = sorted(executables.items())
        out.transfers[stage.id] = (
            pairs_text((src, os.path.join(workdir, lfn)) for lfn, src in files.items())
            + pairs_text((src, os.path.join(workdir, name), "x") for name, src in staged))
        out.edges.append((len(out.jobs) - 1, len(out.jobs)))
        out.jobs.append(stage)


def pairs_text(pairs: Iterable[tuple[str, ...]]) -> str:
    """``sheaf-transfer``'s pairs file: per line two words quoted as POSIX shell words (and ``x`` for
    a file to make executable).  A path that
    one line cannot carry (LF, NUL) or that is not text (an undecodable byte) is a ``PlanningError``."""
    lines = []
    for pair in pairs:
        for path in pair:
            if "\n" in path or "\0" in path or (not path.isprintable() and not _encodable(path)):
                raise PlanningError("a path to stage in cannot be written to the pairs file",
                                    rule="staged paths hold no newline, NUL or undecodable byte", value=path)
        lines.append(join_words(pair) + "\n")
    return "".join(lines)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _safe(text: str) -> str:
    """``text`` as part of a DAGMan node name (ASCII letters, digits, ``_.-``): a workflow named
    ``analyse-données`` gets ``create_dir_analyse-donn_es_0_site``."""
    return "".join(c if (c.isascii() and c.isalnum()) or c in "_.-" else "_" for c in text)


def _link(out: Staging, exec_wf: ExecutableWorkflow, readers: dict[str, list[int]]) -> None:
    shift = len(out.jobs)
    by_site = {job.site: i for i, job in enumerate(out.jobs) if job.type == "create_dir"}
    stage_of = {job.site: i for i, job in enumerate(out.jobs) if job.type == "stage_in"}
    same_site_parent = _has_same_site_parent(exec_wf.jobs, exec_wf.edges)
    for index, job in enumerate(exec_wf.jobs):
        if job.site in by_site and job.type in _RUNS_TASKS and not same_site_parent[index]:
            out.edges.append((by_site[job.site], index + shift))
    staged: set[tuple[int, int]] = set()
    for lfn in sorted(readers):
        for index in readers[lfn]:
            stage = stage_of.get(exec_wf.jobs[index].site)
            if stage is not None and (stage, index) not in staged:
                staged.add((stage, index))
                out.edges.append((stage, index + shift))


def _has_same_site_parent(jobs: Sequence[ExecJob], edges: Iterable[tuple[int, int]]) -> list[bool]:
    found = [False] * len(jobs)
    for parent, child in edges:
        if jobs[parent].site == jobs[child].site:
            found[child] = True
    return found
