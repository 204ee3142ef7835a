"""What the kernel says of a process in ``/proc/<pid>/stat`` (and its command line in ``cmdline``): one
reader for every part of sheaf that asks.

A pid is reused once its process is reaped, so a process is named by its pid *and* its start time
(field 22, clock ticks since boot): a record of both never matches a later process.  A zombie (ended, not
yet reaped) or a dead task holds nothing -- no locks, no files, no work -- and counts as gone.

The job guard runs as an isolated script (``sheaf.backends._jobguard``), so this module imports nothing
but the standard library.
"""

from __future__ import annotations

import os

__all__ = ["alive", "command_line", "pids", "start_ticks", "stat_fields"]

_GONE = (b"Z", b"X")  # zombie, dead


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name -- the state first (field 3), then ppid,
    process group, ... -- or None when there is no such process."""
    try:  # os-level calls: this runs once per job start, and io.open costs more
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    end = data.rfind(b")")
    return data[end + 2:].split() if end >= 0 else None


def start_ticks(pid: int) -> int | None:
    """``pid``'s start time in clock ticks since boot; None when it is gone or a zombie."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] in _GONE:
        return None
    return int(fields[19])


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended; True where ``/proc`` cannot tell (another
    user's process, no ``/proc``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = stat_fields(pid)
    return fields is None or not fields or fields[0] not in _GONE


def pids() -> list[int]:
    """Every process ``/proc`` lists (empty without ``/proc``)."""
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def command_line(pid: int) -> list[bytes] | None:
    """``pid``'s arguments, its program first; None when it is gone or cannot be read (another
    user's), an empty list for a kernel thread."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data.split(b"\0")[:-1] if data else []
