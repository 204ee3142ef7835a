"""The data pass: working directories, stage-in, stage-out, registration and cleanup jobs.

``plan_data(exec_wf, submit_dir)`` turns the compute jobs ``plan()`` made into the complete executable
workflow.  It is pure given its inputs (the one file-system read is replica selection's
``--input-dir`` test): the submit directory is an input because working directories live beside it,
so it is chosen -- a numbered ``runNNNN`` reserved (``sheaf.app``) -- before planning.  ``plan()`` runs
the pass when ``DataOptions.submit_dir`` names it; a caller that plans without it runs ``plan_data``
itself before ``sheaf.codegen.write_plan``, which writes only a plan whose pass has run.  The pass runs
once: it records in ``exec_wf.data`` the directory, relative execution directory and kept files it
planned for, and ``write_plan`` refuses another directory.

Policy (``sharedfs``: jobs read and write their site's shared scratch):

- **Working directory** of a site: its ``sharedScratch`` directory from the site catalog when that is
  a local path (absolute, served by ``file://``, a URL without a scheme, or by nothing) -- under it
  pegasus-plan's relative execution directory, when the plan has one; the ``local`` site no catalog
  defines has Pegasus's ``wf-scratch/LOCAL`` beside the submit directory, the relative execution
  directory under it too (so two runs never share one); any other site ``DIR/scratch/<site>``, with
  a warning naming the site, its directory and URL when the catalog gives a scratch directory that
  only another scheme serves (``gsiftp://``, ``stash://``, ...), which sheaf does not work through.
  ``pegasus.dir.exec`` (Pegasus's "Site Directories" properties) changes that directory before the
  relative execution directory is added: a relative value is appended to it, an absolute one
  replaces it.
- **create_dir**: one per site (``mkdir -p``), a parent of every job of the site without a parent on
  the site (so of every job of the site, transitively).
- **stage_in**: every workflow input (consumed, produced by no job) a site's jobs read is copied
  into the site's working directory from the ranked replicas (``_replicas``).  Per site and level at
  most ``ceil(n/10)`` stage-in jobs (n: the level's compute jobs there that read staged files),
  overridden by the ``stagein.clusters`` profile (site catalog, then properties); a file read by
  several jobs is staged once, by the bucket of its first reader, and every reader depends on that
  job.  Stageable executables travel the same way (``executable: true``).  An input found nowhere is
  a warning: the job must find it itself.  An input whose best replica already is the file in the
  working directory is neither copied nor removed.  ``pegasus.transfer.links`` makes the stage-in
  jobs link ``file://`` sources instead of copying them (``sheaf-transfer --link``).
- **stage_out**: outputs marked ``stage_out`` go to the storage directory of every ``--output-sites``
  site (``local`` without a catalog entry: ``wf-output`` beside ``wf-scratch``), ``--output-dir``
  replacing one site's (``_stageout.output_targets``).  Without either nothing is staged out and those
  outputs stay in scratch (Pegasus defaults the output site to ``local``; sheaf stages out only when
  told where).  ``ceil(n/10)`` stage-out jobs per site and level (``stageout.clusters``), each a child
  of the producers of its files.
- **register**: one per site and level, a child of the level's stage-out jobs delivering files marked
  ``register_replica``; it adds ``lfn -> delivered URL`` to the output replica catalog
  (``_stageout.register_target``).
- **inter_site**: a file made on one site and read on another (with another working directory) is
  copied between the two by ``inter_site`` jobs (at most ``ceil(n/10)`` per pair of sites and level),
  children of its makers and parents of its readers there (``_stageout``).
- **sub-workflow outputs**: an output of a planned sub-workflow job that the plan stages out or one of
  its jobs reads is put by the child into the job's site's working directory (its ``--output-map``),
  and from there handled as any job's output: stage-out, registration, inter-site copies, cleanup.
  A plan with such jobs names its output replica catalog (``replica_output``) for its children to
  register into.
- **cleanup** (``_cleanup``): ``inplace`` removes each file the workflow put in a working directory
  after its last user (readers, producer, stage-out job); ``leaf`` removes all of them once the site's
  last job is done; ``none`` keeps them.  Files to be kept (staged out nowhere) are never removed.

Every auxiliary job names its input file (``exec_wf.job_inputs``: a JSON transfer list, the lists of
files to remove or register) and codegen appends that file's path to its arguments; a transfer job
also records the bytes its list moves (``exec_wf.transfer_bytes``, ``_transfer_bytes``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from sheaf._gc import gc_paused
from sheaf.errors import PlanningError
from sheaf.model import Graph, Job, Profiles, SiteCatalog, Use, all_uses, build_graph, file_url_path
from sheaf.planner._cleanup import Files, add_cleanup
from sheaf.planner._configurations import condorio_lists, lite_manifests, staging_site
from sheaf.planner._naming import safe
from sheaf.planner._plan import ExecJob, ExecutableWorkflow
from sheaf.planner._replicas import ReplicaSelector, Source, path_url, url_in
from sheaf.planner._stageout import (
    PRODUCERS,
    _File,
    _reads,
    cluster_limit,
    output_targets,
    plan_stage_out,
    register_target,
    replica_selector,
)
from sheaf.planner._transfer_bytes import TransferBytes
from sheaf.planner._transfer_lists import transfer_entry, transfer_options, transfer_text

RUNS_TASKS = ("compute", "cluster", "subworkflow")
_INTEGRITY = ("none", "full", "nosymlink")
_CONFIGURATIONS = ("sharedfs", "condorio", "nonsharedfs")


@dataclass(slots=True)
class _Staged:
    """One file to bring into a site's working directory."""

    name: str                      # file name in the working directory
    sources: list[Source]
    readers: list[int]             # job indices (in the final job list) that need it
    executable: bool = False
    checksum: str | None = None
    checkpoint: bool = False       # a checkpoint file: its job changes it, so no integrity record


