"""The files through which a Dask task tells what became of its attempt, so a resumed engine knows.

Layout: the Slurm backend's (``sheaf.backends._records.Paths``: nothing there depends on Slurm), under
``DIR/sheaf-dask``; ``stem`` names one attempt of one run (``stem_of(run id, launch key)``)::

    jobs/<stem>          written by the engine before it hands the task to Dask: the Dask key, the launch
                         key and the scheduler (``""`` for a LocalCluster the engine owned)
    inbox/<stem>.start   written by the task on the worker as it begins: host, worker pid and its start
                         ticks (so a resumed engine can stop a dead engine's own worker, and only it)
    inbox/<stem>.exit    written by the task once the attempt ended: its events, in order

Invariants: every record is written whole under a temporary name and renamed into place (a reader
sees all or nothing); a task writes ``.exit`` only after its attempt's process is gone, and writes
nothing for an attempt the engine cancelled; a submission removes the records an earlier submission
of the same key left.  The records are not moved once read (the futures carry the results of a
live run; only a resumed engine reads them), so they cost the task two small writes and the engine
one.

What a resumed engine concludes (``DaskBackend.adopt``)
    * an exit record: the attempt ended while no engine watched; its events are the result;
    * a job record naming the scheduler this engine is connected to, whose task that scheduler still
      knows: the attempt is still queued or running there (tasks on a scheduler sheaf does not own
      are ``fire_and_forget``, so they outlive their client) and is adopted;
    * a job record of a LocalCluster the dead engine owned: that cluster is dying with its engine.
      Its worker (found by the start record, when it is on this host and still the same process) is
      stopped and waited for -- its guard then kills the jobs -- and the exit record is read once
      more: an attempt that finished in that moment is taken, any other is run again, exactly once;
    * anything else never reached Dask or was lost with its worker: the engine runs it again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sheaf._proc import start_ticks
from sheaf.backends._records import read_record, write_record
from sheaf.engine import Event, Exited, Held, Released, Removed, Requeued, Suspended

__all__ = ["decode_events", "encode_events", "read_events", "stop_dead_worker", "write_exit", "write_start"]

_KINDS: dict[str, type[Any]] = {cls.__name__: cls
                                for cls in (Exited, Held, Suspended, Released, Removed, Requeued)}
_GONE_WAIT = 10.0


def encode_events(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [{"kind": type(event).__name__,
             **{name: getattr(event, name) for name in type(event).__dataclass_fields__}} for event in events]


def decode_events(items: object) -> list[Event] | None:
    """The events of an exit record, or None if it is not one (damaged, or of another version)."""
    if not isinstance(items, list):
        return None
    events: list[Event] = []
    for item in items:
        kind = _KINDS.get(str(item.get("kind"))) if isinstance(item, dict) else None
        if kind is None:
            return None
        try:
            events.append(kind(**{k: v for k, v in item.items() if k != "kind"}))
        except TypeError:
            return None
    return events


def write_start(path: str, task: str) -> None:
    """The task's start record (see the module docstring); runs in the worker process."""
    pid = os.getpid()
    write_record(path, {"task": task, "host": socket.gethostname(), "worker": pid, "ticks": start_ticks(pid)})


def write_exit(path: str, task: str, events: Sequence[Event]) -> None:
    write_record(path, {"task": task, "events": encode_events(events)})


def read_events(path: str) -> list[Event] | None:
    record = read_record(path)
    return None if record is None else decode_events(record.get("events"))


def stop_dead_worker(start: Mapping[str, Any] | None) -> None:
    """SIGKILL the worker process a start record names, if it runs on this host and is still the same
    process (its start ticks), and wait until it is gone: a LocalCluster worker of a dead engine."""
    if start is None or start.get("host") != socket.gethostname():
        return
    pid, ticks = start.get("worker"), start.get("ticks")
    if not isinstance(pid, int) or ticks is None or start_ticks(pid) != ticks:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _GONE_WAIT
    while start_ticks(pid) == ticks and time.monotonic() < deadline:
        time.sleep(0.01)
