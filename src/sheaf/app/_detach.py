"""Runs started in the background, and stopped, as pegasus-run and pegasus-remove do.

``start(DIR)`` starts ``sheaf run DIR`` as its own session (``setsid``: it survives the terminal and
the shell that started it), stdin from ``/dev/null``, stdout and stderr appended to
``DIR/sheaf-run.log`` (pegasus-run's ``dagman.out``), and records its pid in ``DIR/sheaf-run.pid``.
``stop(DIR)`` sends that process SIGTERM -- the engine then cancels the running jobs and runs the
FINAL node, as DAGMan does on ``condor_rm`` -- but only while that pid still runs ``sheaf run DIR``
(its ``/proc/<pid>/cmdline``), so a pid the system has since given to another process is never
signalled.  A run started otherwise (``sheaf run DIR`` or ``sheaf run FILE.dag`` in a terminal, or
:func:`sheaf.app.run` in a Python process) is found by its engine's run lock, which the engine holds
while it runs and in which it wrote its pid (and which it empties as it lets go); DIR may then be the
DAG file itself.  A run in this very process (``sheaf.app.run`` in another thread) is stopped without
a signal: its engine is asked to stop (``sheaf.engine.stop_in_process``) and does as on SIGTERM.  A run
in another process is sent SIGTERM, which that process's engine handles when it runs in its main thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from sheaf._fields import check_path
from sheaf._proc import alive, command_line
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
    """Start ``sheaf run DIR`` detached (module docstring); returns its pid.  A DIR that is no
    directory, holds no single DAG, or in which a workflow runs already is a ``UsageError``, with
    nothing written or started."""
    from sheaf.engine import find_dag

    if not os.path.isdir(directory):
        raise UsageError(f"{directory}: no such directory" if not os.path.exists(directory)
                         else f"{directory}: not a directory (a submit directory is expected)")
    find_dag(directory)
    busy = running(directory)
    if busy is not None:
        raise UsageError(f"{directory}: a workflow is already running there (pid {busy})")
    directory = os.path.abspath(directory)
    with open(os.path.join(directory, LOG), "ab") as log:
        proc = subprocess.Popen([*sheaf_argv(), "run", directory], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=directory, start_new_session=True)
    with open(os.path.join(directory, PID), "w", encoding="ascii") as out:
        out.write(f"{proc.pid}\n")
    return proc.pid


def running(directory: str) -> int | None:
    """The pid of the process running the workflow of DIR (a directory, or a DAG file) -- a ``sheaf run``
    or a Python process in ``sheaf.app.run``, this process's own pid for a run in one of its threads --
    while it runs, else None."""
    check_path("directory", directory)
    try:
        with open(os.path.join(directory, PID), encoding="ascii") as file:
            pid = int(file.read().strip())
    except (OSError, ValueError):
        return _lock_holder(directory)
    return pid if _runs_in(pid, os.path.abspath(directory)) else _lock_holder(directory)


def _lock_of(target: str) -> str | None:
    """The run lock of the DAG of ``target`` (a directory, or a DAG file), None when it has no DAG."""
    from sheaf.engine import find_dag, state_paths

    where, name = os.path.split(os.path.abspath(target)) if os.path.isfile(target) else (target, None)
    try:
        return state_paths(find_dag(where, name))["lock"]
    except UsageError:
        return None


def _lock_holder(target: str) -> int | None:
    """The engine holding the run lock of the DAG of ``target`` (module docstring)."""
    from sheaf.engine import lock_holder

    lock = _lock_of(target)
    pid = lock_holder(lock) if lock is not None else None
    return pid if pid is not None and alive(pid) else None


def stop(directory: str) -> int:
    """Stop the engine running in DIR as SIGTERM does (module docstring); returns its pid."""
    from sheaf.engine import stop_in_process

    check_path("directory", directory)
    pid = running(directory)
    if pid is None:
        raise UsageError(f"{directory}: no workflow is running there")
    lock = _lock_of(directory)
    if pid == os.getpid() and lock is not None and stop_in_process(lock, "stop requested (sheaf.app.stop)"):
        return pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        raise UsageError(f"{directory}: no workflow is running there (pid {pid} is gone)") from None
    return pid


def _runs_in(pid: int, directory: str) -> bool:
    argv = command_line(pid)
    return argv is not None and b"run" in argv and os.fsencode(directory) in argv