@dataclass(slots=True)
class _Pass:
    exec_wf: ExecutableWorkflow
    submit_dir: str
    base: int                                              # the planner's job count: the first aux index
    jobs: list[ExecJob] = field(default_factory=list)      # auxiliary jobs, placed after the planner's
    staged: dict[str, dict[str, _Staged]] = field(default_factory=dict)  # site -> name -> file
    moved: TransferBytes = field(default_factory=TransferBytes)

    def add(self, job: ExecJob, text: str | None = None, files: Iterable[str] | None = None) -> int:
        self.jobs.append(job)
        if text is not None:
            self.exec_wf.job_inputs[job.id] = text
        if files is not None:  # a transfer job: what its list moves
            self.exec_wf.transfer_bytes[job.id] = self.moved.of(self.exec_wf.workflow, files)
        return self.base + len(self.jobs) - 1


def plan_data(exec_wf: ExecutableWorkflow, submit_dir: str, exec_dir: str | None = None,
              keep: frozenset[str] = frozenset(), *, inputs: Inputs | None = None) -> None:
    """Add the data jobs to ``exec_wf`` in place (module docstring); once only.  ``exec_dir`` is
    pegasus-plan's relative execution directory: the working directory under a shared scratch;
    ``keep``: files cleanup never removes (a sub-workflow's outputs its parent's ``--output-map`` copies);
    ``inputs``: ``graph_inputs`` of the workflow's job graph where the caller has that graph (``plan()``
    does), else the graph is built here for them."""
    if exec_wf.data_planned:
        return
    exec_wf.data = replace(exec_wf.data, submit_dir=os.path.abspath(submit_dir), exec_dir=exec_dir, keep=keep)
    # the pass allocates a few records per job and per file, all acyclic: a generation-2 collection
    # in the middle would walk the whole workflow (a third of the pass's time at 10^5 jobs)
    with gc_paused():
        _plan_data(exec_wf, submit_dir, exec_dir, keep, inputs)


