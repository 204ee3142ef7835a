"""sheaf.engine: run a DAGMan DAG (as pegasus-plan or sheaf plan writes it) with DAGMan semantics.

Layers, inside out: ``_state`` is the pure state machine (events in, journal changes and
instructions out); ``sheaf.condor._dagman`` and ``_submit`` read the DAG and HTCondor submit descriptions;
``_journal`` makes every change durable before the loop (``_loop``) acts on it; a
:class:`Backend` (``_backend``, implemented by ``sheaf.backends``) runs the node jobs.  Beside the
core, ``reports`` writes what a run tells people and tools (jobstate.log, the node job event log,
the node status file, DOT, metrics, rescue DAGs); the loop alone uses it, through its face.

Public entry point::

    result = run_workflow("DIR", backend=LocalBackend)   # -> RunResult; resumes after a crash
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports
from sheaf.condor import Dag, parse_dag

if TYPE_CHECKING:
    from sheaf.engine._backend import (
        Adopts,
        Backend,
        Event,
        Exited,
        FileTransfer,
        Held,
        Launch,
        Pollable,
        Released,
        Removed,
        ReportsStarts,
        Requeued,
        SelfRefilling,
        Started,
        Suspended,
    )
    from sheaf.engine._dagid import dagman_id
    from sheaf.engine._dollar import expand_launch, needs_expansion
    from sheaf.engine._events import Change
    from sheaf.engine._journal import Replay, read_records
    from sheaf.engine._journal import replay as read_journal
    from sheaf.engine._loop import Progress, RunResult, run_workflow
    from sheaf.engine._orphans import ATTEMPT_VARIABLE
    from sheaf.engine._paths import find_dag, rescue_dag_number, state_paths
    from sheaf.engine._records import BeginRecord, ChangeRecord, Damage, EndRecord, ProcessRecord
    from sheaf.engine._records import scan as scan_journal
    from sheaf.engine._resume import lock_holder
    from sheaf.engine._runconfig import DagmanOptions
    from sheaf.engine._state import STATES, DagState, Limits, NodeState
    from sheaf.engine._stop import stop_in_process
    from sheaf.engine._submit import node_description, parse_submit, split_arguments, split_environment
    from sheaf.engine.reports import EventTranslator, NodeEvent

__all__: list[str] = [
    "ATTEMPT_VARIABLE",
    "STATES",
    "Adopts",
    "Backend",
    "BeginRecord",
    "Change",
    "ChangeRecord",
    "Dag",
    "DagState",
    "DagmanOptions",
    "Damage",
    "EndRecord",
    "Event",
    "EventTranslator",
    "Exited",
    "FileTransfer",
    "Held",
    "Launch",
    "Limits",
    "NodeEvent",
    "NodeState",
    "Pollable",
    "ProcessRecord",
    "Progress",
    "Released",
    "Removed",
    "Replay",
    "ReportsStarts",
    "Requeued",
    "RunResult",
    "SelfRefilling",
    "Started",
    "Suspended",
    "dagman_id",
    "expand_launch",
    "find_dag",
    "lock_holder",
    "needs_expansion",
    "node_description",
    "parse_dag",
    "parse_submit",
    "read_journal",
    "read_records",
    "rescue_dag_number",
    "run_workflow",
    "scan_journal",
    "split_arguments",
    "split_environment",
    "state_paths",
    "stop_in_process",
]

# where each name lives: imported on first use (sheaf._lazy), so that a reader of the run records
# (the events loader, a process of its own beside each run) does not load the backend interface,
# the ClassAd library and the loop
_WHERE = {
    "ATTEMPT_VARIABLE": "_orphans", "FileTransfer": "_backend", "Released": "_backend", "Removed": "_backend",
    "Requeued": "_backend",
    "Suspended": "_backend", "expand_launch": "_dollar", "needs_expansion": "_dollar",
    "read_records": "_journal", "Adopts": "_backend", "Pollable": "_backend", "ReportsStarts": "_backend",
    "SelfRefilling": "_backend", "Backend": "_backend", "BeginRecord": "_records", "Change": "_events",
    "ChangeRecord": "_records", "DagState": "_state", "DagmanOptions": "_runconfig", "Damage": "_records",
    "EndRecord": "_records", "Event": "_backend", "EventTranslator": "reports", "Exited": "_backend",
    "dagman_id": "_dagid", "find_dag": "_paths", "rescue_dag_number": "_paths", "lock_holder": "_resume",
    "Held": "_backend",
    "Launch": "_backend",
    "Limits": "_state", "node_description": "_submit", "NodeEvent": "reports", "NodeState": "_state",
    "parse_submit": "_submit", "ProcessRecord": "_records", "Progress": "_loop",
    "read_journal": "_journal:replay", "Replay": "_journal", "run_workflow": "_loop", "RunResult": "_loop",
    "scan_journal": "_records:scan", "split_arguments": "_submit", "split_environment": "_submit",
    "Started": "_backend", "state_paths": "_paths", "STATES": "_state", "stop_in_process": "_stop",
}
__getattr__ = lazy_exports(__name__, _WHERE)
