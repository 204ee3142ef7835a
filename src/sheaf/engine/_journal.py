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
  with the engine's own group sizes both ways, in the same run): a commit as ``write+fsync`` is
  cheaper than one of SQLite in WAL mode with ``synchronous=FULL``, commit latency is what the loop
  waits on, and a reader (``sheaf status``) of a log needs no lock: it reads complete lines.

Records (``t`` is the injected clock's time; typed and validated in ``_records``)::

    ["B", t, epoch, source, total, [initially done nodes], run]   an engine run begins
                                                              source: fresh | recovery | rescue:<file>
                                                              run: the run id, the same for every
                                                              run of the journal (see _orphans)
    ["C", t, node, start, finish, attempt, info|null]         a node changed state
    ["P", t, node, attempt, pid, start_ticks]                 an attempt's process started (backends
                                                              that report ``Started``; see _orphans)
    ["E", t, succeeded, dag_status, exit_code, rescue|null]   the run ended

Replaying the records gives, per node, its last state, attempt number and failure reason: a node
whose last state is ``done`` is never run again; one that was in flight when the engine died runs
again, after the processes journaled for it (``Replay.processes``) are stopped.

Damage
------
Every record is validated on replay (``_records``), and each change must start in the state the
node's previous change finished in.  A line that fails either is *damage*, listed with its byte
offset in ``Replay.damage`` and skipped.  Damage before the latest ``B`` record cannot hide a done
node: that record lists every node done when its run began.  Damage after it can (it may have been
the change that made a node done), so ``Replay.damage_in_latest_run`` makes the loop refuse to run
rather than guess; ``sheaf status`` shows what it can read and warns.
"""

from __future__ import annotations

__all__ = ["Journal", "JournalWriteError", "NodeRecord", "Replay", "read_records", "replay"]

import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sheaf.engine._events import Change
from sheaf.engine._nodes import ACTIVE_STATES
from sheaf.engine._records import (
    BeginRecord,
    ChangeRecord,
    Damage,
    EndRecord,
    ProcessRecord,
    Record,
    encode,
    encode_lines,
    info_of,
    scan,
)
from sheaf.errors import EngineError, StorageError


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
    ended: EndRecord | None = None  # the "E" record of the latest run, None while running
    source: str | None = None
    run_id: str = ""  # the id of the journal's runs (the first "B" record that named one)
    started: float | None = None  # when the first run began
    run_started: float | None = None  # when the latest run began
    last_time: float | None = None
    max_cluster: int = 0
    retries: int = 0
    job_time: float = 0.0
    records: int = 0
    processes: dict[str, tuple[int, int]] = field(default_factory=dict)  # in-flight node -> (pid, ticks)
    damage: list[Damage] = field(default_factory=list)  # unusable lines, in file order
    damage_in_latest_run: list[Damage] = field(default_factory=list)  # ... after the latest "B"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise EngineError(f"cannot read the journal {path}: {exc.strerror}") from None


def read_records(path: str) -> Iterator[Record]:
    """The usable records of the journal at ``path`` (torn and damaged lines are skipped)."""
    for _, _, item in scan(_read(path)):
        if not isinstance(item, Damage):
            yield item


def _change(state: Replay, record: ChangeRecord) -> str | None:
    rec = state.nodes.get(record.node)
    if (rec.state if rec is not None else "waiting") != record.start:
        # every change starts where the node's previous one finished: a record that does not was
        # damaged (its node name, say), or one before it was lost
        was = rec.state if rec is not None else "waiting"
        return f"node {record.node!r} changes {record.start} -> {record.finish} but was {was}"
    if rec is None:
        rec = state.nodes[record.node] = NodeRecord()
    info = info_of(record)
    rec.state, rec.attempt = record.finish, record.attempt
    rec.reason = info.why or info.reason or rec.reason
    if isinstance(info.cluster, int):
        rec.cluster = info.cluster
        state.max_cluster = max(state.max_cluster, info.cluster)
    if isinstance(info.retry, int):
        state.retries += 1
    if info.started is not None and info.ended is not None:
        state.job_time += max(0.0, info.ended - info.started)
    if record.finish == "done":
        rec.reason = None
    if record.finish not in ACTIVE_STATES:
        state.processes.pop(record.node, None)
    return None


def _begin(state: Replay, record: BeginRecord) -> None:
    state.epochs, state.source, state.total, state.ended = record.epoch, record.source, record.total, None
    state.run_id = state.run_id or record.run
    state.started = record.time if state.started is None else state.started
    state.run_started = record.time
    state.processes = {}  # the run that wrote this record stopped them first
    state.damage_in_latest_run = []
    if record.source == "recovery":
        for rec in state.nodes.values():
            if rec.state in ACTIVE_STATES:
                rec.state = "waiting"  # in flight when the engine died: runs again
    else:
        state.nodes = {}
    for name in record.done:
        rec = state.nodes.setdefault(name, NodeRecord())
        rec.state, rec.reason = "done", None


def _apply(state: Replay, record: Record) -> str | None:
    """Apply one record; returns why it cannot be applied (it contradicts the records before it)."""
    state.records += 1
    state.last_time = record.time
    if isinstance(record, ChangeRecord):
        return _change(state, record)
    if isinstance(record, ProcessRecord):
        state.processes[record.node] = (record.pid, record.ticks)
    elif isinstance(record, BeginRecord):
        _begin(state, record)
    else:
        state.ended = record
    return None


def replay(path: str) -> Replay:
    """Replay the journal at ``path``; damaged lines are listed in ``damage`` (see ``_records``)."""
    state = Replay()
    data = _read(path)
    for offset, line, item in scan(data):
        if isinstance(item, Damage):
            damage = item
        else:
            why = _apply(state, item)
            if why is None:
                continue
            damage = Damage(offset, line, why, data[offset:offset + 80])
        state.damage.append(damage)
        state.damage_in_latest_run.append(damage)
    return state


class JournalWriteError(StorageError):
    """The journal could not be written (disk full, I/O error): the run must stop."""


class Journal:
    """Appends records; :meth:`commit` makes every appended record durable with one fsync.

    A failed write or fsync (``ENOSPC``, ``EIO``, ...) ends the journal: the syncer cuts the file
    back to the end of the last durable commit (so no half record is left for a later writer to
    append after), marks every waiting commit done, and from then on :attr:`failure` is set and
    :meth:`commit_start` raises :class:`JournalWriteError`.  The loop checks :attr:`failure` after
    each wait and stops the run.
    """

    def __init__(self, path: str, run_id: str = "") -> None:
        self.path = path
        self.run_id = run_id
        self._pending: list[bytes] = []
        self.bytes_written = 0
        self.commits = 0
        self.seconds = 0.0  # spent in write + fsync (reported by benchmarks/engine_throughput.py)
        self.failure: JournalWriteError | None = None
        self._queue: queue.SimpleQueue[tuple[bytes, threading.Event] | None] = queue.SimpleQueue()
        self._syncer: threading.Thread | None = None
        self._wake = -1  # an eventfd written after each commit, once asked for (wake_fd)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._size = os.fstat(self._fd).st_size  # the end of the last durable commit
            if _ends_torn(path):
                self._pending.append(b"\n")  # never glue a new record onto a torn one
            self._sync_dir(os.path.dirname(path))
        except OSError as exc:
            raise _write_error(path, exc) from None

    def begin(self, time: float, epoch: int, source: str, total: int, done: Iterable[str]) -> None:
        self._add(BeginRecord(time, epoch, source, total, sorted(done), self.run_id))

    def changes(self, changes: Iterable[Change]) -> None:
        records = [ChangeRecord(c.time, c.node, c.start, c.finish, c.attempt,  # type: ignore[arg-type]
                                dict(c.info) if c.info else None) for c in changes]
        if records:  # a turn's changes encoded in one call
            self._pending.append(encode_lines(records))

    def process(self, time: float, node: str, attempt: int, pid: int, ticks: int) -> None:
        self._add(ProcessRecord(time, node, attempt, pid, ticks))

    def end(self, time: float, succeeded: bool, dag_status: int, exit_code: int,
            rescue: str | None) -> None:
        self._add(EndRecord(time, succeeded, dag_status, exit_code, rescue))

    def _add(self, record: Record) -> None:
        self._pending.append(encode(record))

    def commit(self) -> None:
        """Write everything appended since the last commit, then fsync (a no-op when empty)."""
        done = self.commit_start()
        if done is not None:
            done.wait()
        if self.failure is not None:
            raise self.failure

    def commit_start(self) -> threading.Event | None:
        """Hand the pending records to the syncer thread; the event is set once they are durable
        (or the journal failed: then :attr:`failure` is set).

        Commits complete in order.  The loop waits for the event before acting on the records, and
        meanwhile lets the backend refill its slots from work journaled earlier.
        """
        if self.failure is not None:
            raise self.failure
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

    def wake_fd(self) -> int:
        """An eventfd the syncer writes each time a commit is durable (just before its event is set:
        a waiter that saw the event set may read the count away), for a loop that waits on
        descriptors meanwhile; it lives as long as the journal."""
        if self._wake < 0:
            self._wake = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        return self._wake

    def _sync_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            data, done = item
            if self.failure is None:
                try:
                    self._write(data)
                except OSError as exc:
                    self._fail(exc)
            if self._wake >= 0:
                os.eventfd_write(self._wake, 1)
            done.set()

    def _write(self, data: bytes) -> None:
        start = time.perf_counter()
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self.seconds += time.perf_counter() - start
        self._size += len(data)
        self.bytes_written += len(data)
        self.commits += 1

    def _fail(self, exc: OSError) -> None:
        try:  # the failed commit was never durable and nothing acted on it: drop what reached the file
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        except OSError:
            pass  # left as a torn tail, which readers skip; nothing is appended after it
        self.failure = _write_error(self.path, exc)

    def close(self) -> None:
        """Commit what is pending (unless the journal failed) and stop the syncer; never hangs on a
        failed journal."""
        try:
            if self.failure is None:
                self.commit()
        finally:
            if self._syncer is not None:
                self._queue.put(None)
                self._syncer.join(timeout=None if self.failure is None else 5.0)
            os.close(self._fd)
            if self._wake >= 0 and (self._syncer is None or not self._syncer.is_alive()):
                os.close(self._wake)  # (a syncer hung in fsync may still write it: left open)
                self._wake = -1

    @staticmethod
    def _sync_dir(directory: str) -> None:
        fd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_error(path: str, exc: OSError) -> JournalWriteError:
    return JournalWriteError.of(exc, f"the journal {path}", "the run stopped and its jobs were stopped; "
                                "the journal keeps every change made durable so far: run `sheaf run` "
                                "again to resume once the problem is fixed")  # type: ignore[return-value]


def _ends_torn(path: str) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return False
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"