def _plan_data(exec_wf: ExecutableWorkflow, submit_dir: str, exec_dir: str | None,
               keep: frozenset[str], inputs: Inputs | None) -> None:
    state = _Pass(exec_wf, os.path.abspath(submit_dir), len(exec_wf.jobs))
    jobs = exec_wf.jobs
    sites = sorted({job.site for job in jobs if job.site is not None and job.type in RUNS_TASKS})
    config = check_settings(exec_wf, sites)
    remote: dict[str, None] = {}
    for site in sites:
        staging = staging_site(exec_wf, site, config)  # an unknown one refused under every configuration
        where = site if config == "sharedfs" else staging
        exec_wf.workdirs[site] = site_workdir(where, exec_wf.site_catalog, state.submit_dir, exec_dir,
                                              exec_wf.properties.get_str("pegasus.dir.exec"))
        served = _remote_scratch(where, exec_wf.site_catalog)
        if served is not None:
            remote[f"site '{where}': its shared scratch directory {served[0]} is served only by {served[1]}, "
                   f"a URL sheaf does not work through: its working directory is {exec_wf.workdirs[site]}"
                   " instead"] = None
    exec_wf.warnings.extend(remote)
    unplanned = sorted(set(exec_wf.data.staging_sites) - {"*", *sites})
    if unplanned:
        exec_wf.warnings.append(f"--staging-site names sites no job is planned on: {', '.join(unplanned)} "
                                f"(planned: {', '.join(sites) or 'none'}); their staging sites are not used")
    if config == "sharedfs" and exec_wf.data.staging_sites:
        exec_wf.warnings.append("--staging-site is for condorio and nonsharedfs: under sharedfs every site "
                                "stages into its own shared scratch")
    produced, selector = _collect_files(state, config, inputs or graph_inputs(build_graph(exec_wf.workflow)))
    _subworkflow_inputs(state)
    if config == "condorio":
        staged = {lfn for files in state.staged.values() for lfn in files}
        condorio_lists(exec_wf, staged)
    elif config == "nonsharedfs":
        lite_manifests(exec_wf, state.submit_dir)
    _stage_executables(state)
    planned = _aux_plan(state, sites, produced, selector)
    exec_wf.jobs = jobs + state.jobs
    exec_wf.edges += planned.edges
    outputs = planned.outputs
    for key in [key for key in outputs if key[1] in keep] if keep else ():  # in place: 10^6 entries
        del outputs[key]
    add_cleanup(exec_wf, state.base, outputs, exec_wf.data.cleanup)
    if exec_wf.properties.get_bool("pegasus.condor.concurrency.limits", False):
        _concurrency_limits(exec_wf.jobs)
    if exec_wf.replica_output is None and next(_planned_children(exec_wf), None) is not None and \
            exec_wf.properties.get_bool("pegasus.register", True):
        # the children register into this catalog too: one output replica catalog for the whole hierarchy
        exec_wf.replica_output = register_target(exec_wf)
    exec_wf.data_planned = True


def _planned_children(exec_wf: ExecutableWorkflow) -> Iterator[tuple[ExecJob, Job]]:
    """(job, its abstract job) of each job of the plan that plans a Pegasus workflow (a child whose
    planner runs at run time and registers its outputs)."""
    get = exec_wf.workflow.jobs.get
    for job in exec_wf.jobs:
        if job.type == "subworkflow" and job.site is not None and job.tasks:
            source = get(job.tasks[0].id)
            if source is not None and source.type == "pegasusWorkflow":
                yield job, source


#: the HTCondor concurrency limit of each job type, as Pegasus's optimization chapter names them
#: (``pegasus.condor.concurrency.limits``)
LIMITS = {"stage_in": "pegasus_transfer.stagein", "stage_out": "pegasus_transfer.stageout",
          "inter_site": "pegasus_transfer.inter", "create_dir": "pegasus_auxillary.createdir",
          "cleanup": "pegasus_auxillary.cleanup", "register": "pegasus_auxillary.registration",
          "compute": "pegasus_compute", "cluster": "pegasus_compute"}


def _concurrency_limits(jobs: list[ExecJob]) -> None:
    """Name each job's limit in its condor profiles, unless it names one itself; profile dicts are
    shared between jobs, so each distinct one is copied once."""
    copies: dict[tuple[int, str], Profiles] = {}
    for index, job in enumerate(jobs):
        limit = LIMITS.get(job.type)
        own: Profiles = job.profiles or (job.tasks[0].profiles if len(job.tasks) == 1 else {})
        if limit is None or "concurrency_limits" in (own.get("condor") or {}):
            continue
        key = (id(own), limit)
        if key not in copies:
            copies[key] = {**own, "condor": {**(own.get("condor") or {}), "concurrency_limits": limit}}
        jobs[index] = replace(job, profiles=copies[key])  # a new record: the caller's stays as it was


