"""The rescue DAG and the SAVE_POINT_FILE, in DAGMan's format.

A rescue DAG ``<dag>.rescueNNN`` (NNN = one more than the newest, ``_paths.next_rescue``) is a *new*
file, written atomically (``_files.write_atomic``) in DAGMan's format (:func:`rescue_text`); a run
that writes it twice (a FINAL node failed after it) overwrites its own.  A save point file is written
in the same format when a node with ``SAVE_POINT_FILE`` starts for the first time.
"""

from __future__ import annotations

__all__ = ["RescueNode", "rescue_text", "write_rescue", "write_save_point"]

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sheaf.engine._paths import MAX_RESCUE_DEFAULT, next_rescue
from sheaf.engine.reports._files import RESUME_HINT, write_atomic
from sheaf.errors import StorageError


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


def rescue_text(dag_files: Sequence[str], nodes: Iterable[RescueNode], reset_retries: bool,
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
                                                    f"#   the {dag_files[0]} DAG file"]  # the primary
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


def write_rescue(dag_path: str, text: str, multi: bool = False, path: str | None = None,
                 limit: int = MAX_RESCUE_DEFAULT) -> str:
    """Write a rescue DAG atomically: to ``path`` (the run's own, when it writes a second time: DAGMan
    overwrites it) or a new ``<dag>.rescueNNN`` numbered one more than the newest, at most ``limit``."""
    if path is None:
        path = next_rescue(dag_path, multi, limit)
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
        raise StorageError.of(exc, path, RESUME_HINT) from None
    write_atomic(path, text)
