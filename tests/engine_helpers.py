"""Helpers shared by the engine tests: hand-written DAG directories and a scripted fake backend.

A module on pytest's ``pythonpath`` (``tests``), imported by its name (``from engine_helpers import
...``), so no test depends on which ``conftest`` pytest imported first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from sheaf.engine import Exited, Held, Launch

SUBMIT = """\
######################################################################
# PEGASUS WMS GENERATED SUBMIT FILE
######################################################################
universe = vanilla
executable = {exe}
arguments = {args}
initialdir = {dir}
output = $(node).out
error = $(node).err
log = wf.log
getenv = false
request_memory = {memory}
+pegasus_site = "condorpool"
+DAGNodeName = "$(node)"
priority = 10
notification = NEVER
queue
"""


class FakeBackend:
    """Records launches; ``script(node, [codes...])`` decides each attempt's exit code (default 0).

    Attempts finish in submission order, ``per_wait`` at a time, so tests see queueing.
    """

    def __init__(self, per_wait: int = 1000) -> None:
        self.launches: list[Launch] = []
        self.queue: list[Launch] = []
        self.codes: dict[str, list[int | None]] = {}
        self.held: set[str] = set()
        self.cancelled: list[str] = []
        self.per_wait = per_wait
        self.closed = False
        self.hook: Callable[[Launch], None] | None = None

    def script(self, node: str, codes: list[int | None]) -> None:
        self.codes[node] = list(codes)

    def submit(self, launch: Launch) -> None:
        self.launches.append(launch)
        self.queue.append(launch)

    def wait(self, timeout: float | None) -> list[Exited | Held]:
        batch, self.queue = self.queue[: self.per_wait], self.queue[self.per_wait:]
        out: list[Exited | Held] = []
        for launch in batch:
            if self.hook:
                self.hook(launch)
            if launch.node in self.held:
                out.append(Held(launch.key, "no slot could ever match"))
                continue
            codes = self.codes.get(launch.node, [])
            code = codes.pop(0) if codes else 0
            now = time.time()
            if code is not None and code < 0:
                out.append(Exited(launch.key, None, -code, "killed", now, now + 1.0))
            else:
                out.append(Exited(launch.key, code, None, None, now, now + 1.0, "slot1@fake"))
        return out

    def cancel(self, key: str) -> None:
        self.cancelled.append(key)
        self.queue = [x for x in self.queue if x.key != key]

    def idle(self) -> int:
        return len(self.queue)

    def running(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True

    def nodes(self) -> list[str]:
        return [x.node for x in self.launches]


def write_dag(directory: Path, body: str, name: str = "wf", jobs: dict[str, dict[str, str]] | None = None,
              exe: str = "/bin/true", args: str = "", jobstate_log: str | None = "jobstate.log") -> Path:
    """Write ``<name>.dag`` plus one ``<job>.sub`` per JOB line (pegasus-plan's layout, which declares
    ``JOBSTATE_LOG jobstate.log`` after the body unless the body names one or ``jobstate_log`` is None)."""
    directory.mkdir(parents=True, exist_ok=True)
    dag = directory / f"{name}.dag"
    declared = "JOBSTATE_LOG" in body.upper() or jobstate_log is None
    dag.write_text(body if declared else f"{body.rstrip(chr(10))}\nJOBSTATE_LOG {jobstate_log}\n")
    for line in body.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].upper() in ("JOB", "FINAL"):
            sub = directory / words[2]
            if sub.exists():
                continue
            opts = {"exe": exe, "args": args, "dir": str(directory), "memory": "1GB"}
            opts.update((jobs or {}).get(words[1], {}))
            sub.write_text(SUBMIT.format(**opts))
    return dag


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    os.chmod(path, 0o755)
    return path
