"""sheaf.codegen: the executable workflow written out as files HTCondor DAGMan (and sheaf run) runs.

``write_plan(exec_wf, DIR) -> PlanFiles`` writes, atomically, ``<name>.dag`` and its
CONFIG file, one submit description per job, the input files of clustered jobs (seqexec ``.in``,
PMC DAG, Decaf JSON and run script), the data jobs' lists and ``plan.json``.  It only writes: DIR is
the submit directory the planner's data pass planned for (``sheaf.planner.plan`` given
``DataOptions(submit_dir=DIR)``, or ``sheaf.planner.plan_data``), and a plan without its data jobs is
refused.  A numbered ``runNNNN`` is reserved before planning::

    with reserved_run_dir(runs_parent(base, workflow.name)) as directory:
        exec_wf = plan(workflow, ..., data=DataOptions(submit_dir=directory))
        write_plan(exec_wf, directory)

Design and layout: ``_write.py``, ``_layout.py``; one module per file kind (``_dag``, ``_submit``,
``_clusters``, ``_planjson``); a ``condorio`` job's transfer lines in ``_staging``; HTCondor quoting in
``sheaf.condor._submit_lang``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports
from sheaf.condor import quote_arguments, quote_environment

if TYPE_CHECKING:
    from sheaf.codegen._container_state import CONF_DIR, RUN_ROOT_LOCK, podman_env, run_root
    from sheaf.codegen._group_record import group_dag, group_of, read_groups
    from sheaf.codegen._groups import GROUP_PROPERTY, write_groups
    from sheaf.codegen._layout import (
        named_submit_dir,
        next_run_number,
        runs_parent,
        timestamp_name,
        tool_path,
        user_name,
    )
    from sheaf.codegen._siblings import remove_stale_siblings
    from sheaf.codegen._subworkflow import PlanContext
    from sheaf.codegen._write import PlanFiles, check_target, reserved_run_dir, write_plan

__all__ = [
    "CONF_DIR",
    "GROUP_PROPERTY",
    "RUN_ROOT_LOCK",
    "PlanContext",
    "PlanFiles",
    "check_target",
    "group_dag",
    "group_of",
    "named_submit_dir",
    "next_run_number",
    "podman_env",
    "quote_arguments",
    "quote_environment",
    "read_groups",
    "remove_stale_siblings",
    "reserved_run_dir",
    "run_root",
    "runs_parent",
    "timestamp_name",
    "tool_path",
    "user_name",
    "write_groups",
    "write_plan",
]

# where each name lives: imported on first use (sheaf._lazy), so that ``sheaf run`` removing a
# stale sibling does not import the planner
_WHERE = {
    "tool_path": "_layout", "CONF_DIR": "_container_state", "GROUP_PROPERTY": "_groups",
    "RUN_ROOT_LOCK": "_container_state", "group_dag": "_group_record", "group_of": "_group_record",
    "named_submit_dir": "_layout", "next_run_number": "_layout", "podman_env": "_container_state",
    "read_groups": "_group_record", "run_root": "_container_state", "runs_parent": "_layout",
    "timestamp_name": "_layout", "user_name": "_layout", "write_groups": "_groups",
    "PlanContext": "_subworkflow", "PlanFiles": "_write", "check_target": "_write",
    "remove_stale_siblings": "_siblings", "write_plan": "_write", "reserved_run_dir": "_write",
}
__getattr__ = lazy_exports(__name__, _WHERE)
