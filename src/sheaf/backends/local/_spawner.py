"""The local backend's spawner: C threads that start, and reap, its job processes (``_cspawn``).

Where the C extension ``_cspawn`` was built, :class:`CSpawner` is the interface to its threads,
which never take the GIL (``sheaf.backends._spawn``'s docstring): the engine's thread hands each
request over and takes the results back through an eventfd.  With ``reap=True`` (the local backend's
choice) reaper threads also reap the children and start a successor bound to one the moment it is
reaped (``_cspawn``'s header, ``_successors``), reporting exits as :class:`ExitResult`.  Without the
extension, or with ``SHEAF_PURE_PYTHON=1``, :func:`make_spawner` gives None and the backend calls
``sheaf.backends._spawn.spawn`` in its own thread.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Generic, TypeVar

from sheaf.backends._spawn import Spawned, SpawnError, explain_failure

__all__ = ["CSpawner", "ExitResult", "SpawnRequest", "SpawnResult", "make_spawner"]

T = TypeVar("T")


class SpawnRequest(Generic[T]):
    """What to spawn, and the caller's ``tag``, handed back with the result.

    The three record classes here are plain slotted classes, not frozen dataclasses: the local
    backend makes two or three of them per job on the engine loop's thread, and a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``, several times the cost.
    Treat them as read-only."""

    __slots__ = ("argv", "cpus", "cwd", "env", "stderr", "stdin", "stdout", "tag")

    def __init__(self, tag: T, argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str,
                 stderr: str, cpus: frozenset[int] | None, stdin: str = os.devnull) -> None:
        self.tag, self.argv, self.env, self.cwd = tag, argv, env, cwd
        self.stdout, self.stderr, self.cpus, self.stdin = stdout, stderr, cpus, stdin

    def __repr__(self) -> str:
        return f"SpawnRequest({self.tag!r}, {self.argv!r}, cwd={self.cwd!r})"


class SpawnResult(Generic[T]):
    """A spawn's outcome: ``spawned`` None when it failed (see ``error``)."""

    __slots__ = ("error", "handle", "since", "spawned", "started", "tag")

    def __init__(self, tag: T, spawned: Spawned | None, error: str | None, started: float, since: float,
                 handle: int = -1) -> None:
        self.tag, self.spawned, self.error = tag, spawned, error
        self.started = started  # the injected clock's time of the spawn
        self.since = since  # time.monotonic() of the spawn
        self.handle = handle  # the C thread's number for the child (CSpawner): follow, kill

    def __repr__(self) -> str:
        return f"SpawnResult({self.tag!r}, {self.spawned!r}, error={self.error!r}, handle={self.handle})"


class ExitResult(Generic[T]):
    """A child the C thread reaped (``CSpawner(reap=True)``)."""

    __slots__ = ("ended", "maxrss_kb", "since", "status", "tag")

    def __init__(self, tag: T, status: int, maxrss_kb: int, ended: float, since: float) -> None:
        self.tag = tag
        self.status = status  # the wait status
        self.maxrss_kb = maxrss_kb  # wait4's ru_maxrss
        self.ended = ended  # the injected clock's time of the reap (CLOCK_REALTIME when that is time.time)
        self.since = since  # time.monotonic() of the reap

    def __repr__(self) -> str:
        return f"ExitResult({self.tag!r}, status={self.status}, maxrss_kb={self.maxrss_kb})"


def _compiled() -> ModuleType | None:
    """The C spawner (``_cspawn``), or None: not built, or ``SHEAF_PURE_PYTHON=1``."""
    if os.environ.get("SHEAF_PURE_PYTHON") == "1":
        return None
    try:  # the optional C extension, imported by name, as it may be missing
        return importlib.import_module("._cspawn", __package__)
    except ImportError:
        return None


