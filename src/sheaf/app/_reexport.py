"""The names of the stages below that the application layer's callers use with it (``sheaf.app``)."""

from __future__ import annotations

from sheaf.engine import DagmanOptions, RunResult
from sheaf.monitor import Statistics, WorkflowStatus
from sheaf.monitor import workflow_statistics as statistics
from sheaf.monitor import workflow_status as status

__all__ = ["DagmanOptions", "RunResult", "Statistics", "WorkflowStatus", "statistics", "status"]
