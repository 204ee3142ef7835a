"""The engine's journal: an append-only log of state changes, fsync'd before the engine acts.

Policy
------
* **Journal first, then act.**  The loop appends the changes of one turn (one batch of events and
  the dispatch that follows) and commits them - one ``write`` and one ``fsync`` per turn (group
  commit), done by a syncer thread - and waits until they are durable before it submits, cancels,
  runs a script or writes a report.  While it waits it only lets the backend start work journaled
  in earlier turns and collects exits for the next turn, so the fsync does not idle the slots.
* **Append only.**  The file is never rewritten, truncated or seeked back into.  A record is one
  line of JSON (an array); a ``kill -9`` can leave at most one torn last line, which readers skip
  (and the next writer starts on a fresh line).  Nothing is pickled.
* **Why a log and not SQLite** (``benchmarks/engine_throughput.py`` writes the engine's own records
  with the engine's own group sizes both ways, in the same run): on this shared 2-core machine a
  commit cost 22-355 µs per record as ``write+fsync`` against 108-500 µs for SQLite in WAL mode with
  ``synchronous=FULL`` (the log faster in 3 of 5 runs, even in one, slower in one under a load spike);
  SQLite's file is about 15 % smaller (87 vs 104 bytes per record).  Commit latency is what the
  loop waits on, and a reader (``sheaf status``) of a log needs no lock: it reads complete lines.
  The engine's journal costs about 285 bytes per node (three changes: ready, submitted, done).

Records (``t`` is the injected clock's time)::

    ["B", t, epoch, source, total, [initially done nodes]]   an engine run begins
                                                              source: fresh | recovery | rescue:<file>
    ["C", t, node, start, finish, attempt, info|null]         a node changed state
    ["P", t, node, attempt, pid, start_ticks]                 an attempt's process started (backends
                                                              that report ``Started``; see _orphans)
    ["E", t, succeeded, dag_status, exit_code, rescue|null]   the run ended

Replaying the records gives, per node, its last state and attempt number: a node whose last state
is ``done`` is never run again; one that was in flight when the engine died runs again, after the
processes journaled for it (``Replay.processes``) are stopped.
"""

from __future__ import annotations

__all__ = ["Journal", "NodeRecord", "Replay", "read_records", "replay"]

import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from sheaf.engine._state import ACTIVE_STATES, Change
from sheaf.errors import EngineError

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


@dataclass(slots=True)
class NodeRecord:
    state: str = "waiting"
    attempt: int = 0
    reason: str | None = None
    cluster: int = 0


@dataclass(slots=True)
class Replay:
    """What the journal says: the runs so far and every node's last state."""

    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    epochs: int = 0
    total: int = 0
    ended: list[Any] | None = None  # the last "E" record of the latest run, None while running
    source: str | None = None
    started: float | None = None  # when the first run began
    run_started: float | None = None  # when the latest run began
    last_time: float | None = None
    max_cluster: int = 0
    retries: int = 0
    job_time: float = 0.0
    records: int = 0
    processes: dict[str, tuple[int, int]] = field(default_factory=dict)  # in-flight node -> (pid, ticks)


