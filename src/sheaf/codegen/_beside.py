"""Work done beside the writer: a forked child writes the files nothing else in the plan depends on
(``plan.json``, the cache file) while the parent writes the DAG and the submit files, on the
machine's other core.

When it forks: on Linux, in a process running one thread, for work worth a fork (the caller says).
A fork beside other threads could copy a lock another thread holds mid-update into a child that
never sees it released, so with threads -- or elsewhere than Linux, or when the fork itself fails --
the same function runs in the parent instead, when the caller joins: the files are the same either
way.

The child shares the parent's memory copy-on-write and leaves with ``os._exit``: neither the
parent's buffered files (the DAG being written) nor its exit handlers run twice.  An exception in
the child comes back on a pipe, pickled (or as its text when it cannot be), and is raised by
:meth:`Beside.join`; a parent that fails first kills and reaps the child (:meth:`Beside.cancel`)
before it removes the directory both were writing into.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Beside", "BesideError", "can_fork", "start_beside"]


class BesideError(RuntimeError):
    """The child failed with an exception that could not be carried back whole."""


@dataclass(slots=True)
class Beside:
    """The work started by :func:`start_beside`: in a child (``pid``) or still to run (``work``)."""

    work: Callable[[], None] | None
    pid: int = 0
    pipe: int = -1

    def join(self) -> None:
        """Wait for the work; raise what it raised."""
        if self.work is not None:
            work, self.work = self.work, None
            work()
            return
        if not self.pid:
            return
        with os.fdopen(self.pipe, "rb") as reader:
            report = reader.read()
        self.pipe = -1
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if report:
            raise _unpickled(report)
        if status:
            raise BesideError(f"the child writing beside the plan ended with wait status {status}")

    def cancel(self) -> None:
        """Stop the work: a child is killed and reaped, work not started is dropped."""
        self.work = None
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0


def can_fork() -> bool:
    """Whether a fork is safe here (module docstring): Linux, and no Python thread but this one.  A
    library's idle native workers (numpy's BLAS pool) are not counted: they handle a fork themselves."""
    return sys.platform == "linux" and threading.active_count() == 1


def start_beside(work: Callable[[], None], fork: bool) -> Beside:
    """``work`` started in a forked child when ``fork`` and :func:`can_fork`, else kept for ``join``."""
    if not (fork and can_fork()):
        return Beside(work)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no memory or no process left for a child: the work is done here instead
        os.close(read_end)
        os.close(write_end)
        return Beside(work)
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(work, write_end)
    os.close(write_end)
    return Beside(None, pid, read_end)


def _child(work: Callable[[], None], pipe: int) -> None:
    code = 0
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):  # not the parent's handlers: a signal ends the child
            signal.signal(signum, signal.SIG_DFL)
        work()
    except BaseException as exc:  # every failure goes back to the parent  # noqa: BLE001
        code = 1
        try:
            report = pickle.dumps(exc)
            pickle.loads(report)  # an exception whose class cannot be rebuilt goes as text
        except Exception:  # noqa: BLE001
            report = pickle.dumps(BesideError("".join(traceback.format_exception(exc)).rstrip()))
        with contextlib.suppress(OSError):
            view = memoryview(report)
            while view:
                view = view[os.write(pipe, view):]
    finally:
        os._exit(code)


def _unpickled(report: bytes) -> BaseException:
    try:
        exc = pickle.loads(report)
    except Exception:  # noqa: BLE001
        return BesideError("the child writing beside the plan failed and its report is unreadable")
    return exc if isinstance(exc, BaseException) else BesideError(repr(exc))
