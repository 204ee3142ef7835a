"""sheaf.monitor: what a workflow is doing, read from the engine's journal (safe while it runs)."""

from __future__ import annotations

from sheaf.monitor._status import WorkflowStatus, workflow_status

__all__: list[str] = ["WorkflowStatus", "workflow_status"]
