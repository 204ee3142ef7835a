"""Spawning job processes in a thread of their own, for the local backend (see ``_spawn``).

Where glibc's ``posix_spawn`` is usable (``THREADED``), the call releases the GIL while the caller
waits for the child's ``execve``; :class:`Spawner` runs the spawns in one thread so that wait overlaps
with the engine loop.  The thread only spawns: it hands each result back through a list and an
eventfd, and the backend's thread does everything else.  Kept apart from ``_spawn``, which the Slurm
job wrapper imports at the start of every job and which therefore stays free of ``threading``,
``queue``, ``dataclasses`` and ``ctypes``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from sheaf.backends._spawn import Spawned, SpawnError, libc_available, spawn

__all__ = ["THREADED", "SpawnRequest", "SpawnResult", "Spawner"]

THREADED = libc_available()
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SpawnRequest(Generic[T]):
    tag: T  # the caller's: handed back with the result
    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: str
    stdout: str
    stderr: str
    cpus: frozenset[int] | None
    stdin: str = os.devnull


@dataclass(frozen=True, slots=True)
class SpawnResult(Generic[T]):
    tag: T
    spawned: Spawned | None  # None: it failed, see error
    error: str | None
    started: float  # the injected clock's time of the spawn
    since: float  # time.monotonic() of the spawn


class Spawner(Generic[T]):
    """Spawns requests in a thread of its own (see the module docstring); :meth:`results` gives the
    finished ones, in order, and :attr:`wakeup` (an eventfd) is readable while some are waiting."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._requests: queue.SimpleQueue[SpawnRequest[T] | None] = queue.SimpleQueue()
        self._results: list[SpawnResult[T]] = []
        self._lock = threading.Lock()
        self.wakeup = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="sheaf-spawner", daemon=True)
        self._thread.start()

    def submit(self, request: SpawnRequest[T]) -> None:
        self._requests.put(request)

    def results(self) -> list[SpawnResult[T]]:
        with contextlib.suppress(BlockingIOError):  # nothing written since the last call
            os.eventfd_read(self.wakeup)
        with self._lock:
            done, self._results = self._results, []
        return done

    def _run(self) -> None:
        while (request := self._requests.get()) is not None:
            started, since = self._clock(), time.monotonic()
            try:
                spawned, error = spawn(request.argv, request.env, request.cwd, request.stdout, request.stderr,
                                       request.cpus, request.stdin), None
            except (SpawnError, ValueError) as exc:
                spawned, error = None, str(exc)
            with self._lock:
                self._results.append(SpawnResult(request.tag, spawned, error, started, since))
            os.eventfd_write(self.wakeup, 1)

    def close(self) -> list[SpawnResult[T]]:
        """Finish the requests already submitted, stop the thread; returns the results not yet taken."""
        self._requests.put(None)
        self._thread.join()
        done = self.results()
        os.close(self.wakeup)
        return done
