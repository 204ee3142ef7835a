"""The stdin/stdout/stderr files of clustered tasks.

An unclustered job's files are its submit description's ``input``/``output``/``error`` (``_submit``).
A cluster has one description for many tasks, so each task whose job names stream files runs under
``PYTHON -m sheaf.aggregators.redirect -i IN -o OUT -e ERR -- EXECUTABLE ARGS...`` -- what Pegasus's
kickstart ``-i``/``-o``/``-e`` do for the tasks of its clusters -- in both the seqexec ``.in`` file and
the PMC DAG.  The files are the job's, in its site's working directory (relative names there, as for
unclustered jobs).  This pass runs after containers are wrapped, so the redirection is done on the
host around the container's runtime, as kickstart runs outside the container in Pegasus.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace

from sheaf.codegen._layout import Layout
from sheaf.planner import ExecutableWorkflow, Task

REDIRECT = "sheaf.aggregators.redirect"
_OPTIONS = (("stdin", "-i"), ("stdout", "-o"), ("stderr", "-e"))


def redirect_clustered_streams(exec_wf: ExecutableWorkflow, workdirs: Mapping[str, str],
                               layout: Layout) -> None:
    """Wrap each clustered task whose abstract job names stream files (in place, module docstring)."""
    jobs = exec_wf.workflow.jobs
    for job in exec_wf.jobs:
        if job.type != "cluster" or job.site is None:
            continue
        workdir = workdirs.get(job.site) or layout.scratch(job.site)
        job.tasks = tuple(_wrapped(task, jobs.get(task.id), workdir) for task in job.tasks)


def _wrapped(task: Task, source: object, workdir: str) -> Task:
    options = [part for name, flag in _OPTIONS if (lfn := getattr(source, name, None))
               for part in (flag, os.path.join(workdir, lfn))]
    if not options:
        return task
    return replace(task, executable=sys.executable,
                   argv=("-m", REDIRECT, *options, "--", task.executable, *task.argv))
