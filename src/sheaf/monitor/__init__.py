"""sheaf.monitor: watch, explain and measure runs, from one events database per run.

A loader (``_loader``) reads the engine's journal incrementally into ``<dag>.events.db`` (SQLite,
WAL; the stampede schema's tables, ``_schema``) while ``sheaf run`` goes, and catches up on demand
afterwards; every view reads that database and nothing else (``_status``, ``_statistics``,
``_analyze``).  Every run is registered in the per-user master database (``_master``).
"""

from __future__ import annotations

from sheaf.monitor._analyze import Analysis, FailedJob, FailedTask, analyze
from sheaf.monitor._dashboard import make_server
from sheaf.monitor._events import EventsLoader, RunView, events_enabled, open_events
from sheaf.monitor._master import RunEntry, list_runs, master_db_path
from sheaf.monitor._plots import PlotData, plot_data, write_plots
from sheaf.monitor._statistics import Statistics, format_seconds, workflow_statistics
from sheaf.monitor._status import SubStatus, WorkflowStatus, age, sub_workflows, workflow_status

__all__: list[str] = [
    "Analysis",
    "EventsLoader",
    "FailedJob",
    "FailedTask",
    "PlotData",
    "RunEntry",
    "RunView",
    "Statistics",
    "SubStatus",
    "WorkflowStatus",
    "age",
    "analyze",
    "events_enabled",
    "format_seconds",
    "list_runs",
    "make_server",
    "master_db_path",
    "open_events",
    "plot_data",
    "sub_workflows",
    "workflow_statistics",
    "workflow_status",
    "write_plots",
]
