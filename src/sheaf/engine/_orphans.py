"""Stopping the jobs a killed engine left running, before a resumed run starts their nodes again.

Policy
------
* The backend reports each attempt's process as it starts (``Started``: pid and start time); the
  loop journals it as a ``P`` record in the next commit (at most one loop turn, <= 0.25 s, later).
  A node that was in flight when the engine died runs again on resume, so its old process must
  not keep running beside the new attempt (and repeat its side effects).
* On resume, every journaled process of a node still in flight is checked in ``/proc``: if the pid
  is alive *and* has the journaled start time it is the old job, and its whole process group (the
  job leads its own session) is killed with SIGKILL.  A pid that was reused by another process has
  another start time and is left alone.  Then the resume waits (up to 5 s) until the killed
  leaders are gone, so nothing of the old attempt runs once the node is submitted again.
* Limits: a job started in the last turn before the kill is not journaled yet and cannot be found;
  a job whose leader already exited but whose children live on is not found either (its pid no
  longer names it).  Linux only (``/proc``).
"""

from __future__ import annotations

__all__ = ["start_ticks", "stop_orphans"]

import os
import signal
import time
from collections.abc import Iterable

_GONE_WAIT = 5.0


def start_ticks(pid: int) -> int | None:
    """The start time of ``pid`` (field 22 of /proc/<pid>/stat), or None if it is gone or a zombie."""
    try:  # os-level calls: this runs once per job start, and io.open costs 3x as much
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data[data.rindex(b")") + 2:].split()  # after "pid (comm) ": state is field 3
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def stop_orphans(processes: Iterable[tuple[int, int]]) -> list[int]:
    """Kill the process groups of the ``(pid, start_ticks)`` still alive as journaled; returns their pids."""
    killed = []
    for pid, ticks in processes:
        if pid > 1 and start_ticks(pid) == ticks:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.append(pid)
    deadline = time.monotonic() + _GONE_WAIT
    for pid, ticks in processes:
        while pid in killed and start_ticks(pid) == ticks and time.monotonic() < deadline:
            time.sleep(0.005)
    return killed