def check_settings(exec_wf: ExecutableWorkflow, sites: Sequence[str]) -> str:
    """The data configuration of the plan whose jobs run on ``sites``, once every data setting is
    checked: ``pegasus.data.configuration`` (default ``sharedfs``), or the one every site has by its
    site catalog's ``data.configuration`` profile, which wins over the property for the site's jobs
    (Pegasus's scope for it: properties and site catalog).  Sites of different configurations are
    planned with the property's, with a warning: one plan mixing them is not implemented."""
    props = exec_wf.properties
    integrity = (props.get_str("pegasus.integrity.checking") or "full").strip().lower()
    if integrity not in _INTEGRITY:
        raise PlanningError("unknown integrity checking dial", value=integrity,
                            rule="pegasus.integrity.checking is none, full or nosymlink",
                            path=props.origin("pegasus.integrity.checking"),
                            line=props.origin_line("pegasus.integrity.checking"))
    config = (props.get_str("pegasus.data.configuration") or "sharedfs").strip().lower()
    if config not in _CONFIGURATIONS:
        raise PlanningError("unknown data configuration", value=config,
                            rule="pegasus.data.configuration is sharedfs, condorio or nonsharedfs",
                            path=props.origin("pegasus.data.configuration"),
                            line=props.origin_line("pegasus.data.configuration"))
    per_site = {site: _site_configuration(exec_wf.site_catalog, site) or config for site in sites}
    chosen = set(per_site.values())
    if len(chosen) == 1:
        config = chosen.pop()
    elif chosen:
        shown = ", ".join(f"{site}: {value}" for site, value in per_site.items())
        exec_wf.warnings.append(f"the sites' data configurations differ ({shown}): a plan mixing data "
                                f"configurations is not implemented; every site is planned with {config} "
                                "(pegasus.data.configuration)")
    if exec_wf.data.cleanup == "constraint":
        exec_wf.warnings.append("--cleanup constraint (cleanup under disk-space constraints) is planned as "
                                "inplace")
        exec_wf.data = replace(exec_wf.data, cleanup="inplace")
    if exec_wf.data.cleanup not in ("none", "inplace", "leaf"):
        raise PlanningError("unknown cleanup strategy", value=exec_wf.data.cleanup,
                            rule="--cleanup is none, inplace or leaf")
    return config


def _site_configuration(sites: SiteCatalog | None, site: str) -> str | None:
    """The site catalog's ``data.configuration`` profile of ``site`` (None when unset)."""
    entry = sites.get(site) if sites is not None else None
    raw = entry.profiles.get("pegasus", {}).get("data.configuration") if entry is not None else None
    if raw is None:
        return None
    value = raw.strip().lower()
    if value not in _CONFIGURATIONS:
        raise PlanningError(f"unknown data configuration of site {site}", value=raw,
                            rule="the data.configuration profile is sharedfs, condorio or nonsharedfs")
    return value


def site_workdir(site: str, sites: SiteCatalog | None, submit_dir: str, exec_dir: str | None = None,
                 dir_exec: str | None = None) -> str:
    """The working directory of ``site`` (module docstring); ``dir_exec`` is ``pegasus.dir.exec``."""
    entry = sites.get(site) if sites is not None else None
    if entry is None and site == "local":  # Pegasus's default local site: beside the submit directory
        default = os.path.join(os.path.dirname(submit_dir), "wf-scratch", "LOCAL")
        return os.path.normpath(os.path.join(default, dir_exec or "", exec_dir or "."))
    scratch = entry.directory("sharedScratch") if entry is not None else None
    if scratch is not None and os.path.isabs(scratch.path):
        urls = [server.url for server in scratch.file_servers]
        # a URL without a scheme is a path: Pegasus's PegasusURL gives it the file scheme
        if not urls or any(url.startswith("file://") or "://" not in url for url in urls):
            return os.path.normpath(os.path.join(scratch.path, dir_exec or "", exec_dir or "."))
    own = os.path.join(submit_dir, "scratch", safe(site))
    if dir_exec and os.path.isabs(dir_exec):  # outside the submit directory: runs must not share it
        return os.path.normpath(os.path.join(dir_exec, exec_dir or "."))
    return os.path.normpath(os.path.join(own, dir_exec or "."))


def _remote_scratch(site: str, sites: SiteCatalog | None) -> tuple[str, str] | None:
    """(path, URL) of ``site``'s catalogued shared scratch directory when only URLs of another scheme
    than ``file://`` serve it (``site_workdir`` then uses the submit directory's), else None."""
    entry = sites.get(site) if sites is not None else None
    scratch = entry.directory("sharedScratch") if entry is not None else None
    if scratch is None or not os.path.isabs(scratch.path) or not scratch.file_servers:
        return None
    urls = [server.url for server in scratch.file_servers]
    if any(url.startswith("file://") or "://" not in url for url in urls):
        return None
    return scratch.path, urls[0]


