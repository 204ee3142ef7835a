"""A Dask worker's guard: kills the process groups of its jobs when the worker process is gone.

``python -m sheaf.backends._dask_guard`` reads lines ``+PGID`` (a job started) and ``-PGID`` (it
ended) on stdin, a pipe whose other end only the worker holds.  End of file means the worker is gone
-- closed, ``os._exit`` (what a Dask worker does when its nanny dies: no ``atexit`` runs) or SIGKILL
alike -- and the guard sends SIGKILL to every group still listed, then exits.  So an attempt never
goes on, and finishes unrecorded, after the worker (and the engine that owned the cluster) died.
The guard leads its own session, so a signal to the worker's group does not stop it first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def guard(lines: list[str] | None = None) -> set[int]:
    """Follow the worker's lines until end of file; the groups still running then."""
    groups: set[int] = set()
    for line in lines if lines is not None else sys.stdin:
        text = line.strip()
        if len(text) > 1 and text[1:].isdigit():
            (groups.add if text[0] == "+" else groups.discard)(int(text[1:]))
    return groups


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C at a terminal reaches the worker; its pipe tells us
    for pgid in guard():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
