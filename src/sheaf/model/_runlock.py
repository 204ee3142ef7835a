"""Where a run keeps its state, and the run lock: the one convention planning and running share.

``sheaf run`` keeps a DAG's journal and lock in ``<DAG's directory>/.sheaf/`` (``<dag>.journal``,
``<dag>.lock``) and holds an exclusive ``flock`` on the lock file for as long as it runs.
``sheaf plan --deferred`` (a sub-workflow replanned on retry) must not replace a directory in which
a run is going on, so it takes the same locks (:class:`RunLocks`) for as long as it swaps the
directories: a lock held by anyone else means a live engine, and the plan is refused.  ``flock``
locks vanish with their holder, so a killed engine never leaves a stale lock behind.

Defined here, at the start of the data's path, because ``codegen`` (planning) and ``engine``
(running) both need it and neither may import the other's side.
"""

from __future__ import annotations

__all__ = ["STATE_DIR", "RunLocks", "lock_path", "state_dir"]

import fcntl
import os
from typing import Self

STATE_DIR = ".sheaf"


def state_dir(directory: str) -> str:
    return os.path.join(directory, STATE_DIR)


def lock_path(dag_path: str) -> str:
    return os.path.join(state_dir(os.path.dirname(dag_path)), os.path.basename(dag_path) + ".lock")


class RunLocks:
    """Exclusive locks on every run lock of one directory; ``held`` lists the ones another process
    holds (those were not taken).  Release with :meth:`release` (or use as a context manager)."""

    def __init__(self, directory: str) -> None:
        self.fds: list[int] = []
        self.held: list[str] = []
        try:
            names = sorted(n for n in os.listdir(state_dir(directory)) if n.endswith(".lock"))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        for name in names:
            path = os.path.join(state_dir(directory), name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue  # gone meanwhile, or not a file
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self.held.append(path)
                continue
            self.fds.append(fd)

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)  # closing the descriptor drops its flock
        self.fds = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

