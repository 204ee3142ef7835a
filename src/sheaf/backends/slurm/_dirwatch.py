"""Waiting for a file to be renamed into a directory: Linux inotify where it works, else a plain sleep.

The Slurm backend learns an attempt's start and end from records its job wrapper renames into the
run's inbox (``sheaf.backends._records``).  Polling alone makes the engine react to an exit half a
poll interval late on average -- on a chain of jobs, once per link.  :class:`DirectoryWatch` lets the
backend sleep until a rename into the directory (``IN_MOVED_TO``) or the poll interval, whichever
comes first.

The poll stays the ground truth: inotify sees only what this machine's kernel does to the
directory, so a record written by a compute node over NFS or another shared file system raises no
event, and is found by the next poll as before.  The wrapper writes each record under a temporary
name in the same directory and renames it into place, so a rename is exactly "a record arrived"
(``IN_CLOSE_WRITE`` of the temporary file is not watched).  Without inotify (another kernel, no
libc, the watch limit reached) :meth:`DirectoryWatch.wait` just sleeps.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import time

__all__ = ["DirectoryWatch"]

_IN_MOVED_TO = 0x00000080
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC


def _inotify(path: str) -> int | None:
    """An inotify descriptor watching renames into ``path``, or None where that is not possible."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if libc.inotify_add_watch(fd, os.fsencode(path), _IN_MOVED_TO) < 0:
        os.close(fd)
        return None
    return fd


class DirectoryWatch:
    """``wait(timeout)`` returns when a file was renamed into ``path`` since the last call, or after
    ``timeout`` seconds (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.fd = _inotify(path)

    def wait(self, timeout: float) -> None:
        if self.fd is None:
            time.sleep(max(timeout, 0.0))
            return
        ready, _, _ = select.select([self.fd], [], [], max(timeout, 0.0))
        if ready:
            self._drain()

    def _drain(self) -> None:
        assert self.fd is not None
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fd, 65536):
                pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
