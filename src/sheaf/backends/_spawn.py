"""Starting one job process: argv exec'd directly, its own process group, files, CPU affinity, a pidfd.

Choices, measured on this machine (2 CPUs; one ``/bin/true`` at a time, spawn + wait, full
environment, output files): ``os.posix_spawn`` 1,700-1,790/s, ``subprocess.Popen`` 1,300-1,550/s
(its Python-side set-up costs ~100 us a launch; both fork with vfork in C).  So:

- ``os.posix_spawn`` (``posix_spawnp`` when argv[0] has no slash, searching this process's PATH)
  with ``setpgroup=0``: the job leads its own process group, so killing the group reaches its
  children; the environment is the launch's, complete, encoded in C.
- A process group, not a session (``setsid``): the job stays in the engine's session.  With the
  kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on by default) a new
  session is a new scheduling group, and on a busy 2-CPU machine that made jobs run markedly slower
  than the same jobs under ``xargs`` (``benchmarks/engine_throughput.py``: 100 clusters of 50
  ``/bin/true`` spawned two at a time took 4.9-8.0 s in sessions of their own against 3.1-4.0 s in
  process groups of their own; 3,000 ``/bin/true`` 3.4-4.0 s against 2.5-3.4 s).  A background
  process group still gets no terminal signal meant for the engine (Ctrl-C reaches the foreground
  group only); a job never has the terminal as stdin or output (HTCondor gives it none either).
- stdin is the submit description's ``input`` file, else /dev/null; stdout/stderr are opened in the
  child by file actions, created and *truncated* (HTCondor truncates a job's output at each start),
  relative to the job's working directory; stderr may be the same file (then it is a dup of
  stdout).  A file that cannot be opened makes the spawn fail with the reason.
- Working directory: Python 3.11's posix_spawn has no chdir action, so when the job's directory
  differs from this process's, the process changes directory for the duration of the call and
  back (two syscalls).  Caveat: another thread that resolves a *relative* path at that very moment
  would resolve it against the job's directory; sheaf's engine uses absolute paths.
- CPU affinity without ``preexec_fn`` or ``taskset``: a child inherits the CPU mask of the thread
  that forks it, so the spawning thread pins *itself* to the slot's CPUs around the call and
  restores its mask after -- two syscalls, no race with the job's own forks.  Measured cost: no
  extra CPU (~115 us a spawn either way), but the thread migrates to the slot's CPU and back, which
  added 1.2-2.7 ms of wall time per spawn on a busy 2-CPU machine; it is paid only with
  ``ENFORCE_CPU_AFFINITY``.  (Setting the child's mask after the spawn would be cheaper but would
  race with a job that forks at once.)
- Descriptors: posix_spawn closes only close-on-exec descriptors.  Python opens everything
  close-on-exec, but a process may have *inherited* open descriptors (a make jobserver pipe, a
  harness's log); ``seal_descriptors`` marks every descriptor above 2 close-on-exec once, when the
  backend starts, so a job sees only its stdin, stdout and stderr, as with HTCondor.
- Exit is watched through a pidfd (``os.pidfd_open``): the backend's epoll sees it readable when
  the process ends and then reaps exactly that pid with ``os.wait4`` (no SIGCHLD handler, no
  reaper thread, no ``waitpid(-1)`` that would steal the engine's own children).
- Where glibc allows it (``_libcspawn``), the same ``posix_spawn`` is called through ``ctypes``, which
  releases the GIL while the caller waits for the child's ``execve`` (``CLONE_VFORK``), with the
  working directory as a file action (no process-wide chdir).  :class:`Spawner` then runs spawns in
  one thread of their own, so that wait -- 0.3-1.3 ms a job on a busy 2-CPU machine, longer than the
  engine's own work for a node -- overlaps with the engine loop.  The thread only spawns: it hands
  each result back through a list and an eventfd, and the backend's thread does everything else.
- Where the C extension ``_cspawn`` was built, that thread is a POSIX thread that never takes the GIL
  (:class:`CSpawner`, same requests, same results, same errors): the Python thread's own work per
  spawn -- ctypes set-up, two GIL hand-offs -- was about a quarter of the engine's GIL time with two
  slots of ``/bin/true``.  ``SHEAF_PURE_PYTHON=1`` leaves it out (:func:`make_spawner`).
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

from sheaf.backends._libcspawn import AVAILABLE as THREADED
from sheaf.backends._libcspawn import libc_spawn

__all__ = ["THREADED", "CSpawner", "SpawnError", "SpawnRequest", "SpawnResult", "Spawned", "Spawner",
           "make_spawner", "seal_descriptors", "spawn"]

T = TypeVar("T")

_OUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


class SpawnError(Exception):
    """The process could not be started (missing executable or directory, no permission)."""


@dataclass(frozen=True, slots=True)
class Spawned:
    pid: int
    pidfd: int


def _file_actions(stdout: str, stderr: str, stdin: str = os.devnull) -> list[tuple[object, ...]]:
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout, _OUT_FLAGS, 0o644),
    ]
    if stderr == stdout:
        actions.append((os.POSIX_SPAWN_DUP2, 1, 2))
    else:
        actions.append((os.POSIX_SPAWN_OPEN, 2, stderr, _OUT_FLAGS, 0o644))
    return actions


def spawn(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str,
          cpus: frozenset[int] | None = None, stdin: str = os.devnull) -> Spawned:
    """Start ``argv`` (see the module docstring); raises ``SpawnError`` with the reason."""
    if not argv:
        raise SpawnError("empty argv: no executable")
    return (_spawn_libc if THREADED else _spawn_os)(argv, env, cwd, stdout, stderr, cpus, stdin)


def _spawn_os(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str,
              cpus: frozenset[int] | None, stdin: str = os.devnull) -> Spawned:
    actions = _file_actions(stdout, stderr, stdin)
    here = os.getcwd()
    saved = _pin(cpus)
    try:
        if cwd != here:
            os.chdir(cwd)
        try:
            start = os.posix_spawn if "/" in argv[0] else os.posix_spawnp
            pid = start(argv[0], list(argv), env, file_actions=actions, setpgroup=0)
        finally:
            if cwd != here:
                os.chdir(here)
    except OSError as exc:
        raise SpawnError(_explain(exc, argv[0], cwd)) from None
    finally:
        if saved is not None:
            os.sched_setaffinity(0, saved)
    return Spawned(pid, os.pidfd_open(pid))


def _spawn_libc(argv: Sequence[str], env: Mapping[str, str], cwd: str, stdout: str, stderr: str,
                cpus: frozenset[int] | None, stdin: str = os.devnull) -> Spawned:
    saved = _pin(cpus)
    try:
        pid = libc_spawn(argv, env, cwd, stdout, stderr, stdin)
    except OSError as exc:
        raise SpawnError(_libc_failure(exc, argv[0], cwd)) from None
    finally:
        if saved is not None:
            os.sched_setaffinity(0, saved)
    return Spawned(pid, os.pidfd_open(pid))


def _libc_failure(exc: OSError, program: str, cwd: str) -> str:
    """The reason of a failed libc ``posix_spawn`` (its working directory is a file action)."""
    if not os.path.isdir(cwd):  # the chdir action failed: say so, as the chdir path does
        exc.filename = cwd
    return _explain(exc, program, cwd)


def _explain(exc: OSError, program: str, cwd: str) -> str:
    if exc.filename is not None and str(exc.filename) == cwd:
        return f"cannot enter working directory {cwd!r}: {exc.strerror}"
    return f"cannot execute {program!r} (or open its output files) in {cwd!r}: {exc.strerror}"


def seal_descriptors() -> None:
    """Make every open descriptor above 2 close-on-exec (see the module docstring)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the descriptor of the listing itself, closed by now
                os.set_inheritable(fd, False)


def _pin(cpus: frozenset[int] | None) -> set[int] | None:
    """Pin the calling thread to ``cpus``; returns the mask to restore (None: nothing changed)."""
    if not cpus:
        return None
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    return saved


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
