"""One HTCondor submit description per job.

What a description holds, in this order (``Command`` says what runs, the job's profiles the rest):

- ``universe`` (``vanilla``; ``local`` for auxiliary jobs; a condor ``universe`` profile wins),
  ``executable``, ``arguments`` in the new quoted syntax (under the pegasus profile
  ``condor.arguments.quote = false``, a compute job's argument string as Pegasus joins it, written
  as it is, as Pegasus does), ``initialdir``;
- ``environment`` (new syntax) from the env profiles, plus what the command needs (Decaf's
  ``PEGASUS_SCRATCH_DIR``);
- ``output``/``error`` beside the submit file and the workflow's shared ``log``, all absolute; a job
  whose stdin/stdout/stderr Pegasus redirects to files (API ``set_stdin``/``set_stdout``/
  ``set_stderr``, YAML ``stdin``/``stdout``/``stderr``) has ``input``/``output``/``error`` naming
  those files in its working directory instead (``with_streams``), where stage-in puts the input and
  from where outputs are taken (such a job keeps a description of its own);
- ``request_cpus``/``request_memory``/``request_disk``/``request_gpus`` from the pegasus ``cores``/
  ``memory``/``diskspace`` (MB, written in KiB)/``gpus`` profiles -- only where the condor profile of
  the same name is absent; a PMC cluster asks for ``xcount`` or ``nodes * ppn`` CPUs;
- ``batch_extra_submit_args`` from the pegasus ``glite.arguments`` profile;
- the batch system directives of HTCondor's BLAHP (what a grid job to ``batch slurm`` carries, and
  what sheaf's Slurm backend turns into ``sbatch`` options): ``batch_queue`` and ``batch_project``
  from the pegasus (else globus) ``queue``/``project``, ``+HostNumber`` (nodes) from pegasus ``nodes``
  or globus ``hostcount``/``host_xcount``, ``+SMPGranularity`` (tasks per node) from pegasus ``ppn``,
  and ``+NodeNumber`` (tasks) from globus ``xcount``, else ``nodes * ppn``; a PMC cluster also says
  ``+sheaf_launcher = "mpiexec"``: started by ``mpiexec`` across the tasks of its allocation where a
  batch system gives it several (on the local pool it runs its local workers);
- every condor profile verbatim (``requirements``, ``request_memory`` as an expression, ``+Attr``),
  except ``executable``/``arguments``/``queue``, which sheaf owns (skipped with a warning), and the
  file-transfer commands of a compute job that works in its site's shared scratch (``_in_place``);
- the ``+pegasus_*`` attributes Pegasus's tools read (site, workflow name, job class, ids);
- ``notification = NEVER`` and ``queue``.

Values cannot hold line breaks (a description is line based) nor end in a backslash (which continues
a line): such a value is a ``PlanningError`` naming the job and the key.

Shared descriptions (:func:`render_shared_submit`): jobs that differ only in their arguments, ids
and output files (unclustered compute jobs, auxiliary jobs, clusters) share one description, which
names those through macros the DAG's ``VARS`` give each node (:func:`shared_vars`): ``$(JOB)``
(DAGMan's own: the node name, which is the job id), ``$(sheaf_dir)`` (the job's ``jobs/NNN``
directory), ``$(sheaf_args)`` (its whole ``arguments`` value) and ``$(sheaf_task)`` (its abstract job
id, ClassAd-escaped; a cluster's or an auxiliary job's description has none).  Expanded with a node's
VARS, a shared description gives what the job's own description would
(``tests/codegen/test_shared_submit.py`` checks this with the official bindings).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sheaf.condor import Unwritable, check_line, classad_string, quote_arguments, quote_environment
from sheaf.errors import PlanningError
from sheaf.model import Job, join_arguments
from sheaf.planner import ExecJob

#: Pegasus's job classes (``+pegasus_job_class``), read by pegasus-monitord and friends.
JOB_CLASS = {"compute": 1, "cluster": 1, "stage_in": 2, "stage_out": 3, "register": 4,
             "inter_site": 5, "create_dir": 6, "cleanup": 8, "subworkflow": 10}
_OWNED = frozenset({"executable", "arguments", "args", "queue"})
_KEY = re.compile(r"^(?:[+]|[Mm][Yy]\.)?[A-Za-z_][\w.\-]*$")
_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)?\s*$")


@dataclass(slots=True)
class Command:
    """What a job's submit description runs, and where.

    Read-only by convention (changed with ``dataclasses.replace``), not ``frozen``: a frozen dataclass
    costs several times as much to build, and the writer builds one per job."""

    executable: str
    argv: tuple[str, ...]
    initialdir: str
    universe: str = "vanilla"
    environment: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None      # absolute paths of redirected streams (``with_streams``)
    stdout: str | None = None
    stderr: str | None = None
    #: Pegasus's argument string, written as it is under ``condor.arguments.quote = false``
    raw_arguments: str | None = None
    #: HTCondor file transfer (``condorio``): ``should_transfer_files`` and the file lists
    transfer: tuple[tuple[str, str], ...] = ()
    #: ``nonsharedfs``: the command runs under ``sheaf-lite`` with a manifest of its own
    lite: bool = False

    @property
    def shareable(self) -> bool:
        """Whether a shared description can run it (no per-job streams, argument string or files)."""
        return (self.stdin is None and self.stdout is None and self.stderr is None
                and self.raw_arguments is None and not self.transfer and not self.lite)


def with_streams(command: Command, job: Job | None, *, raw: bool = False) -> Command:
    """``command`` with what the abstract job adds: its redirected streams, as files of its working
    directory, and with ``raw`` (``arguments_unquoted`` and the job runs its own program, not a
    container) its argument string."""
    if job is None:
        return command
    text = join_arguments(job.arguments) if raw and job.arguments else None
    if not (job.stdin or job.stdout or job.stderr):
        return replace(command, raw_arguments=text) if text is not None else command
    stdin, stdout, stderr = (os.path.join(command.initialdir, lfn) if lfn else None
                             for lfn in (job.stdin, job.stdout, job.stderr))
    return replace(command, stdin=stdin, stdout=stdout, stderr=stderr, raw_arguments=text)


@dataclass(slots=True)
class SubmitContext:
    """Per-plan constants, and caches of the ``+pegasus_*`` lines many jobs share."""

    workflow: str
    log: str
    warnings: list[str] = field(default_factory=list)
    said: set[str] = field(default_factory=set)  # warnings given once per plan
    head: str = ""
    _lines: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.head = (f"+pegasus_generator = \"sheaf\"\n"
                      f"+pegasus_wf_name = {classad_string(self.workflow)}")

    def attr(self, name: str, text: str) -> str:
        """``+name = "text"``, cached (sites and transformations repeat across jobs)."""
        key = (name, text)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = f"+{name} = {classad_string(text)}"
        return line


def render_submit(job: ExecJob, profiles: Mapping[str, Mapping[str, str]], command: Command,
                  out_base: str, ctx: SubmitContext) -> str:
    """The submit description of ``job`` (``out_base`` + ``.out``/``.err`` are its stdout/stderr)."""
    try:
        return _render(job, profiles, command, out_base, ctx)
    except Unwritable as exc:
        raise _unwritable(job, exc) from None


#: the macros a shared description reads from each node's VARS (module docstring)
SHARED_DIR, SHARED_ARGS, SHARED_TASK = "sheaf_dir", "sheaf_args", "sheaf_task"


def render_shared_submit(job: ExecJob, profiles: Mapping[str, Mapping[str, str]], command: Command,
                         final_dir: str, ctx: SubmitContext) -> str:
    """The description ``job`` shares with the jobs of the same type, transformation, site, profiles
    and command (its ``argv`` aside); see the module docstring."""
    shared = Command(command.executable, (f"$({SHARED_ARGS})",), command.initialdir, command.universe,
                     command.environment)
    try:
        check_line(final_dir, "a path")
        return _render(job, profiles, shared, f"{final_dir}/$({SHARED_DIR})/$(JOB)", ctx, shared=True)
    except Unwritable as exc:
        raise _unwritable(job, exc) from None


def shared_vars(job: ExecJob, command: Command, rel_dir: str) -> str:
    """The ``key="value"`` VARS entries that fill in ``job``'s shared description (``rel_dir`` is its
    ``jobs/NNN``).  Each value lands inside a quoted value of the description, never at a line's end."""
    try:
        args = quote_arguments(command.argv) if command.argv else ""
        task = _dax_job_id(job)
        task = None if task is None else classad_string(task)[1:-1]
    except Unwritable as exc:
        raise _unwritable(job, exc) from None
    own = f'{SHARED_DIR}="{rel_dir}" {SHARED_ARGS}="{dag_vars_value(args)}"'
    return own if task is None else f'{own} {SHARED_TASK}="{dag_vars_value(task)}"'


