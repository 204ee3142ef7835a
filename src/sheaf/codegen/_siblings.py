"""The temporary siblings of a plan directory, and the removal of those an interrupted plan left.

``write_plan`` writes into ``.<DIR>.sheaf-new-<pid>-XXXX`` beside DIR and renames it into place
(the old plan goes to ``.<DIR>.sheaf-old-<pid>-XXXX`` until it is removed); see ``_write``.  A
sibling whose plan process is gone and whose directory lock is free is left over: the next plan
into DIR or ``sheaf run DIR`` removes it.  A numbered plan (into the next ``runNNNN`` of a parent)
first removes the leftovers of dead planners beside every directory of that parent
(:func:`remove_dead_plans`), and with them the directory each reserved for its plan while it is
still empty: a plan killed while it writes costs the next plan neither its number nor a leftover.
A live planner's sibling (its pid runs, or its lock is held) is never removed, nor is a directory
that holds anything (a finished plan) or one another live planner writes into.  Apart from
``_write`` so that ``sheaf run`` can do this without importing the planner.
"""

from __future__ import annotations

__all__ = ["remove_dead_plans", "remove_stale_siblings", "sibling"]

import contextlib
import fcntl
import os
import re
import shutil

from sheaf._proc import alive as pid_alive


def sibling(final: str, kind: str) -> str:
    """The name prefix of DIR's temporary siblings of ``kind`` (``new`` or ``old``)."""
    return os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.sheaf-{kind}-")


_SIBLING_RE = re.compile(r"\.sheaf-(?:new|old)-(?:(\d+)-)?[^/]*$")


def remove_stale_siblings(final: str) -> list[str]:
    """Remove the temporary directories interrupted plans into ``final`` left (module docstring)."""
    final = os.path.realpath(final)
    parent = os.path.dirname(final)
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    removed: list[str] = []
    prefixes = (sibling(final, "new"), sibling(final, "old"))
    for name in names:
        path = os.path.join(parent, name)
        match = _SIBLING_RE.search(name)
        if not (path.startswith(prefixes) and match):
            continue
        # sheaf 0.1 named them without the pid and took no lock: never one of a running plan now
        owner = match.group(1)
        if (owner is None or not pid_alive(int(owner))) and _lock_free(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def remove_dead_plans(parent: str) -> list[str]:
    """Remove what dead planners left in ``parent``: the temporary siblings of each of its
    directories, and the directory a dead planner reserved while it is empty (module docstring)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    leaves = sorted({head[1:] for name in names for kind in ("new", "old")
                     if (head := name.partition(f".sheaf-{kind}-")[0]) != name and head.startswith(".")
                     and len(head) > 1})
    removed: list[str] = []
    for leaf in leaves:
        final = os.path.join(parent, leaf)
        gone = remove_stale_siblings(final)
        removed += gone
        if not any(path.startswith(sibling(os.path.realpath(final), "new")) for path in gone):
            continue
        prefix = os.path.basename(sibling(final, "new"))
        if any(name.startswith(prefix) for name in os.listdir(parent)):
            continue  # another planner writes into it
        with contextlib.suppress(OSError):  # not empty (a finished plan) or already gone: kept
            os.rmdir(final)
            removed.append(final)
    return removed


def _lock_free(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
