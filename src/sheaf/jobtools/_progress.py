"""pegasus-cluster's progress report (``-R file`` / ``SEQEXEC_PROGRESS_REPORT``): one line per event.

The file is shared by every clustered job of a workflow, so each line is written with one
``write()`` on an ``O_APPEND`` descriptor under an advisory ``lockf`` lock (a lock that cannot be had
in ten tries, a few seconds in all, is given up, and the line is written anyway, as pegasus-cluster
does)::

    ISO HOST:PID 0 0/0 START ARGS ### sysname=S machine=M release=R       -- the cluster job starts
    ISO HOST:PID N EXIT/SIG DURATION ARGS ### utime=... nivcsw=...        -- task N finished
    ISO HOST:PID setup|cleanup EXIT/SIG DURATION ARGS ### utime=...       -- the extra tasks

ARGS is the task's argv without a leading pegasus-kickstart and its options; kickstart's ``-i``,
``-o`` and ``-e`` files are shown as ``< in``, ``> out`` and ``2> err``.
"""

from __future__ import annotations

import fcntl
import os
import resource
import time
from collections.abc import Sequence

from sheaf.jobtools._records import KS_WITH_VALUE, find_application, iso_time

_LINE_MAX = 4096
_REDIRECTS = {"i": " < ", "o": " > ", "e": " 2> "}


def _identifier() -> str:
    return f"{os.uname().nodename.split('.')[0]}:{os.getpid()}"


def _kickstart_files(argv: Sequence[str], start: int) -> dict[str, str]:
    """kickstart's -i/-o/-e files among its options argv[1:start] (a leading ! or ^ is a mode flag)."""
    files: dict[str, str] = {}
    i = 1
    while i < start:
        arg = argv[i]
        takes_value = arg[1] in KS_WITH_VALUE
        value = (argv[i + 1] if len(arg) == 2 else arg[2:]) if takes_value else ""
        if arg[1] in _REDIRECTS:
            files[arg[1]] = value[1:] if value[:1] in "!^" else value
        i += 2 if takes_value and len(arg) == 2 else 1
    return files


def _arguments(argv: Sequence[str]) -> str:
    start = find_application(argv)
    files = _kickstart_files(argv, start) if start else {}
    text = "".join(" " + arg for arg in argv[start:])
    if len(text) > _LINE_MAX:
        text = text[:_LINE_MAX] + " ..."
    return text + "".join(_REDIRECTS[key] + files[key] for key in "ioe" if key in files)


def _usage(use: resource.struct_rusage) -> str:
    return (f" ### utime={use.ru_utime:.3f} stime={use.ru_stime:.3f} minflt={use.ru_minflt} "
            f"majflt={use.ru_majflt} maxrss={use.ru_maxrss} idrss={use.ru_idrss} "
            f"inblock={use.ru_inblock} oublock={use.ru_oublock} nswap={use.ru_nswap} "
            f"nsignals={use.ru_nsignals} nvcws={use.ru_nvcsw} nivcsw={use.ru_nivcsw}")


class ProgressReport:
    """An open progress file; ``None`` path means no report."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        self._ident = _identifier()

    def started(self, when: float, argv: Sequence[str]) -> None:
        uname = os.uname()
        self._write(f"{iso_time(when)} {self._ident} 0 0/0 START{_arguments(argv)} ### "
                    f"sysname={uname.sysname} machine={uname.machine} release={uname.release}\n")

    def finished(self, what: int | str, when: float, duration: float, status: int,
                 argv: Sequence[str], use: resource.struct_rusage | None) -> None:
        usage = _usage(use) if use is not None else ""
        self._write(f"{iso_time(when)} {self._ident} {what} {status >> 8}/{status & 127} "
                    f"{duration:.3f}{_arguments(argv)}{usage}\n")

    def _write(self, line: str) -> None:
        locked = self._lock()
        try:
            os.write(self._fd, line.encode("utf-8", "surrogateescape"))
        finally:
            if locked:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def _lock(self) -> bool:
        backoff = 0.05
        for _ in range(10):
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError:
                time.sleep(backoff)
                backoff += 0.05
        return False

    def close(self) -> None:
        os.close(self._fd)
