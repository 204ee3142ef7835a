"""Concurrency limits that hold across every sheaf run on this machine at once.

HTCondor keeps concurrency limits in the negotiator, so they bind every workflow of the pool;
sheaf has no daemon, so the counts live in a machine-wide store that each run opens:

- **Store**: ``limits.sqlite`` in the state directory (env ``SHEAF_STATE_DIR``, else
  ``~/.local/state/sheaf/``), SQLite in WAL mode.  One table of *holdings*: (owner, key, name,
  weight), one row per limit name a running job holds.
- **Grant**: ``try_acquire(key, demand)`` runs in one ``BEGIN IMMEDIATE`` transaction (a write lock
  taken before reading, so two runs never both see the same free capacity): it sums the holdings of
  every name in the demand, and inserts the demand's rows only if, for every name,
  ``held + weight <= limit``.  All or nothing; never blocks beyond SQLite's short busy wait.
- **Owners** are identified by pid *and* process start time (``/proc/<pid>/stat`` field 22), so a
  recycled pid is not mistaken for the run that died.  Holdings of an owner that no longer exists
  (a run killed with ``kill -9``) are deleted when the store is opened and whenever a demand is
  refused (at most once a second), so a crash never leaks capacity for long.
- **Limits** (the maxima) come from this run's pool configuration: ``<NAME>_LIMIT``, then
  ``CONCURRENCY_LIMIT_DEFAULT_<PREFIX>`` for a dotted name, then ``CONCURRENCY_LIMIT_DEFAULT``, then
  HTCondor's built-in default (in effect unlimited) -- as HTCondor's negotiator looks them up.
- Names are case-insensitive (folded to lower case); weights come from ``"a, b:2"``, read as
  ``sheaf.classad.parse_limits`` reads them (HTCondor's rules: each token checked on its own).

Jobs of the local universe never come here (the backend skips them), as in HTCondor.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sheaf._proc import start_ticks
from sheaf.backends._slotconfig import PoolConfig
from sheaf.classad import Demand, limit_for, parse_limits
from sheaf.errors import FormatError

__all__ = ["Demand", "MachineLimits", "parse_limits", "state_dir"]

STATE_ENV = "SHEAF_STATE_DIR"
_RECLAIM_EVERY = 1.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS holdings (
    owner_pid   INTEGER NOT NULL,
    owner_start INTEGER NOT NULL,
    key         TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    weight      REAL    NOT NULL,
    PRIMARY KEY (owner_pid, owner_start, key, name)
);
CREATE INDEX IF NOT EXISTS holdings_by_name ON holdings (name);
"""


def state_dir() -> Path:
    """The machine-wide state directory (created on demand by the users of it)."""
    explicit = os.environ.get(STATE_ENV)
    return Path(explicit) if explicit else Path("~/.local/state/sheaf").expanduser()


def _open_store(path: Path, patience: float = 30.0, schema: str = _SCHEMA) -> sqlite3.Connection:
    """Open (creating if needed) the store in WAL mode.

    Switching a new database to WAL takes an exclusive lock, and SQLite answers ``database is locked``
    at once - without calling the busy handler - when another process is switching it at the same
    moment (two runs starting together on a fresh machine).  So the set-up is retried for a while.
    """
    db = sqlite3.connect(path, timeout=patience, isolation_level=None, check_same_thread=False)
    deadline = time.monotonic() + patience
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(schema)
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                db.close()
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


