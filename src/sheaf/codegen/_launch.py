"""Tasks that run under ``sheaf.jobtools.launch``: what pegasus-kickstart does for Pegasus's jobs.

Pegasus starts every job (and every task of a cluster) through kickstart; sheaf starts a task
directly unless it needs one of two things kickstart would give it, and then its command becomes
``PYTHON -m sheaf.jobtools.launch [-i IN] [-o OUT] [-e ERR] [-k T [-K K]] -- EXECUTABLE ARGS...``:

- **its own stream files inside a cluster**: an unclustered job's stdin/stdout/stderr files are its
  submit description's ``input``/``output``/``error`` (``_submit``), but a cluster has one description
  for many tasks, so a clustered task whose job names files gets ``-i``/``-o``/``-e`` with the files'
  names, relative to the directory the cluster runs its tasks in: the site's working directory under
  ``sharedfs``, the job's own sandbox under ``condorio`` and ``nonsharedfs``, where the job's output
  transfer looks for them -- in the seqexec ``.in`` file and the PMC DAG alike;
- **checkpoint timeouts**: the pegasus ``checkpoint.time`` profile (minutes) gives ``-k`` in seconds,
  and with ``maxwalltime`` (minutes) ``-K`` is half of what is left after it, as Pegasus's Kickstart
  gridstart computes them (less than 10 s left is a ``PlanningError``, as there).  ``checkpoint.time``
  may be fractional here; Pegasus takes whole minutes.

The pass runs after containers are wrapped, so the launcher runs on the host around the container's
runtime, as kickstart runs outside the container in Pegasus.  A launched job's arguments are an argv
list even under ``pegasus.arguments.unquoted`` (the launcher's own argv comes first).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from sheaf.errors import PlanningError
from sheaf.planner import ExecJob, ExecutableWorkflow, Task

LAUNCH = "sheaf.jobtools.launch"
MIN_KILL_WINDOW_S = 10  # Kickstart gridstart's minimum maxwalltime - checkpoint time
_STREAMS = (("stdin", "-i"), ("stdout", "-o"), ("stderr", "-e"))


def wrap_launched_tasks(exec_wf: ExecutableWorkflow) -> None:
    """Wrap the tasks that need the launcher (in place; module docstring)."""
    jobs = exec_wf.workflow.jobs
    for job in exec_wf.jobs:
        if job.type not in ("compute", "cluster") or job.site is None or not job.tasks:
            continue
        clustered = job.type == "cluster"
        if not clustered and not any(_checkpointed(task) for task in job.tasks):  # nothing to wrap
            continue
        job.tasks = tuple(_wrapped(job, task, jobs.get(task.id) if clustered else None) for task in job.tasks)
        if not clustered and len(job.tasks) == 1:
            job.executable, job.arguments = job.tasks[0].executable, job.tasks[0].argv


def _checkpointed(task: Task) -> bool:
    """The task's profiles set ``checkpoint.time`` (which ``timeouts`` then reads)."""
    pegasus = task.profiles.get("pegasus")
    return pegasus is not None and "checkpoint.time" in pegasus


def launched(task: Task) -> bool:
    """The task runs under the launcher (its argument string is the launcher's, not the job's)."""
    return task.argv[:2] == ("-m", LAUNCH)


def _wrapped(job: ExecJob, task: Task, source: object) -> Task:
    options = [part for name, flag in _STREAMS if (lfn := getattr(source, name, None))
               for part in (flag, lfn)]
    options += timeouts(job, task)
    if not options:
        return task
    return replace(task, executable=sys.executable,
                   argv=("-m", LAUNCH, *options, "--", task.executable, *task.argv))


def timeouts(job: ExecJob, task: Task) -> list[str]:
    """``-k T [-K K]`` from the task's ``checkpoint.time`` and ``maxwalltime`` (module docstring)."""
    pegasus = task.profiles.get("pegasus") or {}
    checkpoint = _minutes(pegasus.get("checkpoint.time"), "checkpoint.time", task)
    if checkpoint is None:
        return []
    term = checkpoint * 60
    out = ["-k", f"{term:g}"]
    wall = _minutes(pegasus.get("maxwalltime"), "maxwalltime", task)
    if wall is not None:
        left = wall * 60 - term
        if left < MIN_KILL_WINDOW_S:
            raise PlanningError(
                f"job '{task.id}' (in '{job.id}'): maxwalltime {wall:g} min leaves {left:g} s after its "
                f"checkpoint time {checkpoint:g} min; at least {MIN_KILL_WINDOW_S} s are needed to write "
                "the checkpoint", rule="maxwalltime - checkpoint.time >= 10 s (as Pegasus's Kickstart)",
                value=pegasus.get("maxwalltime"))
        out += ["-K", f"{left / 2:g}"]
    return out


def _minutes(raw: str | None, key: str, task: Task) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise PlanningError(f"job '{task.id}': pegasus profile {key} = {raw!r} is not a positive number of "
                            "minutes", rule=f"{key} is a positive number of minutes", value=raw)
    return value
