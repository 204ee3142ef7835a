"""The per-user master database: every run on this machine, as Pegasus's ``~/.pegasus/workflow.db``.

Where: ``$SHEAF_HOME`` when set (tests), else ``$XDG_STATE_HOME/sheaf`` when that is set, else
``~/.sheaf``; the file is ``master.db`` there (SQLite, WAL).  One row per events database, keyed by
its path: the run's uuid, label, submit directory, parent, state and counts, refreshed each time a
loader catches up.  The dashboard lists this table; every detail it shows comes from the run's own
events database.  The master database is a convenience: failing to write it (a read-only home)
never stops a run or a view.
"""

from __future__ import annotations

__all__ = ["RunEntry", "list_runs", "master_db_path", "register_run"]

import os
import sqlite3
import time
from dataclasses import dataclass

_DDL = """
CREATE TABLE IF NOT EXISTS master_workflow (
    db_path TEXT PRIMARY KEY, wf_uuid TEXT, dax_label TEXT, submit_dir TEXT NOT NULL, dag_file TEXT NOT NULL,
    parent_submit_dir TEXT, state TEXT NOT NULL, done INTEGER, failed INTEGER, running INTEGER,
    total INTEGER, started REAL, updated REAL NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class RunEntry:
    db_path: str
    wf_uuid: str | None
    label: str | None
    submit_dir: str
    dag_file: str
    parent_submit_dir: str | None
    state: str
    done: int
    failed: int
    running: int
    total: int
    started: float | None
    updated: float


def master_db_path() -> str:
    home = os.environ.get("SHEAF_HOME")
    if not home:
        xdg = os.environ.get("XDG_STATE_HOME")
        home = os.path.join(xdg, "sheaf") if xdg else os.path.join(os.path.expanduser("~"), ".sheaf")
    return os.path.join(home, "master.db")


def _connect() -> sqlite3.Connection:
    path = master_db_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # no fsync per commit: a lost row is re-registered
    conn.execute(_DDL)
    return conn


def register_run(entry: RunEntry) -> None:
    """Insert or refresh one run's row; an unwritable master database is ignored (see above)."""
    try:
        conn = _connect()
        try:
            conn.execute("INSERT OR REPLACE INTO master_workflow VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?, ?, ?)",
                         (entry.db_path, entry.wf_uuid, entry.label, entry.submit_dir, entry.dag_file,
                          entry.parent_submit_dir, entry.state, entry.done, entry.failed, entry.running,
                          entry.total, entry.started, entry.updated or time.time()))
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        pass


def list_runs() -> list[RunEntry]:
    """Every registered run, the latest first."""
    if not os.path.exists(master_db_path()):
        return []
    conn = _connect()
    try:
        rows = conn.execute("SELECT * FROM master_workflow ORDER BY coalesce(started, updated) "
                            "DESC").fetchall()
    finally:
        conn.close()
    return [RunEntry(*row) for row in rows]
