"""How the report files are written, and what a killed engine left of them.

* Snapshots (the DOT file, the node status file, the metrics file, a rescue DAG) are replaced
  atomically (:func:`write_atomic`: write a temporary, fsync, rename); nothing is rewritten in place.
* History files (``jobstate.log``, the node job event log) are appended to (:class:`AppendFile`) and
  flushed once per loop turn, after the journal commit.

Storage failures (a full disk, an I/O error) raise :class:`StorageError` naming the file: the loop
stops the run, which resumes from the journal.  An atomic write that fails removes its temporary
file (``<file>.tmp<pid>``); one left by a killed engine (its pid no longer runs) is removed by the
next run (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

__all__ = ["RESUME_HINT", "AppendFile", "remove_stale_temporaries", "write_atomic"]

import contextlib
import glob
import os
import re
from collections.abc import Iterable
from typing import IO

from sheaf._proc import alive as pid_alive
from sheaf.errors import StorageError

_TMP_RE = re.compile(r"\.tmp(\d+)$")
RESUME_HINT = ("the run stopped and its jobs were stopped; run `sheaf run` again to resume once the disk "
               "has room")


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` (write a temporary, fsync, rename); on failure the temporary is
    removed and :class:`StorageError` raised."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise StorageError.of(exc, path, RESUME_HINT) from None
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself is durable too
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def remove_stale_temporaries(patterns: Iterable[str]) -> list[str]:
    """Remove ``<file>.tmp<pid>`` files, ``<file>`` matching one of the glob ``patterns``, whose
    writer (``pid``) no longer runs; returns them."""
    removed = []
    for pattern in patterns:
        for path in glob.glob(pattern + ".tmp*"):
            match = _TMP_RE.search(path)
            if match and not pid_alive(int(match.group(1))):
                _unlink(path)
                removed.append(path)
    return removed


class AppendFile:
    """A history file appended to for the whole run (jobstate.log, the node job event log); a write
    or flush that fails raises :class:`StorageError` naming the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise StorageError.of(exc, path, RESUME_HINT) from None

    def write(self, lines: list[str]) -> None:
        try:
            self._handle.write("".join(lines))  # a turn's lines in one write (not one per line)
        except OSError as exc:  # the buffer spilled onto a full disk
            raise StorageError.of(exc, self.path, RESUME_HINT) from None

    def flush(self) -> None:
        try:
            self._handle.flush()
        except OSError as exc:
            raise StorageError.of(exc, self.path, RESUME_HINT) from None

    def close(self) -> None:
        # a history file: what could not be written was reported by flush already
        with contextlib.suppress(OSError):
            self._handle.close()
