"""The events database: one SQLite file (WAL) per submit directory, modelled on Pegasus's stampede schema.

Tables (stampede's names and meanings, trimmed to what sheaf records)::

    workflow       one row: the run's identity (``wf_uuid``: its plan's, from braindump.yml, else the first
                   run's journal id), its DAG, its plan (label, planner arguments), and the parent
                   workflow for a sub-workflow
    workflowstate  WORKFLOW_STARTED / WORKFLOW_TERMINATED per engine run (restart_count = epoch - 1)
    job            one row per DAG node: its type, transformation, site, tasks; ``state`` is the
                   engine's node state after the last loaded change (``waiting`` when never mentioned),
                   ``attempt`` the engine's attempt number (DAGMan's ``$(RETRY)``) in the latest engine
                   run, ``earlier_attempts`` the node's attempts in the runs before the latest fresh
                   or rescue run (which numbers attempts from 0 again; a recovery continues them)
    job_edge       the DAG's edges (parent, child)
    job_instance   one row per attempt of a node in every engine run: scheduler id, host, start/end,
                   exit code, signal, hold reason, stdout/stderr files; for a failed attempt also the
                   tails of its stdout/stderr, its submit file and the command that reruns it
                   (pegasus-analyzer's).  ``job_submit_seq`` numbers a node's attempts 1, 2, ...
                   across the engine runs (stampede's, across a workflow's restarts): an attempt's is
                   ``earlier_attempts + attempt + 1``
    jobstate       the attempt's events in jobstate.log's vocabulary (SUBMIT, EXECUTE, JOB_TERMINATED, ...)
    task           the abstract workflow's tasks, each with the job that runs it
    invocation     one row per task run: start, duration, exit code, host (a cluster's tasks from the
                   seqexec/PMC records, an unclustered job's task from the job itself)
    host           where attempts and invocations ran
    damage         journal lines the loader could not use
    progress       key/value: how far the journal has been loaded (byte offset), the run id loaded

Durability policy: the database is a *derived* record.  The journal is the truth; the loader stores
the journal offset it has loaded in the same transaction as the rows it derived, so after a kill -9
the database is exactly "the journal up to offset X" and catching up continues from there.  Hence
``synchronous=OFF``: the loader never fsyncs.  The engine's throughput is bounded by its own journal
fsyncs, and on a shared filesystem every other fsync queues beside them (ext4 commits one journal
at a time) -- measured with ``engine_throughput.py --events``.  A kill -9 of the loader loses nothing
(SQLite's WAL survives a process crash); an operating-system crash may leave a database SQLite
refuses, which the next view deletes and rebuilds from the journal.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "connect", "events_db_path", "remove"]

import contextlib
import os
import sqlite3

SCHEMA_VERSION = 2  # PRAGMA user_version; a database of another version is rebuilt (it is derived)

_DDL = """
CREATE TABLE IF NOT EXISTS workflow (
    wf_id INTEGER PRIMARY KEY, wf_uuid TEXT NOT NULL, dag_file_name TEXT NOT NULL, submit_dir TEXT NOT NULL,
    dax_label TEXT, dax_file TEXT, user TEXT, submit_hostname TEXT, planner_arguments TEXT,
    parent_submit_dir TEXT, timestamp REAL, total INTEGER NOT NULL DEFAULT 0, source TEXT,
    started REAL, run_started REAL, last_time REAL, epochs INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    ended REAL, succeeded INTEGER, exit_code INTEGER, rescue TEXT
);
CREATE TABLE IF NOT EXISTS workflowstate (
    state TEXT NOT NULL, timestamp REAL NOT NULL, restart_count INTEGER NOT NULL, status INTEGER, reason TEXT
);
CREATE TABLE IF NOT EXISTS job (
    job_id INTEGER PRIMARY KEY, exec_job_id TEXT NOT NULL UNIQUE, type_desc TEXT NOT NULL,
    transformation TEXT, site TEXT, clustered INTEGER NOT NULL DEFAULT 0, aggregator TEXT,
    task_count INTEGER NOT NULL DEFAULT 0, max_retries INTEGER NOT NULL DEFAULT 0, subwf_dir TEXT,
    state TEXT NOT NULL DEFAULT 'waiting', attempt INTEGER NOT NULL DEFAULT 0, reason TEXT,
    earlier_attempts INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS job_edge (parent TEXT NOT NULL, child TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS job_instance (
    job_instance_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, job_submit_seq INTEGER NOT NULL,
    sched_id TEXT, host_id INTEGER, slot TEXT, submitted REAL, start REAL, end REAL,
    local_duration REAL, exitcode INTEGER, signal INTEGER, held_reason TEXT, reason TEXT,
    stdout_file TEXT, stderr_file TEXT, stdout_text TEXT, stderr_text TEXT, submit_file TEXT,
    submit_text TEXT, command TEXT,
    UNIQUE (job_id, job_submit_seq)
);
CREATE TABLE IF NOT EXISTS jobstate (
    job_instance_id INTEGER NOT NULL, state TEXT NOT NULL, timestamp REAL NOT NULL, value INTEGER
);
CREATE TABLE IF NOT EXISTS task (
    task_id INTEGER PRIMARY KEY, abs_task_id TEXT NOT NULL UNIQUE, job_id INTEGER NOT NULL,
    transformation TEXT
);
CREATE TABLE IF NOT EXISTS invocation (
    invocation_id INTEGER PRIMARY KEY, job_instance_id INTEGER NOT NULL, task_submit_seq INTEGER NOT NULL,
    abs_task_id TEXT, transformation TEXT, executable TEXT, start_time REAL NOT NULL,
    remote_duration REAL NOT NULL, exitcode INTEGER NOT NULL, host_id INTEGER
);
CREATE TABLE IF NOT EXISTS host (
    host_id INTEGER PRIMARY KEY, site TEXT, hostname TEXT NOT NULL, UNIQUE (site, hostname)
);
CREATE TABLE IF NOT EXISTS damage (offset INTEGER NOT NULL, line INTEGER NOT NULL, why TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS progress (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS job_instance_job ON job_instance (job_id);
CREATE INDEX IF NOT EXISTS jobstate_instance ON jobstate (job_instance_id);
CREATE INDEX IF NOT EXISTS invocation_instance ON invocation (job_instance_id);
"""


def events_db_path(dag_path: str) -> str:
    """``<dag>.events.db`` beside the DAG file (as Pegasus keeps ``<label>-0.stampede.db`` in the
    submit directory)."""
    return dag_path + ".events.db"


def connect(path: str, *, create: bool = True) -> sqlite3.Connection:
    """Open (and, with ``create``, initialise) an events database in WAL mode."""
    if not create and not os.path.exists(path):
        raise FileNotFoundError(path)
    conn = _open(path)
    if create and conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            conn.close()
            remove(path)
            conn = _open(path)
        conn.executescript(_DDL)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return conn


def _open(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    return conn


def remove(path: str) -> None:
    """Delete a database with its WAL files."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
