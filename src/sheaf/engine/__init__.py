"""sheaf.engine: run a DAGMan DAG (as pegasus-plan or sheaf plan writes it) with DAGMan semantics.

Layers, inside out: ``_state`` is the pure state machine (events in, journal changes and
instructions out); ``sheaf.formats._dagman`` and ``_submit`` read the DAG and HTCondor submit descriptions;
``_journal`` makes every change durable before the loop (``_loop``) acts on it; a
:class:`Backend` (``_backend``, implemented by ``sheaf.backends``) runs the node jobs.

Public entry point::

    result = run_workflow("DIR", backend=LocalBackend)   # -> RunResult; resumes after a crash
"""

from __future__ import annotations

from sheaf.engine._backend import Backend, Event, Exited, Held, Launch, Started
from sheaf.engine._events import Change
from sheaf.engine._journal import Replay
from sheaf.engine._journal import replay as read_journal
from sheaf.engine._loop import Progress, RunResult, find_dag, run_workflow, state_paths
from sheaf.engine._records import BeginRecord, ChangeRecord, Damage, EndRecord, ProcessRecord
from sheaf.engine._records import scan as scan_journal
from sheaf.engine._runevents import EventTranslator, NodeEvent
from sheaf.engine._state import STATES, DagState, Limits, NodeState
from sheaf.engine._submit import node_description, parse_submit, split_arguments, split_environment
from sheaf.formats._dagman import Dag, parse_dag

__all__: list[str] = [
    "STATES",
    "Backend",
    "BeginRecord",
    "Change",
    "ChangeRecord",
    "Dag",
    "DagState",
    "Damage",
    "EndRecord",
    "Event",
    "EventTranslator",
    "Exited",
    "Held",
    "Launch",
    "Limits",
    "NodeEvent",
    "NodeState",
    "ProcessRecord",
    "Progress",
    "Replay",
    "RunResult",
    "Started",
    "find_dag",
    "node_description",
    "parse_dag",
    "parse_submit",
    "read_journal",
    "run_workflow",
    "scan_journal",
    "split_arguments",
    "split_environment",
    "state_paths",
]