def _dax_job_id(job: ExecJob) -> str | None:
    """The abstract job a job runs alone (``+pegasus_wf_dax_job_id``); None for a cluster or an
    auxiliary job."""
    return job.tasks[0].id if job.type in ("compute", "subworkflow") and len(job.tasks) == 1 else None


def dag_vars_value(text: str) -> str:
    """A VARS value between its double quotes: DAGMan reads ``\\"`` as ``"`` and ``\\\\`` as ``\\``."""
    if "\\" not in text and '"' not in text:
        return text
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _unwritable(job: ExecJob, exc: Unwritable) -> PlanningError:
    return PlanningError(f"job '{job.id}' cannot be written as a submit description: {exc}",
                         rule="submit description values fit on one line", value=job.id)


_NO_PROFILES: Mapping[str, str] = {}


def _render(job: ExecJob, profiles: Mapping[str, Mapping[str, str]], command: Command,
            out_base: str, ctx: SubmitContext, *, shared: bool = False) -> str:
    condor = _in_place(job, profiles.get("condor") or _NO_PROFILES, command, ctx)
    check_line(command.executable + command.initialdir + out_base, "a path")
    of = f" of {job.transformation}" if job.transformation else ""
    lines = [f"# sheaf: {job.type} jobs{of} at {job.site}; each node's own values in its DAG VARS"
             if shared else f"# sheaf: {job.type} job {job.id}"]
    if "universe" not in condor:
        lines.append(f"universe = {command.universe}")
    lines.append(f"executable = {command.executable}")
    if shared:
        lines.append(f"arguments = {command.argv[0]}")
    elif command.raw_arguments is not None:
        lines.append(f"arguments = {check_line(command.raw_arguments, 'arguments')}")
    elif command.argv:
        lines.append(f"arguments = {quote_arguments(command.argv)}")
    defaults = [("initialdir", command.initialdir)]
    env = profiles.get("env")
    if env or command.environment:
        defaults.append(("environment", quote_environment([*command.environment, *(env or {}).items()])))
    if command.stdin:
        defaults.append(("input", command.stdin))
    defaults += [("output", command.stdout or out_base + ".out"),
                 ("error", command.stderr or out_base + ".err"), ("log", ctx.log)]
    defaults += [(key, check_line(value, key)) for key, value in command.transfer]
    if profiles.get("pegasus") or job.aggregator == "mpiexec":
        defaults += [(key, check_line(value, key)) for key, value in _requests(job, profiles)]
    if profiles.get("pegasus") or profiles.get("globus") or job.aggregator == "mpiexec":
        defaults += [(key, check_line(value, key)) for key, value in _batch_directives(job, profiles)]
    lines += [f"{key} = {value}" for key, value in defaults if key not in condor]
    if condor:
        lines += _condor_profiles(job, condor, ctx)
    lines.append(ctx.head)
    lines += _pegasus_attributes(job, ctx, shared)
    if "notification" not in condor:
        lines.append("notification = NEVER")
    for line in lines:
        if line.endswith("\\"):  # it would continue on the next line sheaf writes
            raise Unwritable(f"a value ends in a backslash: {line!r}")
    lines.append("queue\n")
    return "\n".join(lines)


