"""``write_plan``: the executable workflow written out, atomically.

Atomicity: everything is written into a temporary sibling of DIR (``.<DIR>.sheaf-new-XXXX``) and
renamed into place only once complete.  DIR must be new or empty, so a plan never overwrites an
earlier one.  DIR is the directory the plan's data pass planned for (its working directories live
beside it), so it is chosen before planning: a numbered submit directory, the next free ``runNNNN``
of a parent, is reserved by :func:`reserved_run_dir` (``_layout.reserve_run_dir``) around planning and
writing, and removed again when either fails.  ``replace`` is for sheaf's own sub-workflow jobs only
(pegasus-plan's ``--deferred``, which replans a sub-workflow on every retry): a DIR that holds an
earlier plan (a ``plan.json``) is replaced -- renamed aside, the new plan renamed in, the old one
removed -- so a failure at any point leaves either the old plan or the new one, never half of one.  A
non-empty DIR without ``replace`` (or a non-empty DIR that is not a plan, even with it) is a
``PlanningError`` raised before anything is written.  So is a DIR in which a workflow runs:
``replace`` takes every run lock of DIR (``sheaf.model._runlock``) and holds them until the swap is
done, so a running engine's directory and journal are never replaced under it.

Leftovers: the temporary directories are named ``.<DIR>.sheaf-new-<pid>-XXXX`` and
``.<DIR>.sheaf-old-<pid>-XXXX`` after the planning process, which holds an ``flock`` on each while
it works in it.  One whose owner is dead (no such pid) and whose lock is free was left by an
interrupted plan and is removed by the next plan into DIR or ``sheaf run DIR``
(:func:`remove_stale_siblings`); a numbered reservation removes those beside every directory of
its parent, and the empty directory a dead planner reserved (:func:`remove_dead_plans`): the
reservation holds a locked ``.runNNNN.sheaf-new-<pid>-XXXX`` of its own while the plan is made.  A storage
failure (disk full) while writing removes the temporary directory and raises ``StorageError``:
nothing half-written, the earlier plan untouched.

What is written per job (paths in ``_layout``): its submit description (``_submit``), its DAG lines
(``_dag``), the input file of a cluster (``_clusters``: ``.in`` for seqexec, a PMC DAG, a Decaf
directory with the JSON graph and the run script), and its ``plan.json`` record (``_planjson``).
The lists of the data jobs (what a stage-in, stage-out or inter-site job transfers, what a register
job registers, a long cleanup list) are written one after another into one file, ``<workflow>.lists``,
and each job names its bytes with ``--slice OFFSET:LENGTH`` before its own arguments
(``sheaf.jobtools._lists``): creating thousands of small files, one per data job, was what made a
staged plan slow to write.  The data jobs are the planner's (``sheaf.planner.plan_data``), which has
run before: ``write_plan`` only writes, and refuses a plan without them.  The tasks of containerized
transformations are wrapped to run in their container (``_containers``), whose podman configuration
the plan holds.

``plan.json`` and the cache file depend on nothing the DAG's writing does: for a plan of
``BESIDE_JOBS`` jobs or more a forked child writes them while this process writes the DAG, the submit
files and the lists (``_beside``: where a fork is safe; elsewhere they are written after the DAG).

Shared submit descriptions: unclustered compute jobs of one transformation at one site, with the same
profiles and command (arguments aside), share one description (``_submit.render_shared_submit``),
written into the DAG as a ``SUBMIT-DESCRIPTION shared.<k>.<transformation>.<site> { ... }`` block
right before the first job that uses it (HTCondor >= 10 reads them; a name no job id takes), and
get their own values from their ``VARS`` line (a job with redirected streams or an unquoted argument
string keeps its own) -- what DAGMan's manual shows for nodes that "only
vary in filenames".  So a plan of 10^5 such jobs writes no submit file for them, where it wrote 10^5.
Auxiliary jobs share descriptions the same way, and so do clusters: each has profiles of its own (summed
runtimes), so their descriptions are shared by what they say, not by their profiles -- the clusters
of a horizontal level with the same size share one, each keeping its input file (``.in``, PMC DAG).
A job with redirected streams, an unquoted argument string, file transfers or PegasusLite, and a
sub-workflow, keeps a file of its own.
The property ``sheaf.submit.shared = false`` writes one description file per job, as before.

What a clustered job runs: the planner's ``executable`` and ``arguments`` (the aggregator and its
options), then codegen appends the cluster's input file -- the ``.in`` file for seqexec, the PMC DAG
(after ``--max-wall-time`` from the ``maxwalltime`` profile unless already given) for mpiexec.  When
the planner names no aggregator executable, sheaf's own ``sheaf-cluster`` / ``sheaf-mpi-cluster``
run it -- for seqexec the compiled ``sheaf-cluster-c`` where it was built (``seqexec_runner``).
A Decaf cluster runs its run script; the planner's ``executable`` names the JSON file
(the ``dataflow::decaf`` pfn, basename taken).

Paths: an executable or a replica given as a relative path (``bin/keg``) is written absolute, from
the directory ``sheaf plan`` runs in (jobs run elsewhere); a bare command name (``sheaf-cluster``) is
looked up beside the running interpreter, then on PATH.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import BinaryIO, TextIO

from sheaf._gc import gc_paused
from sheaf.codegen._beside import start_beside
from sheaf.codegen._clusters import (
    decaf_conf,
    decaf_conf_name,
    decaf_graph,
    decaf_json_name,
    decaf_script,
    has_option,
    local_executable,
    max_wall_time,
    pmc_dag,
    seqexec_input,
)
from sheaf.codegen._containers import ContainerRun, containerize
from sheaf.codegen._dag import NodeSettings, config_text, edge_lines, maxjobs_lines, node_lines, node_settings
from sheaf.codegen._launch import launched, wrap_launched_tasks
from sheaf.codegen._layout import JobPaths, Layout, reserve_run_dir, safe_name, tool_path
from sheaf.codegen._planjson import (
    PlanJobRecord,
    container_record,
    contract_profiles,
    encode_plan,
    hook_records,
    task_runtimes,
)
from sheaf.codegen._siblings import remove_dead_plans, remove_stale_siblings, sibling
from sheaf.codegen._staging import pairs_text, transfer_lines
from sheaf.codegen._submit import (
    Command,
    SubmitContext,
    arguments_unquoted,
    render_shared_submit,
    render_submit,
    shared_vars,
    with_streams,
)
from sheaf.codegen._subworkflow import PlanContext, condor_dagman, output_map_jobs, produced_dirs
from sheaf.codegen._subworkflow_node import SubworkflowWriter, cache_lines
from sheaf.errors import PlanningError, StorageError
from sheaf.model import Graph, Profiles, RunLocks, build_graph, merge_profiles
from sheaf.planner import ExecJob, ExecutableWorkflow

#: auxiliary jobs that differ only in their arguments share descriptions too (the data pass makes
#: thousands of them for 10^5 jobs: one description file each was most of the plan's files)
#: one object for "no profiles", so that jobs without any (auxiliary jobs) share merged profiles and
#: descriptions, which are cached by the identity of the profiles
_NO_PROFILES: Profiles = {}
_SHARED = frozenset({"stage_in", "stage_out", "inter_site", "cleanup", "register", "cluster"})
_NODE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_NODE_NAMES = re.compile(r"[A-Za-z0-9_.\-]+(?:\n[A-Za-z0-9_.\-]+)*")  # node names, one a line
_RESERVED_NODES = {"ALL_NODES", "PARENT", "CHILD"}


@dataclass(frozen=True, slots=True)
class PlanFiles:
    """What ``write_plan`` wrote (paths absolute, except ``submit_files``: relative to ``directory``)."""

    directory: str
    dag: str
    config: str
    plan_json: str
    submit_files: tuple[str, ...]
    job_types: Mapping[str, int]
    edges: int
    warnings: tuple[str, ...] = ()


#: The compiled seqexec runner (setup.py builds it when a C compiler is there).  A path, not an import:
#: the job tools stand right of codegen.
COMPILED_CLUSTER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "jobtools", "_bin", "sheaf-cluster-c")


def seqexec_runner() -> tuple[str, tuple[tuple[str, str], ...]]:
    """The executable of a seqexec cluster the planner gave none, and the environment it needs.

    ``sheaf-cluster-c`` when built (it starts in a small fraction of the Python ``sheaf-cluster``'s
    start-up) unless ``SHEAF_PURE_PYTHON=1``; it hands what it does not do itself to the Python one,
    named in ``SHEAF_CLUSTER_FALLBACK`` (an editable install's binary cannot find it alone)."""
    python = tool_path("sheaf-cluster")
    if os.environ.get("SHEAF_PURE_PYTHON") == "1" or not os.access(COMPILED_CLUSTER, os.X_OK):
        return python, ()
    return COMPILED_CLUSTER, (("SHEAF_CLUSTER_FALLBACK", python),)


def write_plan(exec_wf: ExecutableWorkflow, directory: str | os.PathLike[str], *, replace: bool = False,
               basename: str | None = None,
               extra_files: Callable[[PlanFiles], Mapping[str, str]] | None = None,
               options: Mapping[str, object] | None = None,
               context: PlanContext | None = None,
               finish: Callable[[str, PlanFiles], None] | None = None) -> PlanFiles:
    """Write the DAGMan files, cluster inputs and ``plan.json`` of ``exec_wf`` into ``directory``, the
    submit directory its data pass planned for (``sheaf.planner.plan_data``: run by ``plan()`` given
    ``DataOptions(submit_dir=...)``; a numbered ``runNNNN`` is reserved first, :func:`reserved_run_dir`).
    ``basename`` names the per-workflow files, ``extra_files`` (given what was written, the final
    paths: name -> text) are written beside them, ``options`` is recorded in plan.json (with the data
    pass's relative execution directory as ``exec_dir``, when it had one), and ``context`` is what
    sub-workflow jobs inherit (``_subworkflow.PlanContext``).  ``finish`` (the staging directory, what
    was written) reshapes the plan before it takes its place (``sheaf plan --group-size``): it works in
    the staging directory, so an error or a kill there leaves nothing half-written either."""
    target = os.path.realpath(os.fspath(directory))  # through a symbolic link to the real directory
    context = context or PlanContext()
    _check_planned(exec_wf, target, context)
    check_target(target, replace)
    exec_dir = exec_wf.data.exec_dir
    recorded = {**(options or {}), "exec_dir": exec_dir} if exec_dir is not None else (options or {})
    if exec_wf.replica_output is not None:  # what a later plan's --reuse of this directory reads
        recorded = {**recorded, "replica_output": {"file": exec_wf.replica_output[0],
                                                   "format": exec_wf.replica_output[1]}}
    with gc_paused():  # the writer allocates millions of acyclic objects: no generation-2 pass over them
        return _write_into(target, exec_wf, basename, extra_files, recorded, context, exec_dir, finish)


def _check_planned(exec_wf: ExecutableWorkflow, target: str, context: PlanContext) -> None:
    """Refuse a plan whose data pass has not run, or ran for another directory or kept too little."""
    planned = exec_wf.data.submit_dir
    if not exec_wf.data_planned or planned is None:
        raise PlanningError("the executable workflow has no data jobs: its data pass has not run; nothing "
                            "was written", path=target,
                            rule="plan with DataOptions(submit_dir=DIR), or call sheaf.planner.plan_data("
                                 "exec_wf, DIR), before write_plan(exec_wf, DIR)")
    if os.path.realpath(planned) != target:
        raise PlanningError("the executable workflow was planned for another submit directory; nothing was "
                            "written", path=target, value=planned,
                            rule="write_plan writes into the directory the data pass planned for")
    unkept = sorted(set(context.output_map) - exec_wf.data.keep)
    if unkept:
        raise PlanningError("the data pass may clean up files the output map copies; nothing was written",
                            path=target, value=unkept[0],
                            rule="plan with DataOptions(keep=...) holding every --output-map file")


@contextlib.contextmanager
def reserved_run_dir(parent: str | os.PathLike[str], name: str | None = None) -> Iterator[str]:
    """Reserve the next free ``parent/runNNNN`` -- or ``parent/name``, else ``name-2``, ... -- for a plan
    still to be made, and yield its real path (module docstring).  The dead planners' leftovers in
    ``parent`` are removed first, so that the number of a plan killed while planning or writing is free
    again; while the block runs a locked ``.runNNNN.sheaf-new-<pid>-*`` sibling tells other planners
    the directory is a live one's.  When the block raises, the directory and the parents it made are
    removed again while empty."""
    target = os.path.realpath(os.fspath(parent))
    missing = _missing_dirs(target)
    remove_dead_plans(target)
    made: list[str] = []
    try:
        made.append(reserve_run_dir(target, name))
        guard = tempfile.mkdtemp(prefix=f"{sibling(made[0], 'new')}{os.getpid()}-", dir=target)
    except OSError as exc:
        _remove_empty([*made, *missing])
        _refuse_too_long(exc, made[0] if made else os.path.join(target, name or "runNNNN"))
        raise StorageError.of(exc, f"the plan directory under {target}", "nothing was written") from None
    lock = _hold(guard)
    try:
        yield made[0]
    except BaseException:
        _release(guard, lock)
        _remove_empty([*made, *missing])
        raise
    _release(guard, lock)


def _release(guard: str, lock: int) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(guard)
    os.close(lock)


def _missing_dirs(path: str) -> list[str]:
    """``path`` and its ancestors that do not exist yet, deepest first."""
    out: list[str] = []
    while not os.path.exists(path) and os.path.dirname(path) != path:
        out.append(path)
        path = os.path.dirname(path)
    return out


def _refuse_too_long(exc: OSError, directory: str) -> None:
    """A plan directory whose name is too long for the file system (``ENAMETOOLONG``, the temporary
    sibling the plan is written into adding about 30 bytes to its last part) is bad input, not a
    storage failure: a ``PlanningError``."""
    if exc.errno == errno.ENAMETOOLONG:
        raise PlanningError(f"the plan directory's name is too long for the file system ({exc.strerror}); "
                            "nothing was written",
                            rule="each part of the plan directory's path, with about 30 bytes more for the "
                            "temporary directory the plan is written into, fits a file name (255 bytes)",
                            value=directory) from None


def _remove_empty(paths: Sequence[str]) -> None:
    """A failed plan leaves nothing: the directories it made, while still empty, deepest first."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def _write_into(final: str, exec_wf: ExecutableWorkflow, basename: str | None,
                extra_files: Callable[[PlanFiles], Mapping[str, str]] | None,
                options: Mapping[str, object], context: PlanContext,
                exec_dir: str | None = None,
                finish: Callable[[str, PlanFiles], None] | None = None) -> PlanFiles:
    layout = Layout(final, exec_wf.name, basename, exec_dir)
    containers = containerize(exec_wf, layout.final_dir, exec_wf.workdirs)
    jobs, edges = list(exec_wf.jobs), list(exec_wf.edges)
    placed = _output_map(exec_wf, layout, jobs, edges, context.output_map)
    parent = os.path.dirname(final)
    try:
        os.makedirs(parent, exist_ok=True)
        remove_stale_siblings(final)
        tmp = tempfile.mkdtemp(prefix=f"{sibling(final, 'new')}{os.getpid()}-", dir=parent)
    except OSError as exc:
        _refuse_too_long(exc, final)
        raise StorageError.of(exc, f"the plan directory {final}", "nothing was written") from None
    guard = _hold(tmp)
    try:
        os.chmod(tmp, 0o755)
        writer = _Writer(exec_wf, layout, tmp, containers, options=dict(options), context=context)
        if basename is not None and layout.name != basename:
            writer.warnings.append(f"--basename {basename!r} is not a file name: the per-workflow files are "
                                   f"named {layout.name!r} (letters, digits, '_', '.' and '-' only)")
        files = writer.write(jobs, edges)
        if placed:
            writer.put("output-map.in", pairs_text(placed))
        for name, text in (extra_files(files) if extra_files else {}).items():
            writer.put(name, text)
        if finish is not None:
            finish(tmp, files)
        with RunLocks(final) as locks:
            _refuse_running(final, locks)
            _swap(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StorageError.of(exc, f"the plan into {final}", "nothing was written; an earlier plan "
                              "there is untouched") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(guard)
    return files


def _output_map(exec_wf: ExecutableWorkflow, layout: Layout, jobs: list[ExecJob],
                edges: list[tuple[int, int]], wanted: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """``--output-map`` (a sub-workflow's): the copying job appended to ``jobs`` and ``edges``."""
    if not wanted:
        return []
    job, after, pairs = output_map_jobs(
        exec_wf, jobs, wanted, lambda j: site_workdir(exec_wf, layout, j),
        os.path.join(layout.final_dir, "output-map.in"), tool_path("sheaf-transfer"))
    if job is not None:
        jobs.append(job)
        edges.extend((index, len(jobs) - 1) for index in after)
    return pairs


def site_workdir(exec_wf: ExecutableWorkflow, layout: Layout, job: ExecJob) -> str:
    """Where ``job`` runs: its site's working directory (the data pass's)."""
    site = job.site or "local"
    return exec_wf.workdirs.get(site) or layout.scratch(site)


def _hold(path: str) -> int:
    """An ``flock`` on directory ``path`` for as long as this process works in it."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _refuse_running(final: str, locks: RunLocks) -> None:
    if locks.held:
        raise PlanningError("a workflow is running in the plan directory; nothing was written",
                            path=final, rule="a plan never replaces the directory of a running workflow",
                            value=locks.held[0])


def check_target(final: str, replace: bool = False) -> None:
    """Raise ``PlanningError`` unless ``final`` may receive a plan (module docstring)."""
    if os.path.lexists(final) and not os.path.isdir(final):
        raise PlanningError("the plan directory exists and is not a directory", path=final,
                            rule="--dir names a new or empty directory")
    if not os.path.isdir(final) or _is_empty(final):
        return
    if not replace:
        raise PlanningError("the plan directory is not empty; nothing was written", path=final,
                            rule="a plan never overwrites an earlier one: "
                                 "the submit directory is new or empty")
    if not os.path.isfile(os.path.join(final, "plan.json")):
        raise PlanningError("refusing to replace a non-empty directory that holds no earlier plan "
                            "(no plan.json); nothing was written", path=final,
                            rule="a sub-workflow's replanning replaces only a directory sheaf plan wrote")
    with RunLocks(final) as locks:
        _refuse_running(final, locks)


def _is_empty(path: str) -> bool:
    with os.scandir(path) as entries:
        return next(entries, None) is None


def _check_ids(ids: Sequence[str]) -> None:
    """Every id a DAGMan node name, none twice; the first offender named."""
    # one scan of all the ids joined, and the loop only to name the offender
    joined = "\n".join(ids)
    if _NODE_NAMES.fullmatch(joined) and joined.count("\n") == len(ids) - 1 and len(set(ids)) == len(ids):
        upper = f"\n{joined.upper()}\n"
        if not any(f"\n{name}\n" in upper for name in _RESERVED_NODES):
            return
    seen: set[str] = set()
    for name in ids:
        if not _NODE_NAME.fullmatch(name) or name.upper() in _RESERVED_NODES:
            raise PlanningError("a job id cannot be a DAGMan node name", value=name,
                                rule="node names use A-Z a-z 0-9 _ . - only")
        if name in seen:
            raise PlanningError("two jobs of the plan have the same id", value=name,
                                rule="job ids are unique")
        seen.add(name)


def _swap(tmp: str, final: str) -> None:
    if not os.path.isdir(final) or _is_empty(final):
        os.replace(tmp, final)  # a missing or empty directory is replaced in one rename
        return
    old = f"{sibling(final, 'old')}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    guard = _hold(final)  # the old plan, wherever it is renamed to, until it is removed
    try:
        os.rename(final, old)
        try:
            os.rename(tmp, final)
        except BaseException:
            os.rename(old, final)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        os.close(guard)


#: the plan size from which plan.json is written by a forked child (``_beside``): a fork costs
#: milliseconds, a large plan's records and JSON seconds
BESIDE_JOBS = 1_000


@dataclass(slots=True)
class _Written:
    submits: list[str] = field(default_factory=list)
    categories: dict[str, None] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Writer:
    exec_wf: ExecutableWorkflow
    layout: Layout
    root: str
    containers: ContainerRun
    made: set[str] = field(default_factory=set)
    graph: Graph | None = None
    base: Profiles = field(default_factory=dict)
    merged: dict[int, tuple[Profiles, Profiles]] = field(default_factory=dict)
    # shared descriptions by (command without argv, profiles' id, transformation, site), a cluster's by text
    shared: dict[tuple[object, ...], tuple[Profiles | None, str]] = field(default_factory=dict)
    ids: frozenset[str] = frozenset()
    options: dict[str, object] = field(default_factory=dict)  # the command line's, for plan.json
    context: PlanContext = field(default_factory=PlanContext)
    subwf: SubworkflowWriter | None = None
    jobs: list[ExecJob] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lists: BinaryIO | None = None  # the data jobs' lists file, opened at the first (module docstring)
    lists_size: int = 0
    tools: dict[str, str] = field(default_factory=dict)

    def _tool(self, name: str) -> str:
        """``tool_path(name)``, looked up once per writer: it stats a file, and every data job runs one."""
        found = self.tools.get(name)
        if found is None:
            found = self.tools[name] = tool_path(name)
        return found

    def write(self, jobs: list[ExecJob], edges: list[tuple[int, int]]) -> PlanFiles:
        ctx = SubmitContext(self.exec_wf.name, self.layout.log)
        self.base = self.exec_wf.properties.profiles()
        self.jobs = jobs
        wf = self.exec_wf
        if any(job.type == "subworkflow" for job in jobs):
            # for condor_submit_dag -dagman, which passes it down to every sub-DAG
            self.options["condor_dagman"] = condor_dagman(self.context.transformations, os.environ)
        ids = [job.id for job in jobs]
        # plan.json and the cache file depend on nothing the DAG's writing does: made beside it
        beside = start_beside(lambda: self._plan_files(jobs, ids, edges), fork=len(jobs) >= BESIDE_JOBS)
        try:
            _check_ids(ids)
            # the launcher changes commands only, which plan.json does not hold: wrapped beside it
            wrap_launched_tasks(wf)
            out = self._dag(jobs, ids, edges, ctx)
            self.put(self.layout.config, config_text(wf.workflow.profiles, wf.properties))
            for rel, text in self.containers.files.items():
                self._mkdir(os.path.dirname(rel))
                self.put(rel, text)
        except BaseException:
            beside.cancel()
            raise
        beside.join()
        final = self.layout.final_dir
        return PlanFiles(final, os.path.join(final, self.layout.dag), os.path.join(final, self.layout.config),
                         os.path.join(final, "plan.json"), tuple(out.submits), out.types, len(edges),
                         tuple(ctx.warnings) + tuple(self.warnings))

    def _dag(self, jobs: list[ExecJob], ids: list[str], edges: list[tuple[int, int]],
             ctx: SubmitContext) -> _Written:
        """The DAG file, with each job's own files; streamed: at 10^6 jobs its lines never sit in memory
        at once."""
        with open(os.path.join(self.root, self.layout.dag), "x", encoding="utf-8", buffering=1 << 20) as dag:
            dag.write(f"# DAG of workflow {self.layout.name}, written by sheaf plan "
                      "(HTCondor DAGMan syntax)\n"
                      f"CONFIG {self.layout.config}\nJOBSTATE_LOG jobstate.log\n")
            try:
                out = self._jobs(jobs, dag, ctx)
            finally:
                if self.lists is not None:
                    self.lists.close()
            tail = edge_lines(ids, edges) + maxjobs_lines(list(out.categories), self.exec_wf.properties)
            dag.writelines(line + "\n" for line in tail)
        return out

    def _plan_files(self, jobs: list[ExecJob], ids: list[str], edges: list[tuple[int, int]]) -> None:
        """plan.json and the cache file (module docstring)."""
        wf = self.exec_wf
        # streamed, as the DAG is: held whole, the text of 10^6 outputs would be the plan's peak of memory
        self.put_lines(f"{self.layout.name}.cache", cache_lines(produced_dirs(wf, self._workdir)))
        self.put("plan.json", encode_plan(wf.name, self._records(jobs), ids, edges, wf.sites, wf.output_sites,
                                          wf.clustering, self.options,
                                          hook_records(wf.workflow.hooks) if wf.notifications else [],
                                          wf.autocluster))

    def _records(self, jobs: list[ExecJob]) -> list[PlanJobRecord]:
        """Each job's plan.json record; its profiles' record made once per distinct profile dict."""
        contracted: dict[int, tuple[Profiles, dict[str, dict[str, str]]]] = {}
        records = []
        # most workflows have no hooks: then no job's tasks are looked up for them
        hooked = self.exec_wf.notifications and (bool(self.exec_wf.transformation_hooks) or any(
            job.hooks for job in self.exec_wf.workflow.jobs.values()))
        for job in jobs:
            profiles = self._profiles(job)
            hit = contracted.get(id(profiles))
            if hit is None or hit[0] is not profiles:
                hit = contracted[id(profiles)] = (profiles, contract_profiles(profiles))
            moved, unknown = self.exec_wf.transfer_bytes.get(job.id, (None, None))
            records.append(PlanJobRecord(job.id, job.type, job.site, job.transformation, job.level,
                                         [task.id for task in job.tasks], job.aggregator, hit[1],
                                         container_record(self.containers.jobs.get(job.id)),
                                         self._hooks(job) if hooked else None, task_runtimes(job.tasks),
                                         moved, unknown or None))
        return records

    def _jobs(self, jobs: list[ExecJob], dag: TextIO, ctx: SubmitContext) -> _Written:
        """Each job's files and DAG lines; settings computed once per distinct (profiles, type)."""
        out = _Written()
        share = self.exec_wf.properties.get_bool("sheaf.submit.shared", True)
        self.ids = frozenset(job.id for job in jobs)
        exitcode = self._tool("sheaf-exitcode")
        settings: dict[tuple[int, str], tuple[Profiles, NodeSettings]] = {}
        for index, job in enumerate(jobs):
            paths = self.layout.job(index, job.id)
            self._mkdir(paths.rel_dir)
            profiles = self._profiles(job)
            cached = settings.get((id(profiles), job.type))
            if cached is None or cached[0] is not profiles:
                cached = settings[(id(profiles), job.type)] = (
                    profiles, node_settings(job.type, profiles, exitcode, job.id))
            out_base = paths.abs("")
            # resolved once (a cluster's command writes its input file)
            command = None if job.type == "subworkflow" else self._resolved(job, paths, profiles)
            if command is None:
                lines = self._subworkflows().lines(job, paths, cached[1], out_base + ".out")
            elif share and (job.type in _SHARED or (job.type == "compute" and len(job.tasks) == 1)) and \
                    command.shareable:
                name = self._shared(job, profiles, command, ctx, dag)
                lines = node_lines(job.id, name, cached[1], out_base + ".out",
                                   more_vars=shared_vars(job, command, paths.rel_dir))
            else:
                self.put(paths.rel_submit, render_submit(job, profiles, command, out_base, ctx))
                if job.id in self.exec_wf.lite:
                    self.put(paths.rel(".lite.json"), self.exec_wf.lite[job.id])
                out.submits.append(paths.rel_submit)
                lines = node_lines(job.id, paths.rel_submit, cached[1], out_base + ".out")
            dag.write("\n".join(lines) + "\n")
            if cached[1].category:
                out.categories[cached[1].category] = None
            out.types[job.type] = out.types.get(job.type, 0) + 1
        return out

    def _hooks(self, job: ExecJob) -> list[dict[str, str]] | None:
        """The shell hooks of the abstract jobs ``job`` runs (None without any: the key is omitted)."""
        abstract, of_transformation = self.exec_wf.workflow.jobs, self.exec_wf.transformation_hooks
        found = [abstract[t.id].hooks for t in job.tasks if t.id in abstract and abstract[t.id].hooks]
        found += [of_transformation[t.transformation] for t in job.tasks
                  if t.transformation in of_transformation]
        return hook_records(*found) or None

    def _shared(self, job: ExecJob, profiles: Profiles, command: Command, ctx: SubmitContext,
                dag: TextIO) -> str:
        """The name of the shared description ``job`` uses, written into the DAG on first use."""
        text = None
        if job.type == "cluster":  # profiles of its own (module docstring): keyed by what it says
            text = render_shared_submit(job, profiles, command, self.layout.final_dir, ctx)
            key: tuple[object, ...] = (text,)
            owner = None
        else:
            key = (command.executable, command.initialdir, command.universe, command.environment,
                   id(profiles), job.transformation, job.site, job.type)
            owner = profiles
        hit = self.shared.get(key)
        if hit is None or hit[0] is not owner:
            name = (f"shared.{len(self.shared)}.{safe_name(job.transformation or job.type)}."
                    f"{safe_name(job.site or '')}")
            while name in self.ids:  # DAGMan: a description's name is no node's
                name += "_"
            if text is None:
                text = render_shared_submit(job, profiles, command, self.layout.final_dir, ctx)
            dag.write(f"SUBMIT-DESCRIPTION {name} {{\n{text}}}\n")
            hit = self.shared[key] = (owner, name)
        return hit[1]

    def _resolved(self, job: ExecJob, paths: JobPaths, profiles: Profiles) -> Command:
        command = self._command(job, paths, profiles)
        files = self.exec_wf.file_transfers.get(job.id)
        if files is not None:
            workdir = self.exec_wf.workdirs.get(job.site or "")  # the job's initialdir
            # a declared output that is the job's stdout or stderr comes back once, as that stream
            streams = {command.stdout, command.stderr} - {None}
            outputs = tuple(lfn for lfn in files[1]
                            if workdir is None or os.path.join(workdir, lfn) not in streams)
            command = replace(command, transfer=transfer_lines(job, files[0], outputs, workdir=workdir))
        if job.id in self.exec_wf.lite:  # PegasusLite: the job's own command under the wrapper
            # the job's redirected streams are files of sheaf-lite's job directory (its manifest's
            # "streams"), pulled and pushed with its other files
            command = replace(command, executable=self._tool("sheaf-lite"), raw_arguments=None, lite=True,
                              argv=(paths.abs(".lite.json"), "--", command.executable, *command.argv),
                              stdin=None, stdout=None, stderr=None)
        if "/" not in command.executable:  # a bare name (sheaf-cluster): HTCondor needs a path
            command = replace(command, executable=self._tool(command.executable))
        return command

    def _profiles(self, job: ExecJob) -> Profiles:
        """The job's profiles over the properties' layer; merged once per distinct profile dict
        (the planner shares them between jobs)."""
        own: Profiles = job.profiles or (job.tasks[0].profiles if len(job.tasks) == 1 else _NO_PROFILES)
        if not self.base:
            return own
        hit = self.merged.get(id(own))
        if hit is None or hit[0] is not own:
            hit = self.merged[id(own)] = (own, merge_profiles(self.base, own))
        return hit[1]

    def _workdir(self, job: ExecJob) -> str:
        return site_workdir(self.exec_wf, self.layout, job)

    def _command(self, job: ExecJob, paths: JobPaths, profiles: Profiles) -> Command:
        if job.type == "compute" and len(job.tasks) == 1:
            task = job.tasks[0]
            command = Command(local_executable(task.executable), task.argv, self._workdir(job))
            raw = (arguments_unquoted(profiles) and not launched(task)
                   and (job.site, task.transformation) not in self.exec_wf.containers)
            return with_streams(command, self.exec_wf.workflow.jobs.get(task.id), raw=raw)
        if job.type == "cluster":
            return self._cluster(job, paths, profiles)
        if job.id in self.exec_wf.job_inputs:  # a data job: its list, a slice of the plan's lists file
            span = self._data_list(self.exec_wf.job_inputs[job.id])
            return Command(self._tool(job.executable or ""),
                           (*span, *job.arguments, os.path.join(self.layout.final_dir, self.layout.lists)),
                           self.layout.final_dir, "local")
        if not job.executable:
            raise PlanningError(f"job '{job.id}' of type {job.type} names no executable",
                                rule="every job of the plan runs an executable", value=job.id)
        if job.type == "compute":
            return Command(job.executable, job.arguments, self._workdir(job))
        return Command(job.executable, job.arguments, self.layout.final_dir, "local")

    def _data_list(self, text: str) -> tuple[str, str]:
        """``text`` appended to the lists file; the ``--slice`` arguments that name it there."""
        data = text.encode()
        if self.lists is None:
            self.lists = open(os.path.join(self.root, self.layout.lists), "xb", buffering=1 << 20)  # noqa: SIM115
        self.lists.write(data)
        start, self.lists_size = self.lists_size, self.lists_size + len(data)
        return "--slice", f"{start}:{len(data)}"

    def _subworkflows(self) -> SubworkflowWriter:
        if self.subwf is None:
            index = {job.id: i for i, job in enumerate(self.jobs)}
            self.subwf = SubworkflowWriter(self.exec_wf, self.layout, self.context, self.put, self._mkdir,
                                           self._workdir, self.warnings,
                                           lambda node: self.layout.job(index[node], node))
        return self.subwf

    def _cluster(self, job: ExecJob, paths: JobPaths, profiles: Profiles) -> Command:
        if job.aggregator == "decaf":
            return self._decaf(job, paths)
        if job.aggregator == "mpiexec":
            self.put(paths.rel(".dag"), pmc_dag(job, self._graph()))
            argv = list(job.arguments)
            wall = max_wall_time(profiles, f"cluster {job.id}")
            if wall and not has_option(argv, "--max-wall-time"):
                argv += ["--max-wall-time", wall]
            return Command(job.executable or self._tool("sheaf-mpi-cluster"), (*argv, paths.abs(".dag")),
                           self._workdir(job))
        self.put(paths.rel(".in"), seqexec_input(job))
        args = (*job.arguments, paths.abs(".in"))
        if job.executable and job.executable != "sheaf-cluster":  # a catalog's or PEGASUS_HOME's
            return Command(job.executable, args, self._workdir(job))
        runner, environment = seqexec_runner()
        return Command(runner, args, self._workdir(job), environment=environment)

    def _decaf(self, job: ExecJob, paths: JobPaths) -> Command:
        rel = f"{paths.rel_dir}/{job.id}"
        self._mkdir(rel)
        json_name = decaf_json_name(job)
        self.put(f"{rel}/{json_name}", decaf_graph(job, self._graph()))
        self.put(f"{rel}/{decaf_conf_name(job)}", decaf_conf(job))
        script = f"{rel}/{job.id}.sh"
        self.put(script, decaf_script(job, json_name))
        os.chmod(os.path.join(self.root, script), 0o755)
        return Command(f"{self.layout.final_dir}/{script}", (), f"{self.layout.final_dir}/{rel}",
                       environment=(("PEGASUS_SCRATCH_DIR", self._workdir(job)),))

    def _graph(self) -> Graph:
        if self.graph is None:
            self.graph = build_graph(self.exec_wf.workflow)
        return self.graph

    def _mkdir(self, rel: str) -> None:
        if rel not in self.made:
            os.makedirs(os.path.join(self.root, rel), exist_ok=True)
            self.made.add(rel)

    def put_lines(self, rel: str, lines: Iterable[str]) -> None:
        """Write a file made a line at a time (never held whole)."""
        with open(os.path.join(self.root, rel), "x", encoding="utf-8", buffering=1 << 20) as out:
            out.writelines(lines)

    def put(self, rel: str, content: str | bytes) -> None:
        data = content.encode() if isinstance(content, str) else content
        fd = os.open(os.path.join(self.root, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