def check_lfn(lfn: str) -> None:
    parts = lfn.split("/")
    if os.path.isabs(lfn) or ".." in parts or not lfn or "\0" in lfn or "\n" in lfn:
        raise PlanningError("a file name would escape the working directory",
                            rule="lfns are relative paths without '..'", value=lfn)


#: (the files jobs read that no job writes, with the checkpoint files; the checkpoint files)
Inputs = tuple[set[str], set[str]]


def graph_inputs(graph: Graph) -> Inputs:
    """(the files jobs read that no job writes, the checkpoint files), as ``build_graph`` found them while
    it inferred file edges: a checkpoint file is an optional input that is also an output -- staged in
    when it has a replica (a run that resumes from one), and without one, no input at all."""
    inputs, checkpoints = graph.inputs, graph.checkpoints
    assert inputs is not None and checkpoints is not None  # built with its file edges inferred
    return (inputs | checkpoints if checkpoints else inputs), checkpoints


def _collect_files(state: _Pass, config: str, known: Inputs
                   ) -> tuple[dict[tuple[str, str], _File], ReplicaSelector | None]:
    """One walk over the uses of every job that runs tasks: site -> lfn -> ``_Staged`` for every
    workflow input a job reads (bypassed inputs are read where their replica is: module docstring), and
    (site, lfn) -> producers and same-site readers of every file a compute or cluster job produces; and
    the replica selector it found the inputs with (None without inputs)."""
    exec_wf = state.exec_wf
    inputs, optional = known
    first = _FirstReads(exec_wf, inputs, optional, config)
    get = exec_wf.workflow.jobs.get
    produced: dict[tuple[str, str], _File] = {}
    #: reads of a file no job had produced on the reader's site yet (another site's file, or a maker
    #: later in plan order): made readers at the end if a job of the site does produce it
    early: dict[tuple[str, str], list[int]] = {}
    for index, job in enumerate(exec_wf.jobs):
        site = job.site
        if site is None or job.type not in RUNS_TASKS:
            continue
        files = state.staged.setdefault(site, {}) if inputs else {}
        producing = job.type in PRODUCERS
        for task in job.tasks:
            source = get(task.id)
            if source is None:
                continue
            own = source.file if job.type == "subworkflow" else None  # read where it is by its planner
            # a planned sub-workflow's outputs are made here by its child (``_subworkflow_outputs``)
            making = producing or source.type == "pegasusWorkflow"
            for use in all_uses(source):
                lfn = use.lfn
                kind = use.type
                if kind != "input" and making:
                    f = produced.get((site, lfn))
                    if f is None:
                        f = produced[(site, lfn)] = _File(site, lfn)
                    if not f.producers or f.producers[-1] != index:
                        f.producers.append(index)
                        if f.readers and f.readers[-1] == index:  # read first by this job: a producer
                            f.readers.pop()
                    if use.stage_out or use.register_replica or use.metadata:
                        _mark(f, use)
                if kind == "output":
                    continue
                if lfn in inputs:
                    if lfn != own:
                        found = files.get(lfn)
                        if found is None:
                            first.read(files, index, site, lfn, not use.optional and source.id)
                        elif found.readers[-1] != index:
                            found.readers.append(index)
                    if lfn not in optional:  # an input no job makes
                        continue
                if producing:
                    f = produced.get((site, lfn))
                    if f is None:
                        early.setdefault((site, lfn), []).append(index)
                    elif f.producers[-1] != index and (not f.readers or f.readers[-1] != index):
                        f.readers.append(index)
    _early_readers(produced, early)
    first.refuse_missing()
    _subworkflow_outputs(state, produced)
    return produced, first.selector


def _subworkflow_outputs(state: _Pass, produced: dict[tuple[str, str], _File]) -> None:
    """The outputs of sub-workflow jobs that this plan stages out or that its jobs read: the child puts
    each in its job's working directory (the child's ``--output-map``), and from there this plan's data
    jobs deliver, register, copy and remove it as any job's output, as Pegasus has the parent stage out a
    sub-workflow job's outputs from its own scratch (``ExecutableWorkflow.subworkflow_outputs``).  The
    child's other outputs are its own: left out of this plan's files."""
    exec_wf = state.exec_wf
    children = list(_planned_children(exec_wf))
    if not children:
        return
    read = {lfn for _, _, lfn in _reads(exec_wf)}
    delivering = bool(output_targets(exec_wf, state.submit_dir))
    for job, source in children:
        for lfn in {use.lfn for use in all_uses(source) if use.type != "input"}:
            key = (str(job.site), lfn)
            f = produced[key]
            if (f.stage_out and delivering) or lfn in read:
                placed = exec_wf.subworkflow_outputs.setdefault(job.id, {})
                placed[lfn] = os.path.join(exec_wf.workdirs[f.site], lfn)
            else:
                del produced[key]


