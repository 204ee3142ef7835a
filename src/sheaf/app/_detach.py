"""Runs started in the background, and stopped, as pegasus-run and pegasus-remove do.

``start(DIR)`` starts ``sheaf run DIR`` as its own session (``setsid``: it survives the terminal and
the shell that started it), stdin from ``/dev/null``, stdout and stderr appended to
``DIR/sheaf-run.log`` (pegasus-run's ``dagman.out``), and records its pid in ``DIR/sheaf-run.pid``.
``stop(DIR)`` sends that process SIGTERM -- the engine then cancels the running jobs and runs the
FINAL node, as DAGMan does on ``condor_rm`` -- but only while that pid still runs ``sheaf run DIR``
(its ``/proc/<pid>/cmdline``), so a pid the system has since given to another process is never
signalled.  A run started otherwise (``sheaf run DIR`` or ``sheaf run FILE.dag`` in a terminal) is
found by its engine's run lock, which the engine holds while it runs and in which it wrote its pid;
DIR may then be the DAG file itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from sheaf._proc import command_line
from sheaf.errors import UsageError

LOG = "sheaf-run.log"
PID = "sheaf-run.pid"


def sheaf_argv() -> list[str]:
    """The sheaf program beside the running interpreter (the venv), else this interpreter running it."""
    beside = os.path.join(os.path.dirname(sys.executable), "sheaf")
    if os.access(beside, os.X_OK):
        return [beside]
    return [sys.executable, "-c", "import sys; from sheaf.cli import main; sys.argv[0] = 'sheaf'; main()"]


def start(directory: str) -> int:
    """Start ``sheaf run DIR`` detached (module docstring); returns its pid."""
    directory = os.path.abspath(directory)
    with open(os.path.join(directory, LOG), "ab") as log:
        proc = subprocess.Popen([*sheaf_argv(), "run", directory], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=directory, start_new_session=True)
    with open(os.path.join(directory, PID), "w", encoding="ascii") as out:
        out.write(f"{proc.pid}\n")
    return proc.pid


def running(directory: str) -> int | None:
    """The pid of the ``sheaf run`` of DIR (a directory, or a DAG file) while it runs, else None."""
    try:
        with open(os.path.join(directory, PID), encoding="ascii") as file:
            pid = int(file.read().strip())
    except (OSError, ValueError):
        return _lock_holder(directory)
    return pid if _runs_in(pid, os.path.abspath(directory)) else _lock_holder(directory)


def _lock_holder(target: str) -> int | None:
    """The engine holding the run lock of the DAG of ``target`` (module docstring)."""
    from sheaf.engine import find_dag, lock_holder, state_paths

    where, name = os.path.split(os.path.abspath(target)) if os.path.isfile(target) else (target, None)
    try:
        dag = find_dag(where, name)
    except UsageError:
        return None
    pid = lock_holder(state_paths(dag)["lock"])
    argv = command_line(pid) if pid is not None else None
    return pid if argv is not None and b"run" in argv else None


def stop(directory: str) -> int:
    """SIGTERM to the engine running in DIR (module docstring); returns its pid."""
    pid = running(directory)
    if pid is None:
        raise UsageError(f"{directory}: no workflow is running there")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        raise UsageError(f"{directory}: no workflow is running there (pid {pid} is gone)") from None
    return pid


def _runs_in(pid: int, directory: str) -> bool:
    argv = command_line(pid)
    return argv is not None and b"run" in argv and os.fsencode(directory) in argv
