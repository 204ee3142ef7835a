"""The input files of clustered jobs: seqexec ``.in``, PMC DAG, Decaf JSON graph and run script.

- **seqexec** (pegasus-cluster's format, ``sheaf.formats._seqexec_in``): per task a ``#@ n
  transformation job-id`` record, then its command line quoted with POSIX shell rules (never run
  through a shell).  The tasks run in the cluster's order, which is topological.
- **PMC** (``sheaf.formats._pmcdag``): per task ``TASK id [-m MB] [-c CPUS] [-p PRIO] command args``
  from the pegasus profiles ``pmc_request_memory`` (MB, rounded up), ``pmc_request_cpus``,
  ``pmc_priority`` (negative allowed), then ``pmc_task_arguments`` -- more task options (``-t 3``,
  ``-f VAR=FILE``), among the others before the command, as Pegasus's PMC generator writes them; then
  ``EDGE parent child`` for every abstract dependency inside the cluster.
- **Decaf**: the JSON graph Decaf reads (``{"workflow": {"filter_level", "nodes", "edges"}}``) and a run
  script shaped as the one in Pegasus's optimization chapter, following the chapter's five rules: (1) roots
  have no inports and leaves no outports; (2) a node's ``func`` is its task's transformation name; (3) an
  edge's ``name`` joins the ``func`` of its two nodes; (4) ``source``/``target`` are the nodes' integer ids;
  (5) nodes keep the cluster's (input workflow) order.  Node ``i`` is MPI rank ``i`` (one rank per task),
  which is also line ``i`` of the ``srun --multi-prog`` configuration (``sheaf.formats._multiprog``).

Workflow data is only ever *data* in these files.  The Decaf run script is bash, so it holds no job
argument at all: the multi-prog configuration is its own file, written at plan time beside the JSON
graph, and the script only copies it (``cp -- <id>.conf``) and hands it to ``srun``, which reads it
with its own quoting.  (An earlier script built it with a here-document, which an argument holding a
newline and ``EOF`` could end, running the next line in bash.)  The only names the script holds are
the JSON file's (quoted with ``shlex.quote``) and the job id (a DAGMan node name).

A value a format cannot carry -- a newline or NUL in an argument (a carriage return, too, in
the seqexec and PMC files), a task name with white space, a
PMC executable starting with ``-``, more words than ``srun --multi-prog`` keeps -- is a
``PlanningError`` naming the job and the value, raised while the plan is written (so nothing of the
plan is left behind).

Dependencies inside a cluster come from the abstract workflow's graph (built once, only when a PMC
or Decaf cluster needs it).
"""

from __future__ import annotations

import functools
import math
import os
import shlex
from collections.abc import Mapping, Sequence

import msgspec

from sheaf.codegen._layout import tool_path
from sheaf.errors import InputError, PlanningError
from sheaf.formats import (
    PmcTask,
    SeqexecTask,
    parse_pmc_dag,
    write_multiprog,
    write_pmc_dag,
    write_seqexec_input,
)
from sheaf.model import Graph, profile_float, profile_int
from sheaf.planner import ExecJob, Task


def local_executable(path: str) -> str:
    """A task's or a job's executable as the plan writes it: absolute.

    Pegasus wants absolute pfns; sheaf also accepts relative ones (the bundled example's catalog
    uses one) and writes them absolute, because jobs run elsewhere (their working directory).  A bare
    name (a transformation without a catalog, a WfCommons trace's program) is looked up as a command
    where ``sheaf plan`` runs (:func:`tool_path`), for a task inside a cluster as for a job of its
    own: a job's environment is its submit description's, not the planner's ``PATH``.  Decaf
    programs are the exception: the chapter's run script starts them relative to the scratch directory
    (``./individuals``).
    """
    if path.startswith("/"):  # the common case, without a call (10^6 tasks)
        return path
    if "/" not in path:
        return _command_path(path)
    return os.path.abspath(path)


@functools.lru_cache(maxsize=1024)  # clusters repeat a few names: one PATH search a name, not a task
def _command_path(name: str) -> str:
    return tool_path(name)


def _unwritable(job: ExecJob, what: str, exc: ValueError) -> PlanningError:
    return PlanningError(f"cluster '{job.id}': a task cannot be written to its {what}: {exc}",
                         rule=f"the {what} carries every argument as data, one line per task: no "
                         "line break or NUL", value=job.id)


def seqexec_input(job: ExecJob) -> str:
    tasks = [SeqexecTask((local_executable(task.executable), *task.argv), n, task.transformation, task.id)
             for n, task in enumerate(job.tasks, start=1)]
    try:
        return write_seqexec_input(tasks)
    except ValueError as exc:
        raise _unwritable(job, "seqexec input file", exc) from None


def inner_edges(job: ExecJob, graph: Graph) -> list[tuple[str, str]]:
    """Abstract dependencies between tasks of ``job``, in task order (parent, then child)."""
    members = {task.id for task in job.tasks}
    edges: list[tuple[str, str]] = []
    for task in job.tasks:
        node = graph.index.get(task.id)
        if node is None:
            continue
        for child in graph.children(node):
            name = graph.ids[child]
            if name in members:
                edges.append((task.id, name))
    return edges


def _pegasus(task: Task, key: str) -> str | None:
    value = (task.profiles.get("pegasus") or {}).get(key)
    return value or None


