"""What a Dask worker runs for one attempt: the local backend's own launch path, on one slot.

Policy
    An attempt on Dask is launched exactly as on this machine, by the same code: the task builds a
    ``LocalBackend`` over a one-slot ``Pool`` the size of the resources Dask granted (``NUM_CPUS``,
    ``MEMORY``, ``NUM_SLOTS = 1``) and submits the ``Launch`` to it.  So argv (exec'd, no shell), the
    complete environment, the working directory, stdout/stderr truncated per attempt, stdin, a
    session of its own, only descriptors 0-2, ``$$()`` against the slot, the memory watch (RSS of
    the process tree against ``RequestMemory``) and the job's ``periodic_*`` policy are the local
    backend's, not a copy of them.  A clustered job (seqexec, PMC) is one ``Launch`` and so one task.

Result
    The task returns the events the local backend reported for the attempt, in order, ending with
    the one that ends it (``Exited``, ``Held`` or ``Removed``); ``Suspended``/``Released``/``Requeued``
    on the way are kept (the task holds its Dask resources while the job is held, as a held job keeps
    its place in the schedd's queue).  A cancelled attempt returns ``[]``.  Given the paths, the task
    also writes its start record as it begins and, once the attempt ended, its exit record with the same
    events (``_records``): what an engine resumed after a crash reads.

Cancel
    :func:`cancel_attempts` runs in the worker process (``Client.run``): it flags the attempts, and
    each flagged task's thread cancels its own backend within ``_CHECK`` seconds (the local backend
    is driven by one thread only: the task's), killing the job's process group.

Worker exit
    The local backend lists each job's process group in its process's job guard's table
    (``_jobguard``: one guard per worker process, started by :func:`warm`).  When the worker
    process is gone -- its nanny or the engine that owned its LocalCluster died, ``dask worker``
    stopped, SIGKILL -- the guard kills every group still running, so an attempt does not go on,
    and finish unrecorded, after the engine that submitted it died: the resumed engine runs it
    again.  (An ``atexit`` hook would not do: a Dask worker whose nanny dies leaves by ``os._exit``.)

Concurrency limits: the slot's backend takes them from this machine's store, so on Dask they hold
per worker host, not across the cluster.
"""

from __future__ import annotations

import threading

from sheaf.backends import _jobguard
from sheaf.backends._pool import Pool
from sheaf.backends.dask._records import write_exit, write_start
from sheaf.backends.local import LocalBackend
from sheaf.engine import Event, Exited, Held, Launch, Removed

__all__ = ["cancel_attempts", "run_attempt", "warm"]

_CHECK = 0.05  # how often a running task looks for a cancel flag (s)
_lock = threading.Lock()
_running: dict[str, threading.Event] = {}  # attempts running in this worker process, by key


def slot_config(cpus: int, memory: int, policy_interval: float) -> str:
    """The one-slot pool of an attempt granted ``cpus`` CPUs and ``memory`` MB."""
    return (f"NUM_CPUS = {cpus}\nMEMORY = {memory}\nNUM_SLOTS = 1\n"
            f"PERIODIC_EXPR_INTERVAL = {policy_interval}\n")


def run_attempt(launch: Launch, cpus: int, memory: int, policy_interval: float = 60.0,
                task: str | None = None, records: tuple[str, str] | None = None) -> list[Event]:
    """Run ``launch`` on a slot of ``cpus`` CPUs and ``memory`` MB; its events (module docstring).
    ``task`` names it for :func:`cancel_attempts` (the Dask key: unique, where a launch key is reused
    by a resubmission after a cancel); ``records`` are the paths of its start and exit records
    (``_records``), written for an engine resumed after a crash."""
    name = task or launch.key
    flag = threading.Event()
    with _lock:
        _running[name] = flag
    if records is not None:
        write_start(records[0], name)
    backend = LocalBackend(Pool(slot_config(cpus, memory, policy_interval)))
    events: list[Event] = []
    try:
        backend.submit(launch)
        while not flag.is_set():
            batch = backend.wait(_CHECK)
            events.extend(batch)
            if any(isinstance(event, Exited | Held | Removed) for event in batch):
                if records is not None:
                    write_exit(records[1], name, events)
                return events
        backend.cancel(launch.key)
        return []
    finally:
        backend.close()
        with _lock:
            _running.pop(name, None)


def warm() -> None:
    """Make this worker process ready before the first attempt arrives: this module and what it
    imports are loaded (the call itself loads them) and the guard is running.  Run on every worker
    when the backend connects (``Client.run``), so a run's first tasks do not pay for it."""
    _jobguard.start()


def cancel_attempts(keys: list[str] | None = None) -> list[str]:
    """Flag the attempts ``keys`` (their ``task`` names; all when None) running in this process; the
    names flagged."""
    with _lock:
        flagged = [key for key in _running if keys is None or key in keys]
        for key in flagged:
            _running[key].set()
    return flagged
