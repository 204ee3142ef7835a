"""PRE and POST scripts, run by the engine on the submit host (as DAGMan does), outside the pool.

A script is exec'd directly (argv, never a shell) in its node's directory with the engine's
environment; its output is appended to ``<journal dir>/<dag>.scripts.log``.  With ``SCRIPT DEBUG
file type`` the chosen streams (STDOUT, STDERR or ALL) are captured instead, as DAGMan captures them
in pipes: to a spool file beside the scripts log while the script runs, then appended to the DEBUG
file in one write when it exits, after DAGMan's banner line (``*** Node=... Type=... ExitCode=...
Completion=... Cmd='...'``) - so scripts sharing one DEBUG file never interleave.  The stream not
chosen goes to the scripts log (DAGMan sends it to /dev/null).  ``poll()`` never
blocks: the loop calls it every turn and waits on the backend with a short timeout while scripts run
(maxpre/maxpost keep their number small).  DEFER timers live here too, on the injected clock.
"""

from __future__ import annotations

__all__ = ["ScriptRunner"]

import heapq
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from typing import IO, Literal

from sheaf.engine._events import DeferElapsed, ScriptExited

Kind = Literal["PRE", "POST", "HOLD"]


class _Debug:
    """One running script's SCRIPT DEBUG capture: the spool file and where it ends up."""

    def __init__(self, spool: str, target: str, argv: tuple[str, ...]) -> None:
        self.spool, self.target, self.argv = spool, target, argv
        self.file: IO[bytes] = open(spool, "w+b")  # noqa: SIM115 - closed in finish()

    def finish(self, node: str, kind: Kind, code: int) -> None:
        """Append DAGMan's banner and the captured output to the DEBUG file, in one write."""
        self.file.seek(0)
        output = self.file.read()
        self.file.close()
        os.unlink(self.spool)
        what = f"Signal={-code}" if code < 0 else f"ExitCode={code}"
        banner = (f"*** Node={node} Type={kind} {what} Completion={int(time.time())} "
                  f"Cmd='{shlex.join(self.argv)}'\n").encode()
        with open(self.target, "ab") as out:
            out.write(banner + output)


class ScriptRunner:
    def __init__(self, log_path: str, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - open for the whole run
        self._running: dict[tuple[str, Kind], tuple[subprocess.Popen[bytes], int]] = {}
        self._debug: dict[tuple[str, Kind], _Debug] = {}
        self._spool_dir = os.path.dirname(os.path.abspath(log_path))
        self._timers: list[tuple[float, str, Literal["PRE", "POST"], int]] = []

    def start(self, node: str, kind: Kind, attempt: int, argv: tuple[str, ...],
              cwd: str, debug: tuple[str, str] | None = None) -> ScriptExited | None:
        """Start a script; returns an immediate failure event when it cannot be started.  A HOLD
        script is not started again while the node's previous one still runs."""
        if (node, kind) in self._running:
            return None
        stdout: IO[bytes] | int = self._log
        stderr: IO[bytes] | int = subprocess.STDOUT
        capture = None
        if debug is not None:
            spool = os.path.join(self._spool_dir, f".debug-{os.getpid()}-{len(self._debug)}-{node}.{kind}")
            capture = _Debug(spool, debug[0], argv)
            stdout = capture.file if debug[1] in ("STDOUT", "ALL") else self._log
            stderr = capture.file if debug[1] in ("STDERR", "ALL") else self._log
        try:
            proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=stderr, close_fds=True)
        except OSError as exc:  # DAGMan's ScriptQ reaps a script it could not spawn with status 1
            self.note(f"{kind} script of {node} could not start: {exc}")
            if capture is not None:
                capture.finish(node, kind, 1)
            return ScriptExited(node, kind, attempt, 1, error=str(exc))
        self._running[(node, kind)] = (proc, attempt)
        if capture is not None:
            self._debug[(node, kind)] = capture
        return None

    def note(self, text: str) -> None:
        """A line of the engine's own in the scripts log."""
        self._log.write(f"sheaf: {text}\n".encode())

    def kill(self, node: str, kind: Kind) -> None:
        entry = self._running.pop((node, kind), None)
        if entry is not None:
            entry[0].kill()
            entry[0].wait()
        capture = self._debug.pop((node, kind), None)
        if capture is not None:
            capture.finish(node, kind, -9)

    def defer(self, node: str, kind: Literal["PRE", "POST"], attempt: int, seconds: float) -> None:
        heapq.heappush(self._timers, (self.clock() + seconds, node, kind, attempt))

    def poll(self) -> list[ScriptExited | DeferElapsed]:
        events: list[ScriptExited | DeferElapsed] = []
        for key, (proc, attempt) in list(self._running.items()):
            code = proc.poll()
            if code is None:
                continue
            del self._running[key]
            capture = self._debug.pop(key, None)
            if capture is not None:
                capture.finish(key[0], key[1], code)
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
