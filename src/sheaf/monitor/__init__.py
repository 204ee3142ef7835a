"""sheaf.monitor: watch, explain and measure runs, from one events database per run.

A loader (``_loader``) reads the engine's journal incrementally into ``<dag>.events.db`` (SQLite,
WAL; the stampede schema's tables, ``_schema``) while ``sheaf run`` goes, and catches up on demand
afterwards; every view reads that database and nothing else (``_status``, ``_statistics``,
``_analyze``).  Every run is registered in the per-user master database (``_master``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.monitor._analyze import Analysis, FailedJob, FailedTask, analyze
    from sheaf.monitor._dashboard import make_server
    from sheaf.monitor._durations import format_seconds
    from sheaf.monitor._events import EventsLoader, RunView, events_enabled, open_events
    from sheaf.monitor._history import JobTiming, RunTimings, run_timings, task_history
    from sheaf.monitor._master import RunEntry, list_runs, master_db_path
    from sheaf.monitor._meta import PlanJob, PlanProfiles, braindump, plan_json
    from sheaf.monitor._plots import PlotData, plot_data, write_plots
    from sheaf.monitor._statistics import Statistics, workflow_statistics
    from sheaf.monitor._status import SubStatus, WorkflowStatus, age, sub_workflows, workflow_status

__all__: list[str] = [
    "Analysis", "EventsLoader", "FailedJob", "FailedTask", "JobTiming", "PlanJob", "PlanProfiles", "PlotData",
    "RunEntry", "RunTimings", "RunView", "Statistics", "SubStatus", "WorkflowStatus", "age", "analyze",
    "braindump", "events_enabled", "format_seconds", "list_runs", "make_server", "master_db_path",
    "open_events", "plan_json", "plot_data", "run_timings", "sub_workflows", "task_history",
    "workflow_statistics", "workflow_status", "write_plots",
]

# where each name lives: imported on first use (sheaf._lazy), so that ``sheaf run``, which needs the
# loader only, does not load the dashboard's HTTP server, the analyzer and the plots
_WHERE = {
    "Analysis": "_analyze", "FailedJob": "_analyze", "FailedTask": "_analyze", "analyze": "_analyze",
    "JobTiming": "_history", "RunTimings": "_history", "run_timings": "_history", "task_history": "_history",
    "make_server": "_dashboard", "EventsLoader": "_events", "RunView": "_events", "events_enabled": "_events",
    "open_events": "_events", "PlanJob": "_meta", "PlanProfiles": "_meta", "braindump": "_meta",
    "plan_json": "_meta",
    "RunEntry": "_master", "list_runs": "_master", "master_db_path": "_master",
    "PlotData": "_plots", "plot_data": "_plots", "write_plots": "_plots", "Statistics": "_statistics",
    "format_seconds": "_durations", "workflow_statistics": "_statistics", "SubStatus": "_status",
    "WorkflowStatus": "_status", "age": "_status", "sub_workflows": "_status", "workflow_status": "_status",
}
__getattr__ = lazy_exports(__name__, _WHERE)
