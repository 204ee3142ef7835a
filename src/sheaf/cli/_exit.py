"""The one table that maps outcomes to exit codes (docs/command-line.md).

==========================================  =====================================================
outcome                                     exit status
==========================================  =====================================================
success                                     0 (``OK``)
the workflow ran and failed                 1 (``WORKFLOW_FAILED``; a rescue DAG is kept)
``ABORT-DAG-ON node v RETURN r`` fired      r, 0..255 - even 0, 1 or 2 - as DAGMan exits with r
... without ``RETURN``                      the node's value v, modulo 256 as a process exit is
bad input or usage                          2 (``BAD_INPUT``: one message, file, line and rule)
==========================================  =====================================================

An ``ABORT-DAG-ON ... RETURN 2`` therefore exits 2 like bad input does: DAGMan's rule, which scripts
written for DAGMan rely on; the run's summary (and ``sheaf status``) tells the two apart.
"""

from __future__ import annotations

OK = 0
WORKFLOW_FAILED = 1
STORAGE_FAILED = 1  # a file could not be written (disk full, I/O error): nothing half-written, rerun resumes
BAD_INPUT = 2


def of_run(succeeded: bool, dag_exit: int, removed: bool = False) -> int:
    """The exit status of ``sheaf run``: ``dag_exit`` is the DAG's own (``RunResult.exit_code``); a
    removed run (DAGMan's 2, which its records keep) ran and failed here, as 2 is bad input's."""
    if succeeded and dag_exit == 0:
        return OK
    if removed:
        return WORKFLOW_FAILED
    return dag_exit & 0xFF if dag_exit else WORKFLOW_FAILED
