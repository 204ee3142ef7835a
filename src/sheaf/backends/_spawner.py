"""Spawning job processes in a thread of their own, for the local backend (see ``_spawn``).

Where glibc's ``posix_spawn`` is usable (``THREADED``), the call releases the GIL while the caller
waits for the child's ``execve``; :class:`Spawner` runs the spawns in one thread so that wait overlaps
with the engine loop.  The thread only spawns: it hands each result back through a list and an
eventfd, and the backend's thread does everything else.  Where the C extension ``_cspawn`` was
built, :class:`CSpawner` is that thread in C, never taking the GIL (``_spawn``'s docstring).
Kept apart from ``_spawn``, which the Slurm job wrapper imports at the start of every job and which
therefore stays free of ``threading``, ``queue``, ``dataclasses`` and ``ctypes``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Generic, TypeVar

from sheaf.backends._spawn import Spawned, SpawnError, _libc_failure, libc_available, spawn

__all__ = ["THREADED", "CSpawner", "SpawnRequest", "SpawnResult", "Spawner", "make_spawner"]

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


def _compiled() -> ModuleType | None:
    """The C spawner (``_cspawn``), or None: not built, or ``SHEAF_PURE_PYTHON=1``."""
    if os.environ.get("SHEAF_PURE_PYTHON") == "1":
        return None
    try:  # the optional C extension, imported by name, as it may be missing
        return importlib.import_module("._cspawn", __package__)
    except ImportError:
        return None


class CSpawner(Generic[T]):
    """:class:`Spawner`'s interface over the C thread of ``_cspawn`` (see the module docstring).

    A request the C side refuses outright (an embedded NUL, an illegal variable name, no argv) is
    a failed result, as the Python thread reports it, handed back by the next :meth:`results`."""

    def __init__(self, clock: Callable[[], float], module: ModuleType) -> None:
        self._clock = clock
        self._c = module.Spawner()
        self.wakeup: int = self._c.fileno()
        self._pending: dict[int, tuple[SpawnRequest[T], float]] = {}  # number -> (request, clock at submit)
        self._refused: list[SpawnResult[T]] = []
        self._next = 0

    def submit(self, request: SpawnRequest[T]) -> None:
        number, self._next = self._next, self._next + 1
        started = self._clock()
        try:
            if not request.argv:
                raise SpawnError("empty argv: no executable")
            self._c.submit(number, request.argv, request.env if isinstance(request.env, dict) else
                           dict(request.env), request.cwd, request.stdout, request.stderr, request.stdin,
                           sorted(request.cpus) if request.cpus else None)
        except (SpawnError, ValueError) as exc:
            self._refused.append(SpawnResult(request.tag, None, str(exc), started, time.monotonic()))
            os.eventfd_write(self.wakeup, 1)
            return
        self._pending[number] = (request, started)

    def results(self) -> list[SpawnResult[T]]:
        return self._outcomes(self._c.results())

    def close(self) -> list[SpawnResult[T]]:
        """Finish the requests already submitted, stop the thread; returns the results not yet taken."""
        return self._outcomes(self._c.close())

    def _outcomes(self, rows: list[tuple[int, int, int, int, float]]) -> list[SpawnResult[T]]:
        done, self._refused = self._refused, []
        for number, pid, pidfd, error, since in rows:
            request, started = self._pending.pop(number)
            if error:
                reason = _libc_failure(OSError(error, os.strerror(error)), request.argv[0], request.cwd)
                done.append(SpawnResult(request.tag, None, reason, started, since))
            else:
                done.append(SpawnResult(request.tag, Spawned(pid, pidfd), None, started, since))
        return done


def make_spawner(clock: Callable[[], float]) -> Spawner[T] | CSpawner[T] | None:
    """The spawner thread the local backend uses: C where built, else Python where glibc allows
    (``THREADED``), else None (spawns run in the caller's thread)."""
    module = _compiled()
    if module is not None:
        return CSpawner(clock, module)
    return Spawner(clock) if THREADED else None
