"""Opening a run's events database, caught up with its journal; and the loader thread of ``sheaf run``.

Every view (status, statistics, analyze, plots, dashboard) calls :func:`open_events`: it finds the
DAG of the directory, loads whatever the journal gained since the database was last written (after
a kill -9 of the run, or a run with loading turned off, that is a rebuild) and returns a read-only
view.  Nothing else reads the journal or the logs.

:class:`EventsLoader` runs beside the engine during ``sheaf run``: a process (``_follow``, which
says why not a thread) that catches up every ``interval`` seconds and once more when stopped, so
the database is complete when the run returns (but for a stopped run, which exits without that last
catch-up: the next view makes it).  The engine does not know about it (it only reads
the journal the engine fsyncs), and a loader failure is reported as a warning, never a failed run.
``SHEAF_EVENTS=0`` turns it off
(``benchmarks/engine_throughput.py --events`` measures the difference).
"""

from __future__ import annotations

__all__ = ["EventsLoader", "RunView", "events_enabled", "open_events", "register"]

import fcntl
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sheaf.engine import find_dag, state_paths
from sheaf.errors import UsageError
from sheaf.monitor._master import RunEntry, register_run
from sheaf.monitor._schema import connect, events_db_path, remove

if TYPE_CHECKING:
    from sheaf.monitor._loader import Loader


def events_enabled() -> bool:
    return os.environ.get("SHEAF_EVENTS", "1").strip().lower() not in ("0", "off", "no", "false")


@dataclass(frozen=True, slots=True)
class RunView:
    """A caught-up events database, opened for reading."""

    dag: str
    directory: str
    db_path: str
    journal: str
    lock: str
    conn: sqlite3.Connection

    def one(self, sql: str, args: tuple[object, ...] = ()) -> tuple[Any, ...]:
        """The first row of a query (SQLite's values: int, float, str, None), () when none."""
        row = self.conn.execute(sql, args).fetchone()
        return tuple(row) if row is not None else ()

    def engine_alive(self) -> bool:
        try:
            fd = os.open(self.lock, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False


def register(loader: Loader) -> bool:
    """Write the run's row of the master database; False when the run has not begun yet."""
    conn = loader.conn
    row = conn.execute("SELECT wf_uuid, dax_label, submit_dir, dag_file_name, parent_submit_dir, ended, "
                       "succeeded, total, started, epochs FROM workflow WHERE wf_id = 1").fetchone()
    if row is None or not row[9]:
        return False
    counts = dict(conn.execute("SELECT state, count(*) FROM job GROUP BY state").fetchall())
    if row[5] is not None:
        state = "succeeded" if row[6] else "failed"
    else:
        state = "running" if row[9] else "not started"
    running = sum(v for k, v in counts.items() if k in ("submitted", "pre", "post"))
    register_run(RunEntry(loader.db_path, row[0] or None, row[1], row[2], row[3], row[4], state,
                          counts.get("done", 0), counts.get("failed", 0), running, row[7] or 0, row[8],
                          time.time()))
    return True


def catch_up(dag_path: str) -> str:
    """Bring ``dag_path``'s events database up to date with its journal; returns its path.  A
    database SQLite cannot read (damaged, not a database) is derived data: it is rebuilt."""
    try:
        return _catch_up(dag_path)
    except sqlite3.DatabaseError:
        remove(events_db_path(dag_path))
        return _catch_up(dag_path)


def _catch_up(dag_path: str) -> str:
    from sheaf.monitor._loader import Loader  # here: ``sheaf run`` (EventsLoader) needs none of it

    loader = Loader(dag_path)
    try:
        loader.catch_up()
        register(loader)
    finally:
        loader.close()
    return loader.db_path


def open_events(directory: str, dag_file: str | None = None) -> RunView:
    """The caught-up events database of the run in ``directory`` (``UsageError`` when there is no
    run there: no such directory, no DAG, or no journal yet)."""
    if not os.path.exists(directory):
        raise UsageError(f"{directory}: no such run directory")
    dag = find_dag(directory, dag_file)
    paths = state_paths(dag)
    if not os.path.exists(paths["journal"]):
        raise UsageError(f"{directory}: no engine journal yet ({paths['journal']}); run `sheaf run` first")
    if not os.path.isfile(paths["journal"]):
        raise UsageError(f"{directory}: the engine journal {paths['journal']} is not a file")
    try:
        db_path = catch_up(dag)
    except OSError as exc:  # the events database's path taken by a directory, an unreadable file
        raise UsageError(f"{directory}: the run's records cannot be read: {exc.filename}: "
                         f"{exc.strerror or exc}") from None
    return RunView(dag, os.path.dirname(dag), db_path, paths["journal"], paths["lock"], connect(db_path))


def journal_size(path: str) -> int:
    """The size of the engine's journal, -1 when there is none yet."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return -1


class EventsLoader:
    """Keeps a DAG's events database caught up while a run goes: a loader process (``_follow``)
    beside the engine, every ``interval`` seconds and once more when :meth:`stop` is called.

    The last catch-up is wall time of the run (``sheaf run`` waits for it): it loads what the run
    recorded since the one before, up to ``interval`` seconds of it, so a short interval keeps it
    short, and a catch-up with nothing new costs next to nothing."""

    def __init__(self, dag_path: str, interval: float = 0.1,
                 on_warning: Callable[[str], None] | None = None) -> None:
        self.dag_path = dag_path
        self.interval = interval
        self.on_warning = on_warning
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> EventsLoader:
        before = journal_size(state_paths(self.dag_path)["journal"])  # before the engine writes to it
        argv = [sys.executable, "-m", "sheaf.monitor._follow", self.dag_path, str(self.interval), str(before)]
        try:  # its own session: a Ctrl-C meant for the engine must not cut the last catch-up short
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._warn(str(exc))
        return self

    def stop(self, catch_up: bool = True) -> None:
        """Let the loader catch up once more and wait for it; without ``catch_up`` (a stopped run,
        which should exit promptly) it is ended at once: its last catch-up, or its start on a large
        DAG, took seconds at 10^5 nodes, and the next view catches up as it opens anyway."""
        if self._proc is None:
            return
        assert self._proc.stdin is not None
        if not catch_up:
            self._proc.terminate()  # SQLite's own journal keeps the database consistent
            self._proc.stdin.close()
            self._proc.wait()
            return
        self._proc.stdin.close()  # end of file: the loader catches up once more and exits
        if self._proc.wait() != 0:
            self._warn(f"the loader exited with status {self._proc.returncode}")

    def _warn(self, why: str) -> None:
        if self.on_warning is not None:
            self.on_warning(f"the events database was not kept up to date ({why}); "
                            "`sheaf status` rebuilds it from the journal")