def _mark(f: _File, use: Use) -> None:
    """What a producer's use asks of its file: staged out, registered, with its metadata."""
    f.stage_out = f.stage_out or use.stage_out
    f.register = f.register or use.register_replica
    if use.metadata:
        f.metadata = use.metadata


def _subworkflow_inputs(state: _Pass) -> None:
    """Where each sub-workflow job's inputs that this plan brings in will be: its child is planned at
    run time, and finds them only if told (``ExecutableWorkflow.subworkflow_inputs``)."""
    exec_wf = state.exec_wf
    for job in exec_wf.jobs:
        if job.type != "subworkflow" or not job.tasks or job.site is None:
            continue
        source = exec_wf.workflow.jobs.get(job.tasks[0].id)
        if source is None:
            continue
        staged = state.staged.get(job.site, {})
        found = {}
        for use in all_uses(source):
            if use.type == "output" or use.lfn == source.file:
                continue
            url = exec_wf.bypass.get(use.lfn)
            if url is not None:
                found[use.lfn] = file_url_path(url) or url
            elif use.lfn in staged:
                found[use.lfn] = os.path.join(exec_wf.workdirs[job.site], use.lfn)
        if found:
            exec_wf.subworkflow_inputs[job.id] = found


def _early_readers(produced: dict[tuple[str, str], _File], early: dict[tuple[str, str], list[int]]) -> None:
    """Make the reads seen before the file's first producer readers of it: every reader in plan order,
    none a producer."""
    for key, readers in early.items():
        f = produced.get(key)
        if f is not None:
            f.readers = sorted({*f.readers, *readers} - set(f.producers))


_NO_SOURCES: list[Source] = []  # read only: what every missing input's entry in the cache holds


@dataclass(slots=True)
class _FirstReads:
    """The first read of each workflow input on a site: where it is read from, found once per (lfn,
    site)."""

    exec_wf: ExecutableWorkflow
    inputs: set[str]
    optional: set[str]
    config: str
    selector: ReplicaSelector | None = field(init=False)
    bypassing: set[str] = field(init=False)
    #: site -> lfn -> the sources found (one dict a site: no key tuple a file, nor a list a missing file)
    cache: dict[str, dict[str, list[Source]]] = field(default_factory=dict)
    #: lfn -> the first job that reads it, not as an optional file, where it has no source
    missing: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bypassing = _bypassing(self.exec_wf, self.inputs) if self.config != "sharedfs" else set()
        self.selector = replica_selector(self.exec_wf) if self.inputs else None

    def read(self, files: dict[str, _Staged], index: int, site: str, lfn: str, reader: str | bool) -> None:
        """Job ``index`` on ``site`` is the first there to read ``lfn``: its staged copy, unless it has
        no source, is bypassed or already is the scratch file.  ``reader``: the abstract job's id, or
        False where that job marks the file optional (no source then leaves it out)."""
        exec_wf, selector = self.exec_wf, self.selector
        assert selector is not None  # there are inputs to read
        if lfn in exec_wf.bypass:
            return
        check_lfn(lfn)
        cache = self.cache.get(site)
        if cache is None:
            cache = self.cache[site] = {}
        sources = cache.get(lfn)
        if sources is None:
            sources = cache[lfn] = selector.sources(lfn, site) or _NO_SOURCES
        if not sources:
            if reader and lfn not in self.optional:
                self.missing.setdefault(lfn, str(reader))
            return
        if lfn in self.bypassing and self._bypassable(sources[0].url, lfn):
            exec_wf.bypass[lfn] = sources[0].url
            return
        if _in_place(sources, exec_wf.workdirs[site], lfn):
            return  # already where the job reads it: neither copied nor ever removed
        files[lfn] = _Staged(lfn, sources, [index], checksum=selector.checksum(lfn),
                             checkpoint=lfn in self.optional)

    def _bypassable(self, url: str, lfn: str) -> bool:
        """Whether a job can read the replica ``url`` in place as ``lfn``: a ``file://`` URL, and under
        ``condorio`` one whose last component is the lfn -- HTCondor puts a file it moves into the job's
        sandbox under that name, where Pegasus's job finds it under its lfn; another is staged in."""
        if not url.startswith("file://"):
            return False
        if self.config != "condorio":
            return True
        path = file_url_path(url)
        return path is not None and os.path.basename(path) == lfn

    def refuse_missing(self) -> None:
        """Refuse the inputs with no source at all, as Pegasus's stage-in fails planning on one ("can't
        determine a location to transfer input file"): the job would run without its input.  A
        WfCommons trace's are only warned about (``Workflow.trace``)."""
        if not self.missing:
            return
        if self.exec_wf.workflow.trace:
            shown = ", ".join(sorted(self.missing)[:5]) + (" ..." if len(self.missing) > 5 else "")
            self.exec_wf.warnings.append(f"{len(self.missing)} input file(s) of the trace found neither in "
                                         f"--input-dir nor in the replica catalog, not staged in: {shown}")
            return
        lfn, job = min(self.missing.items())
        known = self.selector is not None and self.selector.known(lfn)
        where = ("its replicas are all on sites the replica selector leaves out" if known else
                 "it is not in an --input-dir, not in the replica catalog, and no job makes it")
        others = sorted(self.missing)[1:]
        more = (f" (nor have {len(others)} other input file(s): {', '.join(others[:5])}"
                f"{' ...' if len(others) > 5 else ''})") if others else ""
        raise PlanningError(
            f"input file '{lfn}' of job '{job}' has no replica to stage in: {where}{more}; give it one "
            "(a replica catalog entry, or the file in an --input-dir), or mark the job's use of it "
            "optional", rule="every input file has a replica, is made by a job, or is optional", value=lfn,
            anchor=job)