class MachineLimits:
    """Machine-wide counting semaphores for named limits (see the module docstring)."""

    def __init__(self, config: Mapping[str, object] | None = None, *,
                 path: str | os.PathLike[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._knobs = _limit_knobs(config)
        self._maxima: dict[str, float] = {}
        self.path = Path(path) if path is not None else state_dir() / "limits.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pid = os.getpid()
        start = start_ticks(self._pid)
        self._start = start if start is not None else 0
        self._clock = clock
        self._last_reclaim = float("-inf")
        self._db = _open_store(self.path)
        self._granted = 0
        self._refused = 0
        self.reclaim()

    def limit(self, name: str) -> float:
        """The maximum configured for ``name``."""
        key = name.lower()
        found = self._maxima.get(key)
        if found is None:
            found = self._maxima[key] = self._lookup(key.upper())
        return found

    def beyond(self, demand: Demand) -> str | None:
        """Why ``demand`` can never be granted, even with nothing held (a weight above its limit,
        ``a:1e999`` among them); None if it can."""
        for name, weight in demand:
            if weight > self.limit(name):
                return (f"concurrency limit {name} asks for {weight:.15g}, more than its limit "
                        f"{self.limit(name):.15g}: the job can never run")
        return None

    def _lookup(self, upper: str) -> float:
        return limit_for(upper, self._knobs)

    def try_acquire(self, key: str, demand: Demand | str) -> bool:
        """Grant every limit of ``demand`` to ``key`` or none of them; never blocks."""
        wanted = parse_limits(demand) if isinstance(demand, str) else demand
        if not wanted:
            return True
        if self._grant(key, wanted):
            self._granted += 1
            return True
        due = self._clock() - self._last_reclaim >= _RECLAIM_EVERY
        if due and self.reclaim() and self._grant(key, wanted):
            self._granted += 1
            return True
        self._refused += 1
        return False

    def _grant(self, key: str, demand: Demand) -> bool:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for name, weight in demand:
                (held,) = db.execute("SELECT COALESCE(SUM(weight), 0) FROM holdings WHERE name = ?",
                                     (name,)).fetchone()
                if held + weight > self.limit(name):
                    db.execute("ROLLBACK")
                    return False
            # A name may repeat ("a, a"): each token was checked on its own above, and the
            # holding is their sum, as HTCondor's accountant increments once per token.
            totals: dict[str, float] = {}
            for name, weight in demand:
                totals[name] = totals.get(name, 0.0) + weight
            db.executemany("INSERT OR REPLACE INTO holdings VALUES (?, ?, ?, ?, ?)",
                           [(self._pid, self._start, key, name, weight) for name, weight in totals.items()])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return True

    def release(self, key: str) -> None:
        """Give back everything ``key`` holds (a no-op if it holds nothing)."""
        self._db.execute("DELETE FROM holdings WHERE owner_pid = ? AND owner_start = ? AND key = ?",
                         (self._pid, self._start, key))

    def release_all(self) -> None:
        """Give back everything this process holds."""
        self._db.execute("DELETE FROM holdings WHERE owner_pid = ? AND owner_start = ?",
                         (self._pid, self._start))

    def reclaim(self) -> int:
        """Delete the holdings of owners that no longer run; returns how many owners were gone."""
        self._last_reclaim = self._clock()
        owners = self._db.execute("SELECT DISTINCT owner_pid, owner_start FROM holdings").fetchall()
        dead = [(pid, start) for pid, start in owners if start_ticks(pid) != start]
        if dead:
            self._db.executemany("DELETE FROM holdings WHERE owner_pid = ? AND owner_start = ?", dead)
        return len(dead)

    def usage(self) -> dict[str, float]:
        """Machine-wide usage per limit name (every run's holdings), sorted by name."""
        rows = self._db.execute("SELECT name, SUM(weight) FROM holdings GROUP BY name ORDER BY name")
        return {name: float(total) for name, total in rows}

    def statistics(self) -> dict[str, object]:
        usage = self.usage()
        return {
            "granted": self._granted,
            "refused": self._refused,
            "limits": {name: (used, self.limit(name)) for name, used in usage.items()},
        }

    def close(self) -> None:
        """Release this process's holdings and close the store."""
        try:
            self.release_all()
        finally:
            self._db.close()


def _limit_knobs(config: Mapping[str, object] | None) -> dict[str, float]:
    """The limit knobs of a configuration (``*_LIMIT``, ``CONCURRENCY_LIMIT_DEFAULT*``)."""
    knobs: dict[str, float] = {}
    for key in config or {}:
        upper = key.upper()
        if not (upper.endswith("_LIMIT") or upper.startswith("CONCURRENCY_LIMIT_DEFAULT")):
            continue
        value = config[key] if config is not None else None
        try:
            number = float(str(value).strip())
        except ValueError:
            number = -1.0
        if not number >= 0:
            raise _bad_limit(config, key, value)
        knobs[upper] = number
    return knobs


def _bad_limit(config: Mapping[str, object] | None, key: str, value: object) -> FormatError:
    if isinstance(config, PoolConfig):
        return config.error(key, "not a limit", "a concurrency limit is a number >= 0")
    return FormatError(f"{key}: not a limit", rule="a concurrency limit is a number >= 0", value=value)
