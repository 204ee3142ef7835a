"""Files the engine writes for people and tools: the rescue DAG, DOT, and the helpers the others use.

* A rescue DAG ``<dag>.rescueNNN`` (NNN = one more than the newest) is a *new* file, written to a
  temporary name, fsync'd and renamed into place, in DAGMan's format (:func:`rescue_text`).
* The DOT file (and the node status file, ``_nodestatus``, and the metrics file, ``_metrics``) are
  snapshots, replaced atomically (write, fsync, rename); nothing is rewritten in place.
* ``jobstate.log`` (``_jobstate``) and the node job event log (``_nodelog``) are appended to
  (:class:`AppendFile`) and flushed once per loop turn, after the journal commit.

Storage failures (a full disk, an I/O error) raise :class:`StorageError` naming the file: the loop
stops the run, which resumes from the journal.  An atomic write that fails removes its temporary
file (``<file>.tmp<pid>``); one left by a killed engine (its pid no longer runs) is removed by the
next run (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

__all__ = [
    "AppendFile",
    "RescueNode",
    "remove_stale_temporaries",
    "rescue_text",
    "write_atomic",
    "write_rescue",
    "write_save_point",
]

import contextlib
import glob
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from sheaf._proc import alive as pid_alive
from sheaf.engine._paths import next_rescue
from sheaf.errors import StorageError

_TMP_RE = re.compile(r"\.tmp(\d+)$")
_RESUME = "the run stopped and its jobs were stopped; run `sheaf run` again to resume once the disk has room"


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
        raise StorageError.of(exc, path, _RESUME) from None
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


@dataclass(frozen=True, slots=True)
class RescueNode:
    """What a rescue DAG says about one node (in the DAG's node order)."""

    name: str
    done: bool
    failed: bool = False
    final: bool = False
    retries: int = 0  # RETRY n
    retried: int = 0  # retries already performed
    unless_exit: int | None = None
    reason: str | None = None
    weak_only: bool = False  # every child is a WEAK child (a failed node is then DONE in a rescue DAG)


def rescue_text(dag_files: Iterable[str], nodes: Iterable[RescueNode], reset_retries: bool,
                now: float, header: str | None = None) -> str:
    """A rescue DAG as DAGMan's ``Dag::WriteRescue`` writes it (version 2.1.0, a partial rescue DAG
    read on top of the original DAG): the header, a ``DONE`` line per finished node (never the FINAL
    node) and - only when ``DAGMAN_RESET_RETRIES_UPON_RESCUE`` is false - a ``RETRY`` line with the
    retries left, so that reading it back never changes a retry limit otherwise.  Each failed node's
    reason is a comment at the end, after DAGMan's own lines (DAGMan's reader skips comments), so
    that the file reads line by line as DAGMan's does.  A save point file is written in this format
    with its own ``header`` line (and retries reset)."""
    nodes = list(nodes)
    stamp = time.gmtime(now)
    failed = [n for n in nodes if n.failed]
    heading = [header] if header is not None else ["# Rescue DAG file, created after running",
                                                    f"#   the {' '.join(dag_files)} DAG file"]
    lines = [*heading,
             (f"# Created {stamp.tm_mon}/{stamp.tm_mday}/{stamp.tm_year} "
              f"{time.strftime('%H:%M:%S', stamp)} UTC"),
             "# Rescue DAG version: 2.1.0", "#",
             f"# Total number of Nodes: {len(nodes)}",
             f"# Nodes premarked DONE: {sum(1 for n in nodes if n.done)}",
             f"# Nodes that failed: {len(failed)}",
             "#   " + "".join(f"{n.name}," for n in failed) + "<ENDLIST>"]
    lines.append("")
    for node in nodes:
        if node.done and not node.final:
            lines.append(f"DONE {node.name}")
        elif node.failed and node.weak_only and not node.final:  # it ran: its WEAK children are served
            lines.extend(("# Failed node with only weak child dependencies:", f"DONE {node.name}"))
        if node.retries > 0 and not reset_retries:
            left = max(0, node.retries - node.retried)
            lines.append(f"# {node.retried} of {node.retries} retries already performed; {left} remaining")
            unless = f" UNLESS-EXIT {node.unless_exit}" if node.unless_exit is not None else ""
            lines.append(f"RETRY {node.name} {left}{unless}")
    lines += [f"# FAILED {n.name}: {' '.join((n.reason or 'unknown').split())}" for n in failed]
    return "\n".join(lines) + "\n"


def write_rescue(dag_path: str, text: str, multi: bool = False, path: str | None = None) -> str:
    """Write a rescue DAG atomically: to ``path`` (the run's own, when it writes a second time: DAGMan
    overwrites it) or a new ``<dag>.rescueNNN`` numbered one more than the newest."""
    if path is None:
        path = next_rescue(dag_path, multi)
    write_atomic(path, text)
    return path


def write_save_point(path: str, text: str) -> None:
    """A SAVE_POINT_FILE: its directory made, a file already there kept as ``<path>.old`` (one older
    version, as DAGMan keeps it), then written atomically."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.replace(path, path + ".old")
    except OSError as exc:
        raise StorageError.of(exc, path, _RESUME) from None
    write_atomic(path, text)


class AppendFile:
    """A history file appended to for the whole run (jobstate.log, the node job event log); a write
    or flush that fails raises :class:`StorageError` naming the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise StorageError.of(exc, path, _RESUME) from None

    def write(self, lines: list[str]) -> None:
        try:
            self._handle.write("".join(lines))  # a turn's lines in one write (not one per line)
        except OSError as exc:  # the buffer spilled onto a full disk
            raise StorageError.of(exc, self.path, _RESUME) from None

    def flush(self) -> None:
        try:
            self._handle.flush()
        except OSError as exc:
            raise StorageError.of(exc, self.path, _RESUME) from None

    def close(self) -> None:
        # a history file: what could not be written was reported by flush already
        with contextlib.suppress(OSError):
            self._handle.close()