def read_records(path: str) -> Iterator[list[Any]]:
    """Complete records of the journal at ``path`` (a torn last line is skipped)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return
    for line in data.split(b"\n")[:-1]:  # the text after the last newline is incomplete
        if not line:
            continue
        try:
            record = _decoder.decode(line)
        except msgspec.DecodeError:
            continue  # a torn line left by a crash, followed by a fresh start
        if isinstance(record, list) and record:
            yield record


def _apply(state: Replay, record: list[Any]) -> None:
    kind = record[0]
    state.records += 1
    state.last_time = record[1]
    if kind == "C":
        _, _, node, _start, finish, attempt, info = record
        rec = state.nodes.setdefault(node, NodeRecord())
        rec.state, rec.attempt = finish, attempt
        if info:
            rec.reason = info.get("why") or info.get("reason") or rec.reason
            if "cluster" in info:
                rec.cluster = info["cluster"]
                state.max_cluster = max(state.max_cluster, info["cluster"])
            if "retry" in info:
                state.retries += 1
            if "started" in info and "ended" in info:
                state.job_time += max(0.0, info["ended"] - info["started"])
        if finish == "done":
            rec.reason = None
        if finish not in ACTIVE_STATES:
            state.processes.pop(node, None)
    elif kind == "P":
        state.processes[record[2]] = (record[4], record[5])
    elif kind == "B":
        _, t, epoch, source, total, done = record
        state.epochs, state.source, state.total, state.ended = epoch, source, total, None
        state.started = t if state.started is None else state.started
        state.run_started = t
        state.processes = {}  # the run that wrote this record stopped them first
        if source == "recovery":
            for rec in state.nodes.values():
                if rec.state in ACTIVE_STATES:
                    rec.state = "waiting"  # in flight when the engine died: runs again
        else:
            state.nodes = {}
        for name in done:
            state.nodes.setdefault(name, NodeRecord()).state = "done"
    elif kind == "E":
        state.ended = record


def replay(path: str) -> Replay:
    state = Replay()
    for record in read_records(path):
        _apply(state, record)
    return state


class Journal:
    """Appends records; :meth:`commit` makes every appended record durable with one fsync."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pending: list[bytes] = []
        self.bytes_written = 0
        self.commits = 0
        self.seconds = 0.0  # spent in write + fsync (reported by benchmarks/engine_throughput.py)
        self._queue: queue.SimpleQueue[tuple[bytes, threading.Event] | None] = queue.SimpleQueue()
        self._syncer: threading.Thread | None = None
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise EngineError(f"cannot open the journal {path}: {exc.strerror}") from exc
        if _ends_torn(path):
            self._pending.append(b"\n")  # never glue a new record onto a torn one
        self._sync_dir(os.path.dirname(path))

    def begin(self, time: float, epoch: int, source: str, total: int, done: Iterable[str]) -> None:
        self._add(["B", time, epoch, source, total, sorted(done)])

    def changes(self, changes: Iterable[Change]) -> None:
        for c in changes:
            self._add(["C", c.time, c.node, c.start, c.finish, c.attempt,
                       dict(c.info) if c.info else None])

    def process(self, time: float, node: str, attempt: int, pid: int, ticks: int) -> None:
        self._add(["P", time, node, attempt, pid, ticks])

    def end(self, time: float, succeeded: bool, dag_status: int, exit_code: int,
            rescue: str | None) -> None:
        self._add(["E", time, succeeded, dag_status, exit_code, rescue])

    def _add(self, record: list[Any]) -> None:
        self._pending.append(_encoder.encode(record) + b"\n")

    def commit(self) -> None:
        """Write everything appended since the last commit, then fsync (a no-op when empty)."""
        done = self.commit_start()
        if done is not None:
            done.wait()

    def commit_start(self) -> threading.Event | None:
        """Hand the pending records to the syncer thread; the event is set once they are durable.

        Commits complete in order.  The loop waits for the event before acting on the records, and
        meanwhile lets the backend refill its slots from work journaled earlier.
        """
        if not self._pending:
            return None
        data = b"".join(self._pending)
        self._pending.clear()
        done = threading.Event()
        if self._syncer is None:
            self._syncer = threading.Thread(target=self._sync_loop, name="sheaf-journal", daemon=True)
            self._syncer.start()
        self._queue.put((data, done))
        return done

    def _sync_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._write(*item)

    def _write(self, data: bytes, done: threading.Event) -> None:
        start = time.perf_counter()
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self.seconds += time.perf_counter() - start
        self.bytes_written += len(data)
        self.commits += 1
        done.set()

    def close(self) -> None:
        self.commit()
        if self._syncer is not None:
            self._queue.put(None)
            self._syncer.join()
        os.close(self._fd)

    @staticmethod
    def _sync_dir(directory: str) -> None:
        fd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_torn(path: str) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return False
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"