def _bypassing(exec_wf: ExecutableWorkflow, inputs: set[str]) -> set[str]:
    """The inputs read where their replica is (``condorio``/``nonsharedfs``): all of them under
    ``pegasus.transfer.bypass.input.staging``, else those a job marks ``bypass``."""
    if exec_wf.properties.get_bool("pegasus.transfer.bypass.input.staging", False):
        return inputs
    return {use.lfn for job in exec_wf.workflow.jobs.values() for use in all_uses(job)
            if use.bypass_staging and use.lfn in inputs}


def _in_place(sources: list[Source], workdir: str, lfn: str) -> bool:
    """Whether the best replica already is the file in the working directory (``--input-dir`` naming
    the scratch directory): copying it onto itself would be pointless, removing it a loss."""
    first = sources[0].url
    return first.startswith("file://") and first == url_in(workdir, lfn)


def _stage_executables(state: _Pass) -> None:
    """Point tasks that run a stageable executable at its copy in their site's working directory and
    stage it in for them (module docstring)."""
    exec_wf = state.exec_wf
    if not exec_wf.stageable:
        return
    cwd = exec_wf.data.cwd or os.getcwd()
    for index, job in enumerate(exec_wf.jobs):
        if job.site is None or job.type not in ("compute", "cluster"):
            continue
        workdir = exec_wf.workdirs[job.site]
        tasks = []
        for task in job.tasks:
            name = exec_wf.stageable.get((job.site, task.transformation, task.executable))
            if name is None:
                tasks.append(task)
                continue
            files = state.staged.setdefault(job.site, {})
            for source, staged in ((task.executable, name),
                                   *exec_wf.required.get((job.site, task.transformation), ())):
                url = source if "://" in source else path_url(os.path.join(cwd, source))
                found = files.get(staged)
                if found is None:
                    files[staged] = _Staged(staged, [Source(url, "local")], [index], executable=True)
                elif found.readers[-1] != index:
                    found.readers.append(index)
            tasks.append(replace(task, executable=os.path.join(workdir, name)))
        if any(new is not old for new, old in zip(tasks, job.tasks, strict=True)):
            # a new record: the caller's jobs stay as they were (codegen plans copies)
            runs = tasks[0].executable if job.type == "compute" else job.executable
            exec_wf.jobs[index] = replace(job, tasks=tuple(tasks), executable=runs)


@dataclass(slots=True)
class Planned:
    """What ``_aux_plan`` made: edges over the final job list, and the files cleanup may remove."""

    edges: list[tuple[int, int]] = field(default_factory=list)
    #: (site, file name) -> its users (final job indices), and how many of them, at the end, another user
    #: descends from (``_cleanup``): every file the workflow puts in a working directory but those kept
    #: there (staged out nowhere)
    outputs: Files = field(default_factory=dict)


