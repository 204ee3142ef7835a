"""The interface between the engine and a backend: what the engine submits and the events it gets back.

The engine hands a backend one :class:`Launch` per attempt and learns what became of it only through
:meth:`Backend.wait`: an attempt ends as :class:`Exited` (a failing job is an event, not an exception)
or :class:`Held` (it can never run as submitted).  The interface is only ever extended (a new field
has a default; a new method is an optional capability of its own small protocol, below), so every
backend written against it keeps working.

Capabilities a backend may have, each a protocol the engine checks with ``isinstance`` (mypy then
knows the narrowed type): :class:`SelfRefilling`, :class:`ReportsStarts`, :class:`Adopts`,
:class:`Pollable`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Protocol, runtime_checkable

from sheaf._value import value_class
from sheaf.classad import ClassAd


@value_class
class FileTransfer:
    """HTCondor file transfer (``should_transfer_files = YES``): the job runs in a fresh sandbox
    directory; ``inputs`` (absolute paths; a trailing ``/`` copies a directory's contents) are copied
    in first, and afterwards ``outputs`` (names in the sandbox; ``None``: every file the job created
    or changed at the sandbox's top level) are copied back into ``initialdir`` by their base names, or
    to the path ``remaps`` gives a name (``transfer_output_remaps``; a relative one under
    ``initialdir``).  ``on_success`` (``when_to_transfer_output = ON_SUCCESS``): outputs come back
    only after a successful exit.  With ``preserve_relative_paths`` (HTCondor's submit command of
    that name) an input written as a relative path (``names``: the entries as written, in the order
    of ``inputs``) keeps that path in the sandbox, and an output named by a relative path goes back
    to that path under ``initialdir``."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] | None = None
    remaps: tuple[tuple[str, str], ...] = ()
    on_success: bool = False
    preserve_relative_paths: bool = False
    names: tuple[str, ...] = ()


@value_class
class Launch:
    key: str                  # unique per attempt: f"{node}#{attempt}" (plus a run id if needed)
    node: str                 # DAG node name
    attempt: int              # retry number, 0 on the first try (== DAGNodeRetry)
    argv: tuple[str, ...]     # executable + arguments, exec'd directly (never a shell)
    env: Mapping[str, str]    # the complete environment of the process
    cwd: str                  # initialdir
    stdout: str               # file path (created/truncated by the backend)
    stderr: str               # file path (may equal stdout)
    job_ad: ClassAd           # job ClassAd: RequestCpus/RequestMemory/RequestDisk (expressions allowed),
                              #   Requirements, Rank, JobUniverse/"Universe" ("vanilla"|"local"|...),
                              #   ConcurrencyLimits, DAGNodeRetry, JobPrio, Owner, Cmd, ...
    priority: int = 0         # DAG node PRIORITY (higher first)
    stdin: str = os.devnull   # the submit description's ``input`` (a file path), read as stdin
    transfer: FileTransfer | None = None  # HTCondor file transfer: run in a sandbox (``FileTransfer``)
    submit_attempts: int = 6  # DAGMAN_MAX_SUBMIT_ATTEMPTS: tries of a backend whose submission can fail
                              #   for a while (a batch system's controller down), with DAGMan's back-off
                              #   (1, 2, 4, ... s); then the attempt is Held with the scheduler's message

@value_class
class Exited:
    key: str
    exit_code: int | None     # None when killed by a signal
    signal: int | None
    reason: str | None        # why the backend stopped it,
                              #   e.g. "memory usage 1536 MB exceeded request 1024 MB"
    started: float            # wall-clock (time.time()) when the process started
    ended: float
    slot: str | None = None   # e.g. "slot1_1@localhost"

@value_class
class Held:
    key: str
    reason: str               # the job can never run as submitted (no slot could ever match, bad
                              #   request_* expression, unexpandable $$(...)); the engine treats it
                              #   as a failed attempt with this reason

@value_class
class Suspended:              # extension: put on hold by the job's periodic_hold (the schedd's policy);
                              #   it stays queued, killed if it ran, until released or removed
    key: str
    reason: str               # HoldReason
    code: int = 3             # HoldReasonCode (3: the job's policy)
    subcode: int = 0          # HoldReasonSubCode (periodic_hold_subcode)

@value_class
class Released:               # extension: a Suspended attempt released by periodic_release: queued again
    key: str
    reason: str = ""          # the release event's reason ("The job attribute PeriodicRelease ...")

@value_class
class Removed:                # extension: removed by the job's periodic_remove (running, queued or held):
                              #   the attempt is over, as HTCondor's JOB_ABORTED
    key: str
    reason: str

@value_class
class Requeued:               # extension: the job exited and its OnExitRemove (on_exit_remove, max_retries)
                              #   kept it queued: it runs again, the attempt goes on (JOB_EVICTED)
    key: str
    exit_code: int | None     # None when killed by a signal
    signal: int | None
    reason: str               # "The job attribute OnExitRemove expression '...' evaluated to FALSE"

Event = Exited | Held | Suspended | Released | Removed | Requeued

@value_class
class Started:                # extension: an attempt's process began
                              #   (backends whose jobs can outlive the engine)
    key: str
    pid: int                  # the job's process; it leads its own process group (pgid == pid)
    start_ticks: int          # its start time, field 22 of /proc/<pid>/stat (clock ticks since boot):
                              #   with the pid it names the process uniquely, even after the pid is reused;
                              #   0 when the process is gone already (nothing left to stop after a crash);
                              #   pid 0: no process of this machine (a batch system's job, found by
                              #   ``adopt`` instead), so nothing is journaled to stop on resume
    time: float = 0.0         # wall-clock start (time.time()): the EXECUTE event's; 0: unknown, the
                              #   engine's clock is used
    slot: str | None = None   # where it runs (the EXECUTE event's host), when known

@runtime_checkable
class Backend(Protocol):
    def submit(self, launch: Launch) -> None:
        """Non-blocking: queue the attempt until resources allow."""

    def wait(self, timeout: float | None) -> list[Event]:
        """Block up to ``timeout`` for at least one event; [] on timeout."""

    def cancel(self, key: str) -> None:
        """Stop a queued or running attempt (no event is reported)."""

    def idle(self) -> int:
        """Attempts submitted but not yet started (for maxidle)."""

    def running(self) -> int: ...

    def close(self) -> None:
        """Stop everything still running; release all resources."""


@runtime_checkable
class SelfRefilling(Protocol):
    """A backend that starts its queued attempts by itself as resources free up, within ``wait()``: the
    engine then gathers exits a little longer while attempts are queued, so that one turn (one journal
    commit) carries many (``_run.EngineRun._gather_while_queued``).  Asked each turn: a routing
    backend's answer changes when it makes a route's backend."""

    @property
    def self_refilling(self) -> bool: ...


@runtime_checkable
class ReportsStarts(Protocol):
    """A backend that tells when attempts start.  ``started()``: the attempts started since the last
    call (each start: a job released from hold starts again).  The engine writes their EXECUTE events
    when it learns of them, and journals the local processes still running ("P" records) so that a run
    resumed after the engine was killed stops the jobs the dead engine left running
    (``sheaf.engine._orphans``) before it runs their nodes again.  Without it, each job's EXECUTE is
    written when the job ends, with the job's start time."""

    def started(self) -> list[Started]: ...


@runtime_checkable
class Adopts(Protocol):
    """A backend whose jobs outlive the engine (a batch system).  ``attempts`` are the node attempts
    ``(node, attempt)`` an engine of the run ``run_id`` had in flight when it was killed.  The backend
    takes over those it still has -- queued, running, or ended with their result kept -- and returns
    their launch keys.  The resumed engine submits each node again as usual; a ``submit`` whose key was
    adopted attaches to the adopted job instead of starting another, and the backend reports an adopted
    job's event only once its key is submitted.  The engine spares the processes of adopted attempts
    when it stops a killed engine's orphans."""

    def adopt(self, run_id: str, attempts: Collection[tuple[str, int]]) -> Collection[str]: ...


@runtime_checkable
class Pollable(Protocol):
    """A backend with a descriptor that becomes readable when ``wait()`` has something (-1: none now):
    a journal commit in flight is waited for on it and on the journal's eventfd, not by polling."""

    def fileno(self) -> int: ...
