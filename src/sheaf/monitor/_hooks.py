"""Shell hooks (Pegasus notifications), run by the loader beside a run as pegasus-monitord runs them.

Where they come from: plan.json's ``hooks`` (the workflow's) and each job's ``hooks`` (its tasks'),
written by ``sheaf plan`` from the 5.0 YAML's ``hooks: shell:`` and DAX 3's ``<invoke when>``, in
the conditions of Pegasus's notifications file: ``start``, ``on_error``, ``on_success``,
``at_end``, ``all``.

When they run (pegasus-monitord's matching, ``Pegasus/monitoring/notifications.py``):

* workflow: ``start`` and ``all`` when an engine run begins (``PEGASUS_EVENT=start``); at its end
  ``at_end`` and ``all`` (``PEGASUS_EVENT=at_end``), ``on_success`` when it succeeded, ``on_error``
  when not, with ``PEGASUS_STATUS`` the run's exit code;
* job: ``start``/``all`` when its job starts executing; at its end (the POST script's end when the
  node has one, else the job's) ``at_end``/``all`` (as ``at_end``), ``on_success`` or ``on_error``,
  with ``PEGASUS_STATUS``.

Each hook gets ``PEGASUS_EVENT``, ``PEGASUS_EVENT_TIMESTAMP`` (epoch seconds),
``PEGASUS_EVENT_TIMESTAMP_ISO``, ``PEGASUS_SUBMIT_DIR``, ``PEGASUS_WFID`` (label-index),
``PEGASUS_JOBID`` (the workflow's uuid, or the job's name), ``PEGASUS_STDOUT`` (jobstate.log for the
workflow -- sheaf has no dagman.out -- the job's stdout for a job), ``PEGASUS_STDERR`` (jobs) and
``PEGASUS_STATUS`` (end events).  The command is split as a shell would split it (``shlex``) and
run as an argv list, never through a shell, in the submit directory, at most ``MAX_RUNNING`` at
once (pegasus-monitord's default).  Its output, and a line when it fails or cannot start, go to
``<dag>.hooks.log``: a failing hook is logged, never fails the workflow.  Hooks run only beside a
live run, never when a view rebuilds a database (pegasus-monitord's replay mode runs none either).
"""

from __future__ import annotations

__all__ = ["HookRunner", "Hooks"]

import os
import shlex
import subprocess
import time
from datetime import UTC, datetime

MAX_RUNNING = 10
_JOB_END = {"JOB_SUCCESS": True, "JOB_FAILURE": False, "POST_SCRIPT_SUCCESS": True,
            "POST_SCRIPT_FAILURE": False}

Hooks = tuple[tuple[str, str], ...]  # (when, command)


def _matches(hooks: Hooks, start: bool, ok: bool) -> list[tuple[str, str]]:
    """``(event, command)`` of the hooks a start (or an end that succeeded or not) fires."""
    out = []
    for when, cmd in hooks:
        if start and when in ("start", "all"):
            out.append(("start", cmd))
        elif not start and (when in ("at_end", "all") or when == ("on_success" if ok else "on_error")):
            out.append(("at_end" if when == "all" else when, cmd))
    return out


class HookRunner:
    def __init__(self, directory: str, log_path: str, wf_uuid: str, wf_id: str,
                 workflow_hooks: Hooks) -> None:
        self.directory = directory
        self.log_path = log_path
        self.wf_uuid = wf_uuid
        self.wf_id = wf_id
        self.workflow_hooks = workflow_hooks
        self._running: list[tuple[subprocess.Popen[bytes], str]] = []

    def workflow(self, start: bool, when: float, status: int | None = None) -> None:
        ok = status == 0
        for event, cmd in _matches(self.workflow_hooks, start, ok):
            env = {"PEGASUS_JOBID": self.wf_uuid,
                   "PEGASUS_STDOUT": os.path.join(self.directory, "jobstate.log")}
            self._run(cmd, event, when, env, None if start else status)

    def job(self, node: str, kind: str, hooks: Hooks, when: float, status: int | None, has_post: bool,
            stdout: str | None, stderr: str | None) -> None:
        if kind == "EXECUTE":
            fired = _matches(hooks, True, True)
        elif kind in _JOB_END and (kind.startswith("POST") or not has_post):
            fired = _matches(hooks, False, _JOB_END[kind])
        else:
            return
        for event, cmd in fired:
            env = {"PEGASUS_JOBID": node, "PEGASUS_STDOUT": stdout or "", "PEGASUS_STDERR": stderr or ""}
            self._run(cmd, event, when, env, None if event == "start" else status)

    def _run(self, cmd: str, event: str, when: float, extra: dict[str, str], status: int | None) -> None:
        iso = datetime.fromtimestamp(when, UTC).astimezone().isoformat()
        env = {**os.environ, **extra, "PEGASUS_EVENT": event, "PEGASUS_EVENT_TIMESTAMP": str(int(when)),
               "PEGASUS_EVENT_TIMESTAMP_ISO": iso, "PEGASUS_SUBMIT_DIR": self.directory,
               "PEGASUS_WFID": self.wf_id}
        if status is not None:
            env["PEGASUS_STATUS"] = str(status)
        while len(self._running) >= MAX_RUNNING:
            self.reap(block=True)
        label = f"{extra['PEGASUS_JOBID']} {event}: {cmd}"
        with open(self.log_path, "ab") as log:
            log.write(f"{_stamp()} hook {label}\n".encode())
            log.flush()
            try:
                argv = shlex.split(cmd)
                proc = subprocess.Popen(argv, cwd=self.directory, env=env, stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            except (OSError, ValueError) as exc:
                log.write(f"{_stamp()} hook failed to start ({exc}): {label}\n".encode())
                return
        self._running.append((proc, label))
        self.reap()

    def reap(self, block: bool = False) -> None:
        """Log the hooks that ended (with ``block``, wait for one first)."""
        if block and self._running:
            self._running[0][0].wait()
        still = []
        for proc, label in self._running:
            if proc.poll() is None:
                still.append((proc, label))
            elif proc.returncode != 0:
                self._log(f"hook failed (exit status {proc.returncode}): {label}")
        self._running = still

    def wait(self, timeout: float = 60.0) -> None:
        """Wait for the running hooks (at most ``timeout`` seconds; the rest are left running)."""
        deadline = time.monotonic() + timeout
        while self._running and time.monotonic() < deadline:
            time.sleep(0.05)
            self.reap()

    def _log(self, line: str) -> None:
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"{_stamp()} {line}\n")


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