def _aux_plan(state: _Pass, sites: Sequence[str], produced: dict[tuple[str, str], _File],
              selector: ReplicaSelector | None) -> Planned:
    """Create the create_dir, stage_in, stage_out and register jobs; return the edges over the final
    job list (aux jobs after the planner's) and the cleanup facts."""
    exec_wf = state.exec_wf
    create: dict[str, int] = {}
    for site in sites:
        create[site] = state.add(ExecJob(
            id=f"create_dir_{safe(exec_wf.name)}_0_{safe(site)}", type="create_dir", site=site,
            transformation=None, level=0, executable="/bin/mkdir", arguments=("-p", exec_wf.workdirs[site])))
    stage_buckets = {site: _stage_in_buckets(state, site) for site in sites}
    out_plan = plan_stage_out(exec_wf, state.submit_dir, produced, selector)
    stage_jobs = _add_stage_in(state, stage_buckets)
    out_jobs = out_plan.add_jobs(state)
    inter_jobs = out_plan.add_inter_jobs(state)
    planned = Planned()
    edges = planned.edges
    same_site = _has_same_site_parent(exec_wf.jobs, exec_wf.edges)
    for index, job in enumerate(exec_wf.jobs):
        if job.site in create and job.type in RUNS_TASKS and not same_site[index]:
            edges.append((create[job.site], index))
    for aux, files, site in stage_jobs:
        edges.append((create[site], aux))
        readers = sorted({r for f in files for r in f.readers})
        edges.extend((aux, r) for r in readers)
        for f in files:  # the stage-in job is its readers' parent
            planned.outputs[(site, f.name)] = ([*f.readers, aux], 1)
    out_plan.link(edges, planned.outputs, out_jobs)
    out_plan.link_inter(edges, planned.outputs, inter_jobs)
    edges.extend((create[dst], index) for index, _, dst, _, _ in inter_jobs)
    return planned


def _stage_in_buckets(state: _Pass, site: str) -> list[tuple[int, list[_Staged]]]:
    """The site's staged files grouped into stage-in jobs: (level, files) per job (module docstring)."""
    files = state.staged.get(site)
    if not files:
        return []
    jobs = state.exec_wf.jobs
    per_level: dict[int, list[_Staged]] = {}
    for staged in files.values():
        per_level.setdefault(jobs[staged.readers[0]].level, []).append(staged)
    limit = cluster_limit(state.exec_wf, site, "stagein")
    out: list[tuple[int, list[_Staged]]] = []
    for level in sorted(per_level):
        group = per_level[level]
        readers = sorted({f.readers[0] for f in group})
        k = min(len(readers), limit or math.ceil(len(readers) / 10))
        rank = {r: i % k for i, r in enumerate(readers)}
        buckets: list[list[_Staged]] = [[] for _ in range(k)]
        for staged in group:
            buckets[rank[staged.readers[0]]].append(staged)
        out.extend((level, bucket) for bucket in buckets if bucket)
    return out


def _add_stage_in(state: _Pass, buckets: dict[str, list[tuple[int, list[_Staged]]]]
                  ) -> list[tuple[int, list[_Staged], str]]:
    out = []
    exec_wf = state.exec_wf
    for site, groups in buckets.items():
        counters: dict[int, int] = {}
        for level, files in groups:
            n = counters[level] = counters.get(level, -1) + 1
            workdir = exec_wf.workdirs[site]
            entries = [transfer_entry(i, "input", f.name, f.sources, site, url_in(workdir, f.name),
                                      f.executable, f.checksum, integrity=not f.checkpoint)
                       for i, f in enumerate(files, start=1)]
            job = ExecJob(id=f"stage_in_local_{safe(site)}_{level}_{n}", type="stage_in", site=site,
                          transformation=None, level=level, executable="sheaf-transfer",
                          arguments=transfer_options(exec_wf, workdir, state.submit_dir))
            out.append((state.add(job, transfer_text(entries), [f.name for f in files]), files, site))
    return out


def _has_same_site_parent(jobs: Sequence[ExecJob], edges: Iterable[tuple[int, int]]) -> list[bool]:
    found = [False] * len(jobs)
    for parent, child in edges:
        if jobs[parent].site == jobs[child].site:
            found[child] = True
    return found
