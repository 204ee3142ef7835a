"""Starting one job process: argv exec'd directly, its own process group, files, CPU affinity, a pidfd.

The choices (their measurements are in docs/performance.md, "Figures behind the code's choices"):

- ``os.posix_spawn``, not ``subprocess.Popen``, whose Python-side set-up makes each launch dearer
  (both fork with vfork in C); ``os.posix_spawn`` (``posix_spawnp`` when argv[0] has no slash,
  searching this process's PATH) with ``setpgroup=0``: the job leads its own process group, so
  killing the group reaches its children; the environment is the launch's, complete, encoded in C.
- A process group, not a session (``setsid``): the job stays in the engine's session.  With the
  kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on by default) a new
  session is a new scheduling group, and on a busy machine that makes jobs run markedly slower than
  the same jobs under ``xargs`` (``benchmarks/engine_throughput.py``).  A background
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
  back (two syscalls), one spawn at a time (a Dask worker runs a local backend in each task's
  thread).  Caveat: another thread that resolves a *relative* path at that very moment would
  resolve it against the job's directory; sheaf's engine uses absolute paths.
- CPU affinity without ``preexec_fn`` or ``taskset``: a child inherits the CPU mask of the thread
  that forks it, so the spawning thread pins *itself* to the slot's CPUs around the call and
  restores its mask after -- two syscalls, no race with the job's own forks.  It costs no extra CPU,
  but the thread migrates to the slot's CPU and back, which lengthens each spawn on a busy machine;
  it is paid only with ``ENFORCE_CPU_AFFINITY``.  (Setting the child's mask after the spawn would be
  cheaper but would race with a job that forks at once.)
- Descriptors: posix_spawn closes only close-on-exec descriptors.  Python opens everything
  close-on-exec, but a process may have *inherited* open descriptors (a make jobserver pipe, a
  harness's log); ``seal_descriptors`` marks every descriptor above 2 close-on-exec once, when the
  backend starts, so a job sees only its stdin, stdout and stderr, as with HTCondor.
- Exit is watched through a pidfd (``os.pidfd_open``): the backend's epoll (or, with the C
  extension, its reaper thread's: ``_cspawn``) sees it readable when the process ends and then
  reaps exactly that pid with ``wait4`` (no SIGCHLD handler, no ``waitpid(-1)`` that would steal
  the engine's own children).
- ``os.posix_spawn`` holds the GIL while it waits for the child's ``execve`` (glibc forks with
  ``CLONE_VFORK``), so nothing else in the process moves meanwhile.  Where the C extension was built,
  the local backend spawns from POSIX threads that never take the GIL (``local._cspawn``, through
  ``local._spawner.CSpawner``: same requests, same results, same errors); :func:`spawn` is the
  portable fallback, called in the engine's own thread (``SHEAF_PURE_PYTHON=1``, or no extension).
  This module is also what the Slurm job wrapper loads at the start of every job, so it imports
  only ``os``, ``contextlib`` and ``signal``.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["DEFAULT_SIGNALS", "SpawnError", "Spawned", "explain_failure", "seal_descriptors", "spawn"]

_OUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
#: what a job gets with the default action, whatever the engine's Python made of them: the interpreter
#: ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across execve (a job's `yes | head`
#: would end in "write error: Broken pipe" instead of quietly); ``subprocess`` resets the same two
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
#: held from one spawn's chdir to its way back, as every thread of the process shares the directory
_CHDIR = _thread.allocate_lock()


class SpawnError(Exception):
    """The process could not be started (missing executable or directory, no permission)."""


class Spawned:
    """A started process and its pidfd (a plain class: see the module docstring)."""

    __slots__ = ("pid", "pidfd")

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid, self.pidfd = pid, pidfd

    def __repr__(self) -> str:
        return f"Spawned(pid={self.pid}, pidfd={self.pidfd})"


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
    actions = _file_actions(stdout, stderr, stdin)
    saved = _pin(cpus)
    try:
        with _CHDIR:
            here = os.getcwd()
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


def explain_failure(exc: OSError, program: str, cwd: str) -> str:
    """The reason of a failed spawn whose working directory was a file action (the C spawner's),
    told as :func:`spawn` tells its own."""
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
