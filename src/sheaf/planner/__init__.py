"""sheaf.planner: pure passes from the abstract workflow to the executable workflow.

``plan()`` is the entry point (``_planner``); ``ExecutableWorkflow``/``ExecJob``/``Task`` are what it
returns (``_plan``).  Site selectors are pluggable (``SiteSelector``, ``register_selector``).
"""

from __future__ import annotations

from sheaf.planner._data import plan_data
from sheaf.planner._plan import (
    DATA_KINDS,
    JOB_KINDS,
    Aggregator,
    DataOptions,
    ExecJob,
    ExecutableWorkflow,
    JobKind,
    Task,
)
from sheaf.planner._planner import plan
from sheaf.planner._replicas import find_local
from sheaf.planner._sites import SiteSelector, register_selector
from sheaf.planner._stageout import output_targets

__all__ = [
    "DATA_KINDS", "JOB_KINDS", "Aggregator", "DataOptions", "ExecJob", "ExecutableWorkflow", "JobKind",
    "SiteSelector", "Task", "find_local", "output_targets", "plan", "plan_data", "register_selector",
]
