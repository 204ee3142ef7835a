"""sheaf.codegen: the executable workflow written out as files HTCondor DAGMan (and sheaf run) runs.

``write_plan(exec_wf, DIR) -> PlanFiles`` writes, atomically, ``<name>.dag`` and its
CONFIG file, one submit description per job, the input files of clustered jobs (seqexec ``.in``,
PMC DAG, Decaf JSON and run script) and ``plan.json``.  Design and layout: ``_write.py``,
``_layout.py``; one module per file kind (``_dag``, ``_submit``, ``_clusters``, ``_planjson``); the
first data-staging slice in ``_staging``; HTCondor quoting in ``sheaf.formats._submit_lang``.
"""

from __future__ import annotations

from sheaf.codegen._subworkflow import PlanContext
from sheaf.codegen._write import PlanFiles, check_target, remove_stale_siblings, write_plan
from sheaf.formats._submit_lang import quote_arguments, quote_environment

__all__ = ["PlanContext", "PlanFiles", "check_target", "quote_arguments", "quote_environment",
           "remove_stale_siblings", "write_plan"]