def _pmc_task(task: Task) -> PmcTask:
    memory = profile_float(task.profiles, "pegasus", "pmc_request_memory", 0.0, subject=task.id) or 0.0
    cpus = profile_float(task.profiles, "pegasus", "pmc_request_cpus", 1.0, subject=task.id)
    priority = profile_int(task.profiles, "pegasus", "pmc_priority", 0, subject=task.id) or 0
    extra_text = _pegasus(task, "pmc_task_arguments") or ""
    try:
        extra = shlex.split(extra_text)
    except ValueError as exc:
        raise PlanningError(f"task '{task.id}': pmc_task_arguments do not parse ({exc})",
                            rule="pmc_task_arguments is a shell-quoted argument list",
                            value=extra_text) from None
    return PmcTask(task.id, (local_executable(task.executable), *task.argv), memory=math.ceil(memory),
                   cpus=math.ceil(cpus if cpus is not None else 1.0), priority=priority,
                   pegasus_id=task.id, transformation=task.transformation, dax_id=task.id,
                   options=tuple(extra))


def _check_options(job: ExecJob, tasks: Sequence[PmcTask], text: str) -> None:
    """The task options written are ones PMC reads (``pmc_task_arguments`` holds options, not arguments)."""
    try:
        parse_pmc_dag(text)
    except InputError as exc:
        given = next(" ".join(task.options) for task in tasks if task.options)
        raise PlanningError(f"job '{job.id}': pmc_task_arguments are not PMC task options ({exc.message})",
                            rule="pmc_task_arguments are TASK options: -m -c -t -p -f -F",
                            value=given) from None


def pmc_dag(job: ExecJob, graph: Graph) -> str:
    tasks = [_pmc_task(task) for task in job.tasks]
    try:
        text = write_pmc_dag(tasks, inner_edges(job, graph))
    except ValueError as exc:
        raise _unwritable(job, "PMC DAG file", exc) from None
    if any(task.options for task in tasks):
        _check_options(job, tasks, text)
    return text


def _func(task: Task) -> str:
    """Rule 2: the transformation's name (``ns::name:version`` -> ``name``)."""
    name = task.transformation.rpartition("::")[2]
    return name.partition(":")[0] or task.id


def _command(task: Task) -> str:
    return shlex.join((task.executable, *task.argv))


def decaf_graph(job: ExecJob, graph: Graph) -> bytes:
    """The Decaf JSON graph of a cluster (rules in the module docstring)."""
    index = {task.id: i for i, task in enumerate(job.tasks)}
    edges = inner_edges(job, graph)
    has_in = {child for _, child in edges}
    has_out = {parent for parent, _ in edges}
    nodes = [{"start_proc": i, "nprocs": 1, "func": _func(task), "cmdline": _command(task),
              "inports": ["in"] if task.id in has_in else [],
              "outports": ["out"] if task.id in has_out else []}
             for i, task in enumerate(job.tasks)]
    funcs = [node["func"] for node in nodes]
    links = [{"start_proc": 0, "nprocs": 0, "source": index[p], "target": index[c],
              "name": f"{funcs[index[p]]}_{funcs[index[c]]}", "sourcePort": "out", "targetPort": "in",
              "prod_dflow_redist": "count", "tokens": 0, "transport": "mpi"}
             for p, c in edges]
    document = {"workflow": {"filter_level": "NONE", "nodes": nodes, "edges": links}}
    return msgspec.json.format(msgspec.json.encode(document), indent=4) + b"\n"


def decaf_conf(job: ExecJob) -> str:
    """The ``srun --multi-prog`` configuration: line ``i`` runs task ``i`` as MPI rank ``i``."""
    try:
        return write_multiprog((task.executable, *task.argv) for task in job.tasks)
    except ValueError as exc:
        raise _unwritable(job, "srun --multi-prog configuration", exc) from None


def decaf_conf_name(job: ExecJob) -> str:
    return f"{job.id}.conf"


def decaf_script(job: ExecJob, json_name: str) -> str:
    """The run script (the chapter's shape): environment, the JSON graph and the multi-prog configuration
    (both written at plan time) into the scratch dir, ``srun --multi-prog``.  No job argument in it."""
    conf = decaf_conf_name(job)
    return "\n".join([
        "#!/bin/bash",
        "set -e",
        "",
        "LAUNCH_DIR=`pwd`",
        'echo "Job Launched in directory $LAUNCH_DIR"',
        'source "$DECAF_ENV_SOURCE"',
        "",
        "# copy the json file and the multi-prog configuration for the job into",
        "# the directory where we are going to launch decaf",
        f'cp -- {shlex.quote(json_name)} {conf} "$PEGASUS_SCRATCH_DIR/"',
        "",
        'cd "$PEGASUS_SCRATCH_DIR"',
        'echo "Invoking decaf executable from directory `pwd`"',
        f"srun --multi-prog ./{conf}",
        "",
    ])


def decaf_json_name(job: ExecJob) -> str:
    """The JSON file's name: the basename of the ``dataflow::decaf`` pfn the planner passes as the
    cluster's executable, else ``<id>.json``."""
    if job.executable:
        base = job.executable.rstrip("/").rpartition("/")[2]
        if base and base not in (".", "..", decaf_conf_name(job), f"{job.id}.sh"):
            if not base.isprintable():
                raise PlanningError(f"cluster '{job.id}': the Decaf JSON file's name holds a control "
                                    "character", rule="file names sheaf writes are printable",
                                    value=base)
            return base
    return f"{job.id}.json"


def max_wall_time(profiles: Mapping[str, Mapping[str, str]], subject: str | None = None) -> str | None:
    """PMC's ``--max-wall-time`` (minutes): globus ``maxwalltime``, else pegasus ``maxwalltime``.

    Checked here, where it becomes an argument: an aggregator's catalog entry may set it, and a
    value that is not a finite, non-negative number is refused at plan time, not by PMC at run time.
    """
    for namespace in ("globus", "pegasus"):
        value = (profiles.get(namespace) or {}).get("maxwalltime")
        if value:
            profile_float(profiles, namespace, "maxwalltime", subject=subject)
            return value.strip()
    return None


def has_option(argv: Sequence[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in argv)