class CSpawner(Generic[T]):
    """The C threads of ``_cspawn`` (see the module docstring): :meth:`submit` a request, take
    :meth:`results` in order once :attr:`wakeup` (an eventfd) is readable.

    A request the C side refuses outright (an embedded NUL, an illegal variable name, no argv) is
    a failed result, as :func:`sheaf.backends._spawn.spawn` fails, handed back by the next
    :meth:`results`.

    With ``reap=True`` the thread also owns the children it started (``_cspawn``'s header): it
    reaps them and reports each as an :class:`ExitResult` (a started one's ``Spawned.pidfd`` is
    then -1), a request may be bound to a running child as its successor (:meth:`follow`), and
    :meth:`kill` signals a running child's process group safely against its reaping."""

    def __init__(self, clock: Callable[[], float], module: ModuleType, *, reap: bool = False,
                 coalesce: float | None = None) -> None:
        """``coalesce``: how late the reaper may tell of results the engine need not act on at once
        (``_cspawn``'s "Wake-ups"; its default when None)."""
        self._clock = clock
        options = {} if coalesce is None else {"coalesce": coalesce}
        self._c = module.Spawner(reap=reap, **options)
        self.wakeup: int = self._c.fileno()
        #: number -> (request, clock at submit; None for a successor)
        self._pending: dict[int, tuple[SpawnRequest[T], float | None]] = {}
        self._tags: dict[int, T] = {}  # running children (reap)
        self._refused: list[SpawnResult[T] | ExitResult[T]] = []
        self._next = 0

    def submit(self, request: SpawnRequest[T]) -> int:
        """Queue ``request``; returns its handle (for :meth:`kill`, :meth:`follow`)."""
        number, self._next = self._next, self._next + 1
        started = self._clock()
        try:
            if not request.argv:
                raise SpawnError("empty argv: no executable")
            self._c.submit(number, *_arguments(request))
        except (SpawnError, ValueError) as exc:
            self._refused.append(SpawnResult(request.tag, None, str(exc), started, time.monotonic()))
            os.eventfd_write(self.wakeup, 1)
            return number
        self._pending[number] = (request, started)
        return number

    def follow(self, after: int, request: SpawnRequest[T]) -> int | None:
        """Bind ``request`` as the last successor of the running child ``after`` (see the module
        docstring of ``_cspawn``); its handle, or None when ``after`` is not running any more or
        the request is refused (then nothing is queued: submit it instead)."""
        number = self._next
        try:
            if not request.argv or not self._c.follow(after, number, *_arguments(request)):
                return None
        except ValueError:
            return None
        self._next += 1
        self._pending[number] = (request, None)
        return number

    def unfollow(self, handle: int) -> bool:
        """Unbind a successor not yet taken for spawning; False when its start is on its way."""
        if not self._c.unfollow(handle):
            return False
        del self._pending[handle]
        return True

    def kill(self, handle: int, sig: int = signal.SIGKILL) -> bool:
        """Signal the running child's process group; False when it is not running (reaped)."""
        return bool(self._c.kill(handle, sig))

    def guard(self, table: int, pipe: int) -> None:
        """The job guard's table (a memfd) and pipe: the threads list their jobs there (``_jobguard``)."""
        self._c.guard(table, pipe)

    def results(self) -> list[SpawnResult[T] | ExitResult[T]]:
        return self._outcomes(self._c.results())

    def close(self) -> list[SpawnResult[T] | ExitResult[T]]:
        """Finish the requests already submitted, stop the thread, kill and reap the children still
        running (reap); returns the results not yet taken."""
        return self._outcomes(self._c.close())

    def _outcomes(self, rows: list[tuple[int, int, int, int, int, int, int, float, float]]
                  ) -> list[SpawnResult[T] | ExitResult[T]]:
        done, self._refused = self._refused, []
        tags, pending = self._tags, self._pending
        # the C thread's CLOCK_REALTIME is the injected clock's time when that is time.time; with a
        # test's fake clock, its now
        realtime = self._clock is time.time
        for kind, number, pid, pidfd, error, status, maxrss, mono, real in rows:
            if kind == 1:
                done.append(ExitResult(tags.pop(number), status, maxrss, real if realtime else self._clock(),
                                       mono))
                continue
            request, started = pending.pop(number)
            if started is None:  # a successor: it started in C
                started = real if realtime else self._clock()
            if error:
                reason = explain_failure(OSError(error, os.strerror(error)), request.argv[0], request.cwd)
                done.append(SpawnResult(request.tag, None, reason, started, mono, number))
            else:
                if pidfd < 0:
                    tags[number] = request.tag
                done.append(SpawnResult(request.tag, Spawned(pid, pidfd), None, started, mono, number))
        return done


def _arguments(request: SpawnRequest[T]) -> tuple[object, ...]:
    env = request.env if isinstance(request.env, dict) else dict(request.env)
    return (request.argv, env, request.cwd, request.stdout, request.stderr, request.stdin,
            sorted(request.cpus) if request.cpus else None)


def make_spawner(clock: Callable[[], float], *, reap: bool = False) -> CSpawner[T] | None:
    """The spawner the local backend uses: the C threads where built (reaping their children with
    ``reap``), else None (spawns run in the caller's thread)."""
    module = _compiled()
    return CSpawner(clock, module, reap=reap) if module is not None else None
