"""PRE and POST scripts, run by the engine on the submit host (as DAGMan does), outside the pool.

A script is exec'd directly (argv, never a shell) in its node's directory with the engine's
environment; its output is appended to ``<journal dir>/<dag>.scripts.log``.  ``poll()`` never
blocks: the loop calls it every turn and waits on the backend with a short timeout while scripts run
(maxpre/maxpost keep their number small).  DEFER timers live here too, on the injected clock.
"""

from __future__ import annotations

__all__ = ["ScriptRunner"]

import heapq
import subprocess
from collections.abc import Callable
from typing import IO, Literal

from sheaf.engine._state import DeferElapsed, ScriptExited

Kind = Literal["PRE", "POST"]


class ScriptRunner:
    def __init__(self, log_path: str, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - open for the whole run
        self._running: dict[tuple[str, Kind], tuple[subprocess.Popen[bytes], int]] = {}
        self._timers: list[tuple[float, str, Kind, int]] = []

    def start(self, node: str, kind: Kind, attempt: int, argv: tuple[str, ...],
              cwd: str) -> ScriptExited | None:
        """Start a script; returns an immediate failure event when it cannot be started."""
        try:
            proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=self._log,
                                    stderr=subprocess.STDOUT, close_fds=True)
        except OSError as exc:
            self._log.write(f"sheaf: {kind} script of {node} could not start: {exc}\n".encode())
            return ScriptExited(node, kind, attempt, 127)
        self._running[(node, kind)] = (proc, attempt)
        return None

    def kill(self, node: str, kind: Kind) -> None:
        entry = self._running.pop((node, kind), None)
        if entry is not None:
            entry[0].kill()
            entry[0].wait()

    def defer(self, node: str, kind: Kind, attempt: int, seconds: float) -> None:
        heapq.heappush(self._timers, (self.clock() + seconds, node, kind, attempt))

    def poll(self) -> list[ScriptExited | DeferElapsed]:
        events: list[ScriptExited | DeferElapsed] = []
        for key, (proc, attempt) in list(self._running.items()):
            code = proc.poll()
            if code is None:
                continue
            del self._running[key]
            events.append(ScriptExited(key[0], key[1], attempt, code if code >= 0 else None,
                                       -code if code < 0 else None))
        now = self.clock()
        while self._timers and self._timers[0][0] <= now:
            _, node, kind, attempt = heapq.heappop(self._timers)
            events.append(DeferElapsed(node, kind, attempt))
        return events

    def busy(self) -> bool:
        return bool(self._running or self._timers)

    def next_timeout(self) -> float | None:
        if self._running:
            return 0.01
        if self._timers:
            return max(0.0, self._timers[0][0] - self.clock())
        return None

    def close(self) -> None:
        for node, kind in list(self._running):
            self.kill(node, kind)
        self._log.close()