def arguments_unquoted(profiles: Mapping[str, Mapping[str, str]]) -> bool:
    """Pegasus's ``condor.arguments.quote = false``: the argument string goes to HTCondor as written
    (HTCondor then reads it in its old or new syntax), not quoted by sheaf."""
    value = (profiles.get("pegasus") or _NO_PROFILES).get("condor.arguments.quote")
    return value is not None and value.strip().lower() == "false"


def _requests(job: ExecJob, profiles: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    pegasus = profiles.get("pegasus") or {}
    found: list[tuple[str, str]] = []
    cpus = pegasus.get("cores") or (_pmc_cpus(profiles) if job.aggregator == "mpiexec" else None)
    if cpus:
        found.append(("request_cpus", cpus))
    if pegasus.get("memory"):
        found.append(("request_memory", pegasus["memory"]))
    disk = pegasus.get("diskspace")
    if disk:  # Pegasus gives MB, a bare request_disk is KiB
        found.append(("request_disk", str(math.ceil(float(disk) * 1024)) if _NUMBER.match(disk) else disk))
    if pegasus.get("gpus"):
        found.append(("request_gpus", pegasus["gpus"]))
    if pegasus.get("glite.arguments"):
        found.append(("batch_extra_submit_args", pegasus["glite.arguments"]))  # a plain string command
    return found


def _pmc_cpus(profiles: Mapping[str, Mapping[str, str]]) -> str | None:
    """A PMC cluster's CPUs: globus ``xcount``, else pegasus ``nodes * ppn`` (from pegasus::mpiexec)."""
    return _tasks(profiles) or (profiles.get("pegasus") or {}).get("ppn") or None


def _tasks(profiles: Mapping[str, Mapping[str, str]]) -> str | None:
    """The job's task count: globus ``xcount``, else pegasus ``nodes * ppn`` when both are numbers."""
    xcount = (profiles.get("globus") or {}).get("xcount")
    if xcount:
        return xcount
    pegasus = profiles.get("pegasus") or {}
    nodes, ppn = pegasus.get("nodes"), pegasus.get("ppn")
    if nodes and ppn and nodes.strip().isdigit() and ppn.strip().isdigit():
        return str(int(nodes) * int(ppn))
    return None


def _batch_directives(job: ExecJob, profiles: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """BLAHP's batch directives from the job's profiles (module docstring); a count that is not a
    whole number is left out (it would not be a ClassAd integer)."""
    pegasus, globus = profiles.get("pegasus") or {}, profiles.get("globus") or {}
    found: list[tuple[str, str]] = []
    for key, value in (("batch_queue", pegasus.get("queue") or globus.get("queue")),
                       ("batch_project", pegasus.get("project") or globus.get("project"))):
        if value and value.strip():
            found.append((key, value.strip()))
    counts = (("+HostNumber", pegasus.get("nodes") or globus.get("hostcount") or globus.get("host_xcount")),
              ("+SMPGranularity", pegasus.get("ppn")), ("+NodeNumber", _tasks(profiles)))
    found += [(key, value.strip()) for key, value in counts if value and value.strip().isdigit()]
    if job.aggregator == "mpiexec":
        found.append(("+sheaf_launcher", '"mpiexec"'))
    return found


#: HTCondor's file-transfer commands, which would run a job in a sandbox of its own
_TRANSFER_KEYS = frozenset({"should_transfer_files", "when_to_transfer_output", "transfer_input_files",
                            "transfer_output_files"})


def _in_place(job: ExecJob, condor: Mapping[str, str], command: Command,
              ctx: SubmitContext) -> Mapping[str, str]:
    """The condor profiles of a job, without file transfer when the job works in its site's shared
    working directory (sharedfs): there Pegasus's kickstart changes into that directory (``-w``)
    whatever HTCondor transfers, and sheaf, which runs jobs without kickstart, keeps them there by
    not sandboxing them -- said once per site."""
    if (job.type not in ("compute", "cluster") or command.transfer or command.lite
            or condor.get("should_transfer_files", "").strip().upper() not in ("YES", "TRUE")):
        return condor
    note = (f"site '{job.site}': condor profile should_transfer_files = {condor['should_transfer_files']} "
            "dropped for its jobs, which work in the site's shared scratch (sharedfs; Pegasus's "
            "kickstart changes into it)")
    if note not in ctx.said:
        ctx.said.add(note)
        ctx.warnings.append(note)
    return {key: value for key, value in condor.items() if key.lower() not in _TRANSFER_KEYS}


def _condor_profiles(job: ExecJob, condor: Mapping[str, str], ctx: SubmitContext) -> list[str]:
    lines = []
    for key, value in condor.items():
        if key.lower() in _OWNED:
            ctx.warnings.append(f"job '{job.id}': condor profile '{key}' ignored (sheaf writes it)")
            continue
        if not _KEY.match(key):
            raise Unwritable(f"condor profile key {key!r} is not a submit command name")
        lines.append(f"{key} = {check_line(value, key)}")
    return lines


def _pegasus_attributes(job: ExecJob, ctx: SubmitContext, shared: bool = False) -> list[str]:
    # job ids are DAGMan node names (checked by the writer): no quoting needed
    node = "$(JOB)" if shared else job.id
    attrs = [f'+pegasus_wf_dag_job_id = "{node}"', f"+pegasus_job_class = {JOB_CLASS.get(job.type, 1)}"]
    if job.site is not None:
        attrs.append(ctx.attr("pegasus_site", job.site))
    if job.transformation:
        attrs.append(ctx.attr("pegasus_wf_xformation", job.transformation))
    task = _dax_job_id(job)
    if task is not None:
        attrs.append(f'+pegasus_wf_dax_job_id = "$({SHARED_TASK})"' if shared
                     else f"+pegasus_wf_dax_job_id = {classad_string(task)}")
    if job.type == "cluster":
        attrs.append(f"+pegasus_cluster_size = {len(job.tasks)}")
    return attrs
