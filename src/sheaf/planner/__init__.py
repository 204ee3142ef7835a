"""sheaf.planner: pure passes from the abstract workflow to the executable workflow."""

from __future__ import annotations

from sheaf.planner._plan import JOB_KINDS, Aggregator, ExecJob, ExecutableWorkflow, JobKind, Task

__all__ = ["JOB_KINDS", "Aggregator", "ExecJob", "ExecutableWorkflow", "JobKind", "Task"]
