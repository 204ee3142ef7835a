"""The executable workflow: what the planner produces and codegen writes out.

An ``ExecutableWorkflow`` is a DAG of ``ExecJob`` records over dense ids ``0..n-1`` (list order is
the deterministic output order).  Each executable job runs one or more abstract tasks:

- ``compute``: one abstract compute job, ``tasks == (its id,)``, ``aggregator is None``;
- ``cluster``: several abstract jobs of one site run by an aggregator (``seqexec`` | ``mpiexec`` |
  ``decaf``), ``tasks`` in the order they run (topological within the cluster);
- ``subworkflow``: a ``pegasusWorkflow``/``condorWorkflow`` job, ``tasks == (its id,)``;
- auxiliary jobs (``stage_in``, ``stage_out``, ``inter_site``, ``create_dir``, ``cleanup``,
  ``register``) run no abstract task, ``tasks == ()`` (later work: data staging).

Every task carries the ``Task`` record of how it runs: its executable (pfn on its site), its argv
(file references already rendered as lfns) and its effective profiles.  A cluster's own
``profiles`` are the combination of its tasks' (runtime summed, memory max, ...).

What the planner fills in (``sheaf.planner.plan``), for codegen:
- profiles dicts are *shared* between jobs and tasks (most jobs have the same effective profiles):
  read-only, copy before changing one;
- ``compute``: ``executable`` is the pfn, ``arguments`` the argv, ``profiles`` the task's;
- ``subworkflow``: ``site == "local"``, ``executable is None``, ``tasks[0].executable`` is the
  workflow/DAG file (lfn), ``arguments`` the job's arguments;
- ``cluster``: ``executable`` is the aggregator's path (``pegasus::seqexec``/``mpiexec`` pfn,
  ``$PEGASUS_HOME/bin/pegasus-cluster``, or ``sheaf-cluster``/``sheaf-mpi-cluster``) -- for
  ``decaf`` the *basename of the JSON file* (the ``dataflow::decaf`` pfn), codegen writing the
  JSON and the run script; ``arguments`` are the aggregator's options (seqexec ``-f``, PMC
  ``--max-wall-time N``, then ``job.aggregator.arguments``); ``profiles`` hold the combined task
  profiles with the aggregator entry's profiles on top (PMC ``nodes``/``ppn``, globus
  ``xcount``/``host_xcount``/``maxwalltime``; Decaf ``glite.arguments``, ``dagman.post``, env...);
  per-task PMC options (``pmc_request_memory``, ``pmc_request_cpus``, ``pmc_priority``,
  ``pmc_task_arguments``) stay on each ``Task.profiles``; ``technique`` says which pass made it
  (``horizontal``, ``runtime``, ``label``, ``whole``) and ``label`` the label value;
- ``level`` is the job's level in the executable graph (``Task.level``: in the abstract one).

Invariants (tested by the planner's property tests, relied on by codegen):
- every abstract compute/sub-workflow job id appears in exactly one job's ``tasks``;
- ``edges`` are unique ``(parent, child)`` pairs of job ids, the graph is acyclic;
- for every abstract edge a -> b whose tasks land in different jobs A != B, B is reachable from A;
- a cluster's tasks share one site; a horizontal cluster's tasks share level and transformation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sheaf.model import Container, Profiles, Properties, ReplicaCatalog, SiteCatalog, Workflow
from sheaf.predict import AutoModel

JobKind = Literal["compute", "cluster", "stage_in", "stage_out", "inter_site", "create_dir", "cleanup",
                  "register", "subworkflow"]
Aggregator = Literal["seqexec", "mpiexec", "decaf"]
JOB_KINDS: tuple[JobKind, ...] = ("compute", "cluster", "stage_in", "stage_out", "inter_site",
                                  "create_dir", "cleanup", "register", "subworkflow")
#: the kinds of the data pass's jobs, which move or remove files and run no abstract task
DATA_KINDS: frozenset[JobKind] = frozenset({"stage_in", "stage_out", "inter_site", "create_dir", "cleanup",
                                           "register"})


@dataclass(slots=True)
class Task:
    """How one abstract job runs on its site.

    Read-only by convention, not ``frozen``: a frozen dataclass costs several times as much to build,
    and the planner builds one per abstract job.  ``profiles`` is shared between tasks: never mutate.
    """

    id: str                      # abstract job id
    transformation: str          # namespace::name:version
    executable: str              # pfn on the job's site
    argv: tuple[str, ...]        # arguments (not including the executable)
    profiles: Profiles           # effective profiles (TC > site > job > properties)
    level: int


@dataclass(slots=True)
class ExecJob:
    """One node of the executable workflow (one DAGMan JOB)."""

    id: str                               # DAG node name, e.g. preprocess_ID0000001, merge_..._PID2_ID1
    type: JobKind
    site: str | None
    transformation: str | None            # shared transformation of its tasks, else None
    level: int
    tasks: tuple[Task, ...] = ()
    aggregator: Aggregator | None = None
    profiles: Profiles = field(default_factory=dict)
    executable: str | None = None         # what the submit description runs (aggregator pfn for clusters)
    arguments: tuple[str, ...] = ()       # its arguments (aggregator options for clusters)
    label: str | None = None              # label value for label/whole clusters
    technique: str | None = None          # clusters: horizontal | runtime | label | whole

    @property
    def task_ids(self) -> list[str]:
        return [task.id for task in self.tasks]


@dataclass(slots=True)
class ExecutableWorkflow:
    name: str
    workflow: Workflow                    # the abstract workflow it was planned from
    properties: Properties
    jobs: list[ExecJob] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    sites: tuple[str, ...] = ()           # --sites
    output_sites: tuple[str, ...] = ()    # --output-sites (recorded; used by data staging later)
    clustering: tuple[str, ...] = ()      # --cluster techniques in order
    notes: list[str] = field(default_factory=list)      # what -v prints (merged-profile notes, ...)
    warnings: list[str] = field(default_factory=list)   # printed always
    metadata: Mapping[str, str] = field(default_factory=dict)
    #: automatic clustering's record, plan.json's ``autocluster``: ``groups``, what it chose per group
    #: (level, site, transformation, tasks, jobs, slots, the group's predicted seconds clustered and
    #: not); ``sheaf.app`` adds the whole plan's predicted makespan clustered and unclustered
    autocluster: dict[str, Any] = field(default_factory=dict)
    #: the model ``--cluster auto`` planned under (None without it): a sub-workflow's plan inherits it
    auto_model: AutoModel | None = None
    # Inputs of the first data-staging slice (codegen's stage-in jobs): ``--input-dir`` and the
    # merged catalogs (workflow-inline entries plus the standalone files).  None when not given.
    input_dir: str | None = None
    site_catalog: SiteCatalog | None = None
    replica_catalog: ReplicaCatalog | None = None
    #: stageable executables (``type: stageable``): (site, transformation as in ``Task.transformation``,
    #: source path or URL as in ``Task.executable``) -> the file name codegen transfers it to in the
    #: site's working directory before the job runs
    stageable: dict[tuple[str, str, str], str] = field(default_factory=dict)
    #: compound transformations: (site, transformation as in ``Task.transformation``) -> (source, file
    #: name) of each stageable executable it requires, staged beside its own
    required: dict[tuple[str, str], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: containerized transformations: (site, transformation fqn as in ``Task.transformation``) -> the
    #: catalog's container, which codegen runs the tasks in
    containers: dict[tuple[str, str], Container] = field(default_factory=dict)
    #: transformation (as in ``Task.transformation``) -> its catalog entry's hooks, run for every job of it
    transformation_hooks: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: whether the plan's hooks run: the properties turn them off as pegasus-monitord reads them
    #: (``pegasus.monitord.notifications = false`` or ``pegasus.monitord.notifications.max = 0``)
    notifications: bool = True
    #: the data-staging settings (``--output-dir``, ``--cleanup``, ...) the data pass reads
    data: DataOptions = field(default_factory=lambda: DataOptions())  # noqa: PLW0108 (defined below)
    #: whether the data pass (``sheaf.planner._data``) has added its jobs; ``data`` then names the submit
    #: directory, relative execution directory and kept files it planned for
    data_planned: bool = False
    #: files of jobs data reuse pruned that they mark ``stage_out`` (lfn -> register_replica): the data
    #: pass stages them out from their replicas
    reused_outputs: dict[str, bool] = field(default_factory=dict)
    #: (file, format) of the output replica catalog the register jobs write (``_stageout.register_target``),
    #: None when the plan registers nothing: a later plan's ``--reuse`` of this submit directory reads it
    replica_output: tuple[str, str] | None = None
    #: site -> the working directory its jobs run in (filled by the data pass)
    workdirs: dict[str, str] = field(default_factory=dict)
    #: auxiliary job id -> the text of its input file (a JSON transfer, cleanup or registration
    #: list), whose path codegen appends to the job's arguments
    job_inputs: dict[str, str] = field(default_factory=dict)
    #: stage-in, stage-out and inter-site job id -> (the bytes its transfer list moves, how many of its
    #: files have no known size and count 0): ``sheaf.planner._transfer_bytes``
    transfer_bytes: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: ``condorio``: compute/cluster job id -> (input paths on the staging site, output names), what
    #: HTCondor's file transfer moves in and out of the job's sandbox
    file_transfers: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    #: bypassed inputs (``condorio``/``nonsharedfs``): lfn -> the ``file://`` replica jobs read in place
    bypass: dict[str, str] = field(default_factory=dict)
    #: ``nonsharedfs``: compute/cluster job id -> its ``sheaf-lite`` manifest (JSON text)
    lite: dict[str, str] = field(default_factory=dict)
    #: sub-workflow job id -> lfn -> where this plan puts that input of the job for its child planner
    #: (staged into the job's site, or read in place): what the child's ``--cache`` tells it
    subworkflow_inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: sub-workflow job id -> lfn -> where its child puts that output for this plan's jobs and data jobs
    #: (the job's site's working directory): what the child's ``--output-map`` tells it
    subworkflow_outputs: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DataOptions:
    """What the data pass is told on the command line (``sheaf.planner._data``'s docstring)."""

    submit_dir: str | None = None         # the final submit directory; None: no data pass in plan()
    exec_dir: str | None = None           # pegasus-plan's relative execution directory (under shared scratch)
    keep: frozenset[str] = frozenset()    # files cleanup never removes (a parent's --output-map copies them)
    output_dir: str | None = None         # --output-dir as given (a relative one: _stageout.output_targets)
    staging_sites: Mapping[str, str] = field(default_factory=dict)  # --staging-site s=ss
    cleanup: str = "inplace"              # --cleanup none | inplace | leaf
    force: bool = False                   # --force: no data reuse
    rc_file: str | None = None            # where registration writes (None: register_target's default)
    cwd: str | None = None                # where relative replica paths are resolved
    input_dir: str | None = None          # --input-dir directories, joined by os.pathsep
    #: pegasus.dir.storage.mapper = Replica: where each staged-out file goes, by lfn and output site
    storage_map: ReplicaCatalog | None = None
