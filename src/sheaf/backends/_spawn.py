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
- Signals: a job starts with SIGPIPE and SIGXFSZ at their default action (``DEFAULT_SIGNALS``; the
  Python interpreter ignores both, and ``subprocess`` resets them the same way); every other
  disposition and the signal mask are inherited (a handler is reset by ``execve`` itself).
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
- Exit is watched through a pidfd (``os.pidfd_open``): the backend's epoll (or, with the C
  extension, its reaper thread's: ``_cspawn``) sees it readable when the process ends and then
  reaps exactly that pid with ``wait4`` (no SIGCHLD handler, no ``waitpid(-1)`` that would steal
  the engine's own children).
- Where glibc allows it (``_libcspawn``), the same ``posix_spawn`` is called through ``ctypes``, which
  releases the GIL while the caller waits for the child's ``execve`` (``CLONE_VFORK``), with the
  working directory as a file action (no process-wide chdir).  :class:`Spawner` then runs spawns in
  one thread of their own, so that wait -- 0.3-1.3 ms a job on a busy 2-CPU machine, longer than the
  engine's own work for a node -- overlaps with the engine loop.  The thread only spawns: it hands
  each result back through a list and an eventfd, and the backend's thread does everything else.
  That thread lives in ``_spawner``: this module is also what the Slurm job wrapper loads at the
  start of every job, so it imports only ``os`` and ``contextlib`` (``typing``, ``dataclasses``,
  ``queue``, ``threading`` and ``ctypes`` cost ~25 ms of CPU a job there); the wrapper, single
  threaded, spawns without glibc's ``posix_spawn`` (``libc=False``).
- Where the C extension ``_cspawn`` was built, that thread is a POSIX thread that never takes the GIL
  (``_spawner.CSpawner``, same requests, same results, same errors): the Python thread's own work per
  spawn -- ctypes set-up, two GIL hand-offs -- was about a quarter of the engine's GIL time with two
  slots of ``/bin/true``.  ``SHEAF_PURE_PYTHON=1`` leaves it out (``_spawner.make_spawner``).
"""

from __future__ import annotations

import contextlib
import os
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["DEFAULT_SIGNALS", "SpawnError", "Spawned", "libc_available", "seal_descriptors", "spawn"]

_OUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
#: what a job gets with the default action, whatever the engine's Python made of them: the interpreter
#: ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across execve (a job's `yes | head`
#: would end in "write error: Broken pipe" instead of quietly); ``subprocess`` resets the same two
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
_LIBC: list[bool] = []  # whether glibc's posix_spawn can be used, once known


class SpawnError(Exception):
    """The process could not be started (missing executable or directory, no permission)."""


class Spawned:
    """A started process and its pidfd (a plain class: see the module docstring)."""

    __slots__ = ("pid", "pidfd")

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid, self.pidfd = pid, pidfd

    def __repr__(self) -> str:
        return f"Spawned(pid={self.pid}, pidfd={self.pidfd})"


def libc_available() -> bool:
    """Whether glibc's ``posix_spawn`` with a chdir action is usable (``_libcspawn``; loads ctypes)."""
    if not _LIBC:
        from sheaf.backends._libcspawn import AVAILABLE

        _LIBC.append(AVAILABLE)
    return _LIBC[0]


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
          cpus: frozenset[int] | None = None, stdin: str = os.devnull, *,
          libc: bool | None = None) -> Spawned:
    """Start ``argv`` (see the module docstring); raises ``SpawnError`` with the reason.  ``libc``:
    through glibc's ``posix_spawn`` (None: where available; False: ``os.posix_spawn``)."""
    if not argv:
        raise SpawnError("empty argv: no executable")
    use_libc = libc_available() if libc is None else libc
    return (_spawn_libc if use_libc else _spawn_os)(argv, env, cwd, stdout, stderr, cpus, stdin)


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
            pid = start(argv[0], list(argv), env, file_actions=actions, setpgroup=0,
                        setsigdef=DEFAULT_SIGNALS)
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
    from sheaf.backends._libcspawn import libc_spawn

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
