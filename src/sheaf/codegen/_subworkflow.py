"""Sub-workflow jobs (``pegasusWorkflow``, ``condorWorkflow``): how the parent DAG runs them.

- ``condorWorkflow`` (the file is a DAG): the node is ``SUBDAG EXTERNAL <id> <dag file>``; DAGMan
  (or sheaf's engine) runs that DAG as one node.  No submit description is written for it.
- ``pegasusWorkflow`` (the file is an abstract workflow): a local-universe job runs
  ``sheaf plan <file> -d <DIR>/jobs/NNN/<id>.plan --force --submit -c <id>.properties <job's
  arguments>`` in the workflow file's directory, so the sub-workflow is planned when its parents are
  done (its inputs exist by then) and run to completion by a nested engine; the job's exit code is
  the sub-workflow's (0 ok, 1 failed, 2 bad input).  The parent's properties are passed down in
  ``<id>.properties`` (Pegasus passes them too); the job's own arguments (``--sites``, ``-D``...)
  come last and win.  A retry plans and runs the sub-workflow again from the start.

The file (the job's ``file`` lfn) is found as an input is: an absolute path, ``--input-dir``, a
``file://`` replica (site ``local`` first), else a path relative to the directory ``sheaf plan``
ran in.  A file found nowhere is a ``PlanningError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sheaf.errors import PlanningError
from sheaf.formats import format_properties
from sheaf.planner import ExecJob, ExecutableWorkflow
from sheaf.planner._replicas import find_local


def subworkflow_file(job: ExecJob, exec_wf: ExecutableWorkflow) -> tuple[str, str]:
    """``(abstract job type, absolute path of its workflow/DAG file)``."""
    task = job.tasks[0]
    abstract = exec_wf.workflow.jobs.get(task.id)
    kind = abstract.type if abstract is not None else "pegasusWorkflow"
    lfn = (abstract.file if abstract is not None else None) or task.executable
    if os.path.isabs(lfn) and os.path.isfile(lfn):
        return kind, lfn
    found = find_local(lfn, "local", exec_wf.input_dir, exec_wf.replica_catalog)
    if found is None and os.path.isfile(lfn):
        found = os.path.abspath(lfn)
    if found is None:
        raise PlanningError(f"the file of sub-workflow job '{task.id}' is found nowhere",
                            rule="a sub-workflow's file is a local path, in --input-dir or a file:// replica",
                            value=lfn)
    return kind, found


def properties_text(properties: Mapping[str, str]) -> str:
    """The parent's properties in Java properties syntax, as the properties reader reads them back."""
    return "# the parent workflow's properties, passed to its sub-workflow by sheaf plan\n" + \
        format_properties(properties)
