"""sheaf.codegen: the executable workflow written out as files HTCondor DAGMan (and sheaf run) runs.

``write_plan(exec_wf, DIR) -> PlanFiles`` writes, atomically, ``<name>.dag`` and its
CONFIG file, one submit description per job, the input files of clustered jobs (seqexec ``.in``,
PMC DAG, Decaf JSON and run script) and ``plan.json``.  Design and layout: ``_write.py``,
``_layout.py``; one module per file kind (``_dag``, ``_submit``, ``_clusters``, ``_planjson``); the
first data-staging slice in ``_staging``; HTCondor quoting in ``sheaf.formats._submit_lang``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports
from sheaf.formats._submit_lang import quote_arguments, quote_environment

if TYPE_CHECKING:
    from sheaf.codegen._siblings import remove_stale_siblings
    from sheaf.codegen._subworkflow import PlanContext
    from sheaf.codegen._write import PlanFiles, check_target, write_plan

__all__ = ["PlanContext", "PlanFiles", "check_target", "quote_arguments", "quote_environment",
           "remove_stale_siblings", "write_plan"]

# where each name lives: imported on first use (sheaf._lazy), so that ``sheaf run`` removing a
# stale sibling does not import the planner
_WHERE = {"PlanContext": "_subworkflow", "PlanFiles": "_write", "check_target": "_write",
          "remove_stale_siblings": "_siblings", "write_plan": "_write"}
__getattr__ = lazy_exports(__name__, _WHERE)
