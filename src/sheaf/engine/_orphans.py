"""Stopping the jobs a killed engine left running, before a resumed run starts their nodes again.

Policy
------
* A node that was in flight when the engine died runs again on resume, so its old process must
  not keep running beside the new attempt (and repeat its side effects).  Two ways find it:
* **The attempt token.**  Every job's environment carries ``SHEAF_ATTEMPT=<run id>/<node>/<attempt>``
  (:func:`attempt_token`), set before the process exists.  The run id is journaled in the ``B``
  records and is the same for every run of one journal, so on resume :func:`stop_run_processes`
  scans ``/proc/*/environ`` (readable for the processes of the same user) for this run's token
  and kills each carrier's process group -- the job leads its own group, and an aggregator's
  children inherit the token, so the whole tree is found, even a child whose leader has exited
  or that moved to a group of its own.  This covers a job started in the last instant before a
  ``kill -9``, before its pid could be journaled.  No engine runs this DAG while the resuming one
  holds the run lock, so every carrier of the token is an orphan.
* **The journaled pid.**  The backend reports each attempt's process as it starts (``Started``:
  pid and start time); the loop journals it as a ``P`` record.  A journaled process still alive
  *with the journaled start time* is the old job (a reused pid has another start time) and its
  process group is killed too: this finds a job that cleared its environment.
* **Adopted attempts are spared.**  A backend whose jobs outlive the engine (a batch system) may
  take the killed engine's in-flight attempts over (``Backend.adopt``); their tokens are passed as
  ``spare``, so their processes -- visible here when the batch system's node is this machine --
  go on, and the resumed engine takes their results instead of running them again.
* Then the resume waits (up to 5 s) until the killed processes are gone (or zombies), so nothing
  of the old attempt runs once the node is submitted again.  Linux only (``/proc``).
* **A nested run's guard.**  A SUBDAG's run is a job of its parent engine, and a job is cancelled
  with SIGKILL of its process group -- which would leave the nested run's own jobs (each in a
  process group of its own) running with nobody to stop them.  So a nested run starts a guard
  (:func:`start_guard`): a small process in a session of its own, without the run's tokens, that
  waits for the engine to die and then stops the processes carrying the nested run's token that
  started before it died.  It exits once the engine is gone, however that happened.
"""

from __future__ import annotations

__all__ = ["ATTEMPT_VARIABLE", "attempt_token", "guard_main", "start_guard", "stop_orphans",
           "stop_run_processes"]

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterable

from sheaf._proc import pids, start_ticks

ATTEMPT_VARIABLE = "SHEAF_ATTEMPT"
_GONE_WAIT = 5.0


def attempt_token(run_id: str, node: str, attempt: int) -> str:
    return f"{run_id}/{node}/{attempt}"


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or another user's
        return b""


def run_processes(run_id: str, spare: Collection[str] = ()) -> list[tuple[int, int]]:
    """``(pid, start_ticks)`` of every live process whose environment carries a token of ``run_id``
    other than the tokens in ``spare`` (attempts a backend adopted)."""
    if not run_id:
        return []
    needle = f"{ATTEMPT_VARIABLE}={run_id}/".encode()
    me = os.getpid()
    found = []
    for pid in pids():
        if pid == me:
            continue
        env = _environ(pid)
        if (env.startswith(needle) or b"\0" + needle in env) and not (spare and _token(env) in spare):
            ticks = start_ticks(pid)
            if ticks is not None:
                found.append((pid, ticks))
    return found


def _token(env: bytes) -> str:
    start = env.find(f"{ATTEMPT_VARIABLE}=".encode())
    if start > 0 and env[start - 1] != 0:
        start = env.find(f"\0{ATTEMPT_VARIABLE}=".encode()) + 1
    value = env[start + len(ATTEMPT_VARIABLE) + 1:]
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")


def _signal(pid: int, group: int, signum: int) -> None:
    # the group first, in one call: killing a job's child alone would let the job's shell run on
    # (and write its side effect) before the group's signal arrived
    if group > 1 and group != os.getpgrp():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)  # also one that left the job's group


def stop_orphans(processes: Iterable[tuple[int, int]]) -> list[int]:
    """Kill the ``(pid, start_ticks)`` still alive as recorded, with their process groups; returns
    the pids killed, once they are gone (or after 5 s).

    Every target is stopped (SIGSTOP) before any is killed, so no part of a job's tree sees another
    part die and acts on it (an aggregator recording a task as failed, a shell running its next
    line)."""
    targets = []
    for pid, ticks in processes:
        if pid > 1 and start_ticks(pid) == ticks:
            try:
                targets.append((pid, ticks, os.getpgid(pid)))
            except ProcessLookupError:
                continue
    for signum in (signal.SIGSTOP, signal.SIGKILL):
        for pid, _, group in targets:
            _signal(pid, group, signum)
    deadline = time.monotonic() + _GONE_WAIT
    for pid, ticks, _ in targets:
        while start_ticks(pid) == ticks and time.monotonic() < deadline:
            time.sleep(0.005)
    return [pid for pid, _, _ in targets]


def stop_run_processes(run_id: str, journaled: Iterable[tuple[int, int]] = (),
                       spare: Collection[str] = ()) -> list[int]:
    """Stop every process of the run ``run_id``: its token's carriers and the journaled pids, except
    the carriers of the tokens in ``spare``."""
    return stop_orphans({*run_processes(run_id, spare), *journaled})


_GUARDS: list[subprocess.Popen[bytes]] = []  # held, so that no handle is collected while it runs


def start_guard(run_id: str) -> None:
    """Start this (nested) engine's guard; see the module docstring."""
    me = os.getpid()
    env = {key: value for key, value in os.environ.items() if key != ATTEMPT_VARIABLE}
    boot = "import sys; from sheaf.engine._orphans import guard_main; guard_main(sys.argv[1:])"
    _GUARDS.append(subprocess.Popen(
        [sys.executable, "-c", boot, str(me), str(start_ticks(me)), run_id], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True))


def _ticks_now() -> int:
    with open("/proc/uptime", encoding="ascii") as handle:
        return int(float(handle.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def guard_main(argv: list[str], interval: float = 0.2) -> None:
    """The guard: wait until engine ``argv[0]`` (started at ``argv[1]`` ticks) is gone, then stop
    the carriers of run ``argv[2]``'s token that started before that (a later engine's are its own)."""
    pid, ticks, run_id = int(argv[0]), int(argv[1]), argv[2]
    while start_ticks(pid) == ticks:
        time.sleep(interval)
    died = _ticks_now()
    stop_orphans([(p, t) for p, t in run_processes(run_id) if t <= died])
