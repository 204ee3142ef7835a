"""The job guard: kills the process groups of a process's jobs as soon as that process is gone.

Policy
    A job runs in a session of its own, so it outlives the process that started it (the engine, or a
    Dask worker running the local backend for a task).  Left alone after a ``kill -9`` of that
    process, it would go on and finish unrecorded -- and the resumed run would run it again: a task
    done twice.  So every process that starts jobs through the local backend has one guard: a small
    process, started with the first job (:func:`start`), that kills every job still listed when
    its owner is gone -- closed, ``os._exit`` (what a Dask worker does when its nanny dies: no
    ``atexit`` runs) or SIGKILL alike -- and then exits.  A resumed engine's orphan scan
    (``engine._orphans``) remains the backstop for a guard killed too.

The table: a start or an end costs no system call
    The live jobs are listed in a table in shared memory (a ``memfd`` mapped ``MAP_SHARED`` by the
    owner, and by the guard only once the owner is gone): a start stores an entry, an end clears
    it, both plain stores of one aligned 64-bit word, where a message down a pipe would cost two
    writes and a wake-up of the guard per job.
    The guard meanwhile sleeps in one ``read`` of its stdin, a pipe whose write end only the owner
    holds (close-on-exec: no job or script inherits it); end of file means the owner is gone.

    Layout, 64-bit words in native order: words ``[_C_BASE, _PY_BASE)`` belong to the C threads of
    ``_cspawn`` (any number of spawners of the process claim a free word there with a
    compare-and-swap), words ``[_PY_BASE, _WORDS)`` to this module (claimed under a lock: the
    Python spawn path, :func:`add`/:func:`remove`).  An entry is 0 when free, else
    ``pid | ticks << 24``: the group id (the leader's pid: pids are below 2^22) and the boot-time
    clock in clock ticks, rounded up, read just after the spawn returned -- at or after the
    process's start time as ``/proc/PID/stat`` gives it.  A full region (2^15 jobs alive at once in
    one process) is not a limit: the overflow goes down the pipe as ``+PGID``/``-PGID`` lines, the
    old protocol, which the guard still reads (:func:`guard`).

Race analysis
    - Visibility: the guard reads the table only after end of file, that is after every thread of
      the owner is gone.  A store made before the death is in the shared page and seen; none can be
      made after.  An entry is one aligned 8-byte store (an atomic store in C; in CPython a
      ``memoryview`` item of format ``Q`` is one store too): never seen half written.
    - A job started just before the death: the C threads' child (``_cspawn``, started with
      ``vfork``) stores its own entry once it leads its group and before its ``execve``.  It holds
      the guard's pipe until that ``execve`` closes it (close-on-exec), so the guard's end of file
      comes after the store, and a child that may still exec is always in the table.  The Python
      spawn path (no extension) stores the entry right after ``os.posix_spawn`` returns; there a
      window remains between the child's ``clone`` and that store (its ``execve``).  A ``sheaf run``
      job in that window carries the run's token: the run's own guard
      (``engine._orphans.start_guard``) stops it once the engine is gone, and the resume's scan stops
      it.
    - An end: the entry is cleared after what is left of the group was SIGKILLed and *before*
      ``wait4`` reaps the leader, while the zombie leader still holds the pid, so the group id
      cannot have been reused by then.  A death after the clear: nothing of the job is left alive.
    - A death between the group's kill and the clear (or while the job ran): the guard finds the
      entry, but the dead owner's zombie is reaped by init meanwhile, and its pid could be reused
      before the guard signals.  So the guard skips an entry whose pid is now a process started
      after the recorded time (``/proc/PID/stat``'s start time, in the same ticks): that is someone
      else's.  A group still having members of the old job keeps its id reserved (Linux reuses no
      pid in use as a group id), so a leaderless group with the id is still the job's.
    - Fork: a forked child maps its parent's table too; :func:`start` gives it a table and a guard
      of its own (the owner's pid is checked), so its jobs never land in the parent's table.  The
      parent's pipe, inherited by the fork, delays the parent guard's end of file until the child
      exits too (as before).

The guard is this file run as a script by an isolated interpreter (``python -I -S``: no site, and of
sheaf only the package root and ``sheaf._proc``), in a session of its own so that a signal to its
parent's process group does not stop it first, and ignoring SIGINT (^C at a terminal reaches the
parent, whose pipe then tells the guard).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import IO

if not __package__:  # the guard, run as a script by an isolated interpreter: sheaf's root is not on its path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from sheaf._proc import start_ticks

__all__ = ["add", "guard", "listed", "remove", "shared", "start", "tell", "victims"]

# the layout, as _cspawn.c's GUARD_* constants (which refuses a table smaller than _WORDS words)
_WORDS = 1 << 16         # the table: 512 KiB of address space, touched only where jobs are listed
_C_BASE = 8              # the C threads' region starts here (word 0..7: reserved)
_PY_BASE = 1 << 15       # this module's region
_PID_BITS = 24
_TICK = os.sysconf("SC_CLK_TCK")

_lock = threading.Lock()
_pipe: list[IO[bytes]] = []  # the write end of this process's guard's stdin, once started
_owner: list[int] = []       # the pid that started it (a forked child must start its own)
_fd = [-1]                   # its descriptor: one unbuffered write(2) a line (< PIPE_BUF: atomic)
_table: list[int] = [-1]     # the memfd of the table
_words: list[memoryview] = []  # the table as 64-bit words (this process's mapping)
_free: list[int] = []        # free words of the Python region, below _top
_top = [_PY_BASE]            # the Python region's words from here on were never used
_slots: dict[int, int] = {}  # pid -> its word in the Python region
_told: set[int] = set()      # pids told down the pipe instead (a full region)


def guard(lines: Iterable[str] | None = None) -> set[int]:
    """Follow ``+PGID``/``-PGID`` lines (stdin by default) until end of file; the groups listed then."""
    groups: set[int] = set()
    for line in lines if lines is not None else sys.stdin:
        text = line.strip()
        if len(text) > 1 and text[1:].isdigit():
            (groups.add if text[0] == "+" else groups.discard)(int(text[1:]))
    return groups


def entry(pid: int) -> int:
    """A table entry for a group whose leader ``pid`` was spawned just now."""
    ticks = -(-time.clock_gettime_ns(time.CLOCK_BOOTTIME) * _TICK // 1_000_000_000)  # rounded up
    return pid | ticks << _PID_BITS


def listed(words: memoryview) -> list[tuple[int, int]]:
    """The table's entries as (pid, ticks)."""
    mask = (1 << _PID_BITS) - 1
    return [(value & mask, value >> _PID_BITS) for value in words[_C_BASE:] if value]


