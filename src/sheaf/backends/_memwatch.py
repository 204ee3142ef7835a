"""Memory enforcement for the local backend: poll the resident memory of each job's process tree.

Mechanism, and why: cgroup v2 ``memory.max`` would be exact, but it needs a delegated, writable
cgroup subtree with the memory controller, which an unprivileged user (and a CI runner) rarely has
-- on the machine this was written on, the cgroup v2 mount offers only ``hugetlb`` and memory lives
in the v1 hierarchy, where a child cannot be placed atomically at spawn time.  sheaf therefore does
what HTCondor's procd does without cgroups: it *polls*, the same way everywhere.

- A job's process tree is every process of its process group (each job leads its own group), plus
  any descendant of its root that left the group (found through parent pids).
- Its usage is the sum of the resident set sizes (RSS) of that tree, read from ``/proc/<pid>/stat``
  in one pass over ``/proc`` for all watched jobs (no psutil objects, no per-job threads).
- Polling costs nothing for short jobs: a job is watched only once it has lived one poll interval
  (``POLL_INTERVAL``, 0.1 s), so ``/bin/true`` never triggers a scan.
- A tree over its limit is killed (SIGKILL to its process group) and reported with the measured
  usage as reason text.
- A spike shorter than the poll interval can slip between polls; at exit the kernel's peak RSS of
  the job (``wait4``'s ``ru_maxrss``) is compared with the limit as well, so such a job still fails
  -- when that peak exceeds the engine's own, since a spawned child inherits the spawner's
  high-water mark (see ``sheaf.backends.local``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from sheaf._proc import pids, stat_fields

__all__ = ["PAGE_MB", "POLL_INTERVAL", "tree_rss_mb"]

POLL_INTERVAL = 0.1
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _scan() -> list[tuple[int, int, int, int]]:
    """``(pid, ppid, process group, rss pages)`` of every process."""
    rows: list[tuple[int, int, int, int]] = []
    for pid in pids():
        fields = stat_fields(pid)
        if fields is None:
            continue  # the process ended during the scan
        rows.append((pid, int(fields[1]), int(fields[2]), int(fields[21])))
    return rows


def tree_rss_mb(roots: Iterable[int]) -> dict[int, float]:
    """Resident memory (MB) of each root's process tree (see the module docstring)."""
    wanted = set(roots)
    if not wanted:
        return {}
    rows = _scan()
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    owner: dict[int, int] = {}
    for pid, ppid, group, pages in rows:
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages
        if group in wanted:
            owner[pid] = group
    for root in wanted:
        stack = [root]
        while stack:
            pid = stack.pop()
            owner.setdefault(pid, root)
            stack.extend(children.get(pid, ()))
    totals = dict.fromkeys(wanted, 0.0)
    for pid, root in owner.items():
        totals[root] += rss.get(pid, 0) * PAGE_MB
    return totals
