"""The DAGMan job id of a run, and how a SUBDAG's run learns its parent's.

The id (``$(DAGManJobId)`` in submit descriptions, ``$DAGID`` in script arguments, the metrics'
``dagman_id``, the ``DAGMAN_STARTED`` line of jobstate.log) is the engine's process id.  A SUBDAG's
run is started by its parent engine with the parent's id in :data:`PARENT_ID_VARIABLE`: its metrics
name it, its jobs must not outlive it, and it stops when that engine dies.
"""

from __future__ import annotations

__all__ = ["PARENT_ID_VARIABLE", "PARENT_NODE_VARIABLE", "dagman_id"]

import os

PARENT_ID_VARIABLE = "SHEAF_DAGMAN_PARENT_ID"
#: a SUBDAG's run: its node's name in the parent DAG (DAGMan's ``@(NODE_NAME)``)
PARENT_NODE_VARIABLE = "SHEAF_DAGMAN_NODE_NAME"

_PID: list[int] = []  # the process id, asked once: getpid is a system call, and a node asks for it
os.register_at_fork(after_in_child=_PID.clear)  # a forked child is another process: it asks again


def dagman_id() -> int:
    """This run's DAGMan job id (see the module docstring)."""
    if not _PID:
        _PID.append(os.getpid())
    return _PID[0]
