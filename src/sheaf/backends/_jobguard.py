"""The job guard: kills the process groups of a process's jobs as soon as that process is gone.

Policy
    A job runs in a session of its own, so it outlives the process that started it (the engine, or a
    Dask worker running the local backend for a task).  Left alone after a ``kill -9`` of that
    process, it would go on and finish unrecorded -- and the resumed run would run it again: a task
    done twice.  So every process that starts jobs through the local backend has one guard: a small
    process, started with the first job (:func:`tell`), that reads lines ``+PGID`` (a job started) and
    ``-PGID`` (it ended) on its stdin, a pipe whose write end only that process holds (close-on-exec:
    no job or script inherits it).  End of file means the process is gone -- closed, ``os._exit``
    (what a Dask worker does when its nanny dies: no ``atexit`` runs) or SIGKILL alike -- and the
    guard sends SIGKILL to every group still listed, then exits.  A resumed engine's orphan scan
    (``engine._orphans``) remains the backstop for a guard killed too.

The guard is this file run as a script by an isolated interpreter (``python -I -S``: no site, no
sheaf imports, ~10 ms to start), in a session of its own so that a signal to its parent's process
group does not stop it first, and ignoring SIGINT (^C at a terminal reaches the parent, whose pipe
then tells the guard).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import IO

__all__ = ["descriptor", "guard", "start", "tell"]

_lock = threading.Lock()
_pipe: list[IO[bytes]] = []  # the write end of this process's guard's stdin, once started
_owner: list[int] = []       # the pid that started it (a forked child must start its own)
_fd = [-1]                   # its descriptor: one unbuffered write(2) a line (< PIPE_BUF: atomic)


def guard(lines: list[str] | None = None) -> set[int]:
    """Follow the lines until end of file; the groups still running then."""
    groups: set[int] = set()
    for line in lines if lines is not None else sys.stdin:
        text = line.strip()
        if len(text) > 1 and text[1:].isdigit():
            (groups.add if text[0] == "+" else groups.discard)(int(text[1:]))
    return groups


def start() -> None:
    """Start this process's guard now (else it starts with the first job)."""
    with _lock:
        if _pipe and _owner[0] == os.getpid():
            return
        proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        assert proc.stdin is not None
        _pipe[:], _owner[:], _fd[0] = [proc.stdin], [os.getpid()], proc.stdin.fileno()


def descriptor() -> int:
    """The write end of this process's guard's stdin (the guard started first if need be), for a
    thread that tells it ``+PGID``/``-PGID`` itself (the local backend's C reaper thread)."""
    if not _owner or _owner[0] != os.getpid():
        start()
    return _fd[0]


def tell(line: str) -> None:
    """Tell the guard ``+PGID`` or ``-PGID`` (one system call: this runs twice for every job)."""
    with contextlib.suppress(BrokenPipeError):  # a guard killed from outside: the orphan scan remains
        os.write(descriptor(), line.encode() + b"\n")


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for pgid in guard():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
