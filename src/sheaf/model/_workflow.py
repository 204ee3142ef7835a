"""The abstract workflow: jobs, the files they use, and their explicit dependencies.

Designed for 10^6 jobs: records are slotted dataclasses; sequences are tuples; empty profile,
hook and metadata mappings share one immutable empty mapping instead of a dict per job.  The
model is read-only by convention: readers build it, later stages derive new structures from it
(the planner never edits an abstract job).

Invariants (enforced by readers and by ``validate``):

- ``Workflow.jobs`` maps each job id to its job, in file order; ids are unique.
- ``Workflow.dependencies`` holds the *explicit* dependencies (``jobDependencies``, DAX
  ``<child>/<parent>``) as ``parent id -> children ids``, in file order.  Dependencies implied by
  files (a job that consumes a file another job produces depends on it) are not stored here: the
  graph builder (``sheaf.model.build_graph``) adds them, so a round trip keeps what the user wrote.
- Job arguments mix strings and ``FileRef`` (DAX ``<filename file=.../>``); Pegasus 5 YAML holds only
  strings, so a YAML round trip never creates a ``FileRef``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sheaf.model._catalogs import ReplicaCatalog, SiteCatalog, TransformationCatalog
from sheaf.model._empty import EMPTY

JobType = Literal["job", "pegasusWorkflow", "condorWorkflow"]
UseType = Literal["input", "output", "checkpoint"]
JOB_TYPES: tuple[JobType, ...] = ("job", "pegasusWorkflow", "condorWorkflow")
USE_TYPES: tuple[UseType, ...] = ("input", "output", "checkpoint")



@dataclass(frozen=True, slots=True)
class FileRef:
    """A file named inside a job's arguments (DAX ``<filename file="f.a"/>``)."""

    lfn: str

    def __str__(self) -> str:
        return self.lfn


@dataclass(frozen=True, slots=True)
class Use:
    """One job's use of one logical file.

    ``stage_out`` and ``register_replica`` matter for outputs and checkpoints, ``bypass_staging`` for
    inputs.  The record's defaults are all false; readers apply their format's defaults (an output
    without ``stageOut``/``registerReplica`` is staged out and registered, as in DAX 3 and the
    Pegasus API).
    """

    lfn: str
    type: UseType = "input"
    stage_out: bool = False
    register_replica: bool = False
    optional: bool = False
    bypass_staging: bool = False
    size: int | None = None
    metadata: Mapping[str, str] = EMPTY
    #: Pegasus 5.0.x ``forPlanning``: the file is needed by the planner itself (kept through a round trip).
    for_planning: bool = False

    @property
    def produces(self) -> bool:
        return self.type != "input"

    @property
    def consumes(self) -> bool:
        return self.type != "output"


Argument = str | FileRef


@dataclass(slots=True, eq=True)
class Job:
    """An abstract job: a compute job (``type == "job"``) or a sub-workflow job.

    For a compute job ``name``/``namespace``/``version`` name its transformation.  For
    ``pegasusWorkflow``/``condorWorkflow`` jobs ``file`` is the lfn of the workflow or DAG file and
    ``name`` repeats it (as Pegasus does).
    """

    id: str
    name: str
    namespace: str | None = None
    version: str | None = None
    type: JobType = "job"
    arguments: tuple[Argument, ...] = ()
    uses: tuple[Use, ...] = ()
    profiles: Mapping[str, Mapping[str, str]] = EMPTY
    node_label: str | None = None
    file: str | None = None
    stdin: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    hooks: Mapping[str, Any] = EMPTY
    metadata: Mapping[str, str] = EMPTY

    @property
    def is_subworkflow(self) -> bool:
        return self.type != "job"

    @property
    def transformation(self) -> str:
        """``namespace::name:version`` with absent parts omitted."""
        return transformation_fqn(self.namespace, self.name, self.version)


def all_uses(job: Job) -> tuple[Use, ...]:
    """The job's ``uses`` and those its redirected streams imply (``stream_uses``); readers keep the
    file as written, the graph and staging read this."""
    if job.stdin is None and job.stdout is None and job.stderr is None:
        return job.uses
    return stream_uses(job.uses, job.stdin, job.stdout, job.stderr)


def stream_uses(uses: tuple[Use, ...], stdin: str | None, stdout: str | None,
                stderr: str | None) -> tuple[Use, ...]:
    """``uses`` plus what the job's redirected streams imply, as in Pegasus (whose API adds them):
    ``stdin`` is an input, ``stdout``/``stderr`` outputs staged out and registered; a file ``uses``
    already names keeps its entry."""
    named = {use.lfn for use in uses}
    streams: tuple[tuple[str | None, UseType], ...] = (
        (stdin, "input"), (stdout, "output"), (stderr, "output"))
    extra = [Use(lfn, kind, stage_out=kind == "output", register_replica=kind == "output")
             for lfn, kind in streams if lfn and lfn not in named]
    return (*uses, *extra) if extra else uses


def transformation_fqn(namespace: str | None, name: str, version: str | None) -> str:
    text = f"{namespace}::{name}" if namespace else name
    return f"{text}:{version}" if version else text


def split_fqn(text: str) -> tuple[str | None, str, str | None]:
    """``ns::name:version`` -> (ns, name, version); absent parts are None."""
    namespace: str | None = None
    rest = text
    if "::" in rest:
        namespace, rest = rest.split("::", 1)
    version: str | None = None
    if ":" in rest:
        rest, version = rest.rsplit(":", 1)
    return namespace or None, rest, version or None


@dataclass(slots=True, eq=True)
class Workflow:
    """An abstract workflow (Pegasus 5.0 YAML, DAX 3 or WfCommons, all read into this)."""

    name: str
    jobs: dict[str, Job] = field(default_factory=dict)
    dependencies: dict[str, list[str]] = field(default_factory=dict)
    transformation_catalog: TransformationCatalog | None = None
    site_catalog: SiteCatalog | None = None
    replica_catalog: ReplicaCatalog | None = None
    hooks: Mapping[str, Any] = EMPTY
    metadata: Mapping[str, str] = EMPTY
    #: workflow-level profiles (Pegasus 5 ``profiles:`` at the top level, the Python API's
    #: ``Workflow.add_profiles``): the layer just above properties in ``effective_profiles``.
    profiles: Mapping[str, Mapping[str, str]] = EMPTY
    #: ``pegasus:`` format version of the file read (``"5.0"``); informative only.
    format_version: str = "5.0"
    #: the ``x-pegasus`` header (apiLang, createdBy, createdOn), kept through a round trip.
    header: Mapping[str, Any] = EMPTY
    #: read from a WfCommons trace: the record of a past run, whose input files need not exist here,
    #: so an input without a replica is warned about where a Pegasus workflow's fails planning
    trace: bool = field(default=False, compare=False)

    def add_dependency(self, parent: str, *children: str) -> None:
        self.dependencies.setdefault(parent, []).extend(children)

    def __len__(self) -> int:
        return len(self.jobs)