def victims(entries: Iterable[tuple[int, int]]) -> list[int]:
    """The groups to kill: every entry's, except where its pid is now a process started after the
    entry was made (a reused pid: see "Race analysis")."""
    out = []
    for pid, ticks in entries:
        started = start_ticks(pid)
        if started is None or started <= ticks:
            out.append(pid)
    return out


def start() -> None:
    """Start this process's guard and table now (else they start with the first job)."""
    with _lock:
        _start_locked()


def _start_locked() -> None:
    if _pipe and _owner[0] == os.getpid():
        return
    table = os.memfd_create("sheaf-jobguard", os.MFD_CLOEXEC)
    try:
        os.ftruncate(table, _WORDS * 8)  # a memfd counts against the file size limit (ulimit -f)
    except OSError as exc:
        os.close(table)
        from sheaf.errors import StorageError  # here: the guard script imports no more of sheaf than it needs

        raise StorageError.of(exc, f"the job guard's table (an in-memory file of {_WORDS * 8 // 1024} KiB)",
                              "no job was started and the run stopped; run `sheaf run` again to resume once "
                              "files of that size can be written") from None
    proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), str(table)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, pass_fds=(table,))
    assert proc.stdin is not None
    words = memoryview(mmap.mmap(table, _WORDS * 8)).cast("Q")
    if _table[0] >= 0:  # a forked child: the parent's table and pipe are not ours to use
        with contextlib.suppress(OSError):
            os.close(_table[0])
        _free.clear()
        _slots.clear()
        _told.clear()
    _pipe[:], _owner[:], _fd[0], _table[0], _words[:], _top[0] = (
        [proc.stdin], [os.getpid()], proc.stdin.fileno(), table, [words], _PY_BASE)


def shared() -> tuple[int, int]:
    """This process's table (a memfd) and the write end of its guard's stdin (the guard started
    first if need be), for the C threads that list their jobs themselves (``_cspawn``)."""
    with _lock:
        _start_locked()
        return _table[0], _fd[0]


def add(pid: int) -> None:
    """List the group of ``pid``, a job just spawned by this thread (``remove`` before reaping it)."""
    value = entry(pid)
    with _lock:
        _start_locked()
        if _free:
            word = _free.pop()
        elif _top[0] < _WORDS:
            word, _top[0] = _top[0], _top[0] + 1
        else:
            _told.add(pid)
            tell(f"+{pid}")
            return
        _words[0][word] = value
        _slots[pid] = word


def remove(pid: int) -> None:
    """Unlist the group of ``pid``: its leftovers are killed and it is about to be reaped."""
    with _lock:
        word = _slots.pop(pid, None)
        if word is not None:
            _words[0][word] = 0
            _free.append(word)
        elif pid in _told:
            _told.discard(pid)
            tell(f"-{pid}")


def tell(line: str) -> None:
    """Tell the guard ``+PGID`` or ``-PGID`` down the pipe (the table's overflow)."""
    with contextlib.suppress(BrokenPipeError):  # a guard killed from outside: the orphan scan remains
        os.write(_fd[0], line.encode() + b"\n")


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    told = guard()  # blocks until the owner is gone (no line comes unless its table was full)
    words = memoryview(mmap.mmap(int(sys.argv[1]), _WORDS * 8, access=mmap.ACCESS_READ)).cast("Q")
    for pgid in [*victims(listed(words)), *told]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
