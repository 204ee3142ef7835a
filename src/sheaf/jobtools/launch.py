"""``python -m sheaf.jobtools.launch``: what pegasus-kickstart does around a task, that sheaf needs.

Command line (written by ``sheaf.codegen._launch``; an argv list, never a shell)::

    launch.py [-i FILE] [-o FILE] [-e FILE] [-k SECONDS [-K SECONDS]] -- EXECUTABLE ARGS...

- ``-i``/``-o``/``-e``: the task's stdin, stdout and stderr files, as kickstart's.  Pegasus runs each
  task of a cluster under kickstart, so a clustered task gets the files its job names, not the
  cluster's streams.  stdin is opened for reading; stdout and stderr are created or truncated.
- ``-k T``/``-K K``: kickstart's timeouts, from the pegasus ``checkpoint.time`` profile (``T`` =
  checkpoint.time minutes) and ``maxwalltime`` (``K`` = half of what is left of it after ``T``; 5 s
  without it, kickstart's default).  The task gets SIGTERM ``T`` seconds after it started -- its cue
  to write its checkpoint file -- and SIGKILL ``K`` seconds later if it is still running.  A task that
  was sent SIGTERM has timed out and fails (its own non-zero status, 128 + the signal that ended it,
  or 1 when it exited 0), so DAGMan's retry runs it again; the checkpoint file it wrote stays in the
  working directory, which every attempt shares, for that retry to read.

Without timeouts the launcher opens the files and replaces itself with the task (``execvp``), so
the exit status and signals are the task's own.  With them it stays as the task's parent, forwarding
SIGTERM/SIGINT/SIGHUP to it.  A file that cannot be opened, or a program that cannot be run, is a
failed task (exit 1 or 127, the reason on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

KILL_AFTER_DEFAULT_S = 5.0  # kickstart's -K default
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_FLAGS = {"stdin": os.O_RDONLY, "stdout": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
          "stderr": os.O_WRONLY | os.O_CREAT | os.O_TRUNC}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sheaf launch")
    for flag, name in (("-i", "stdin"), ("-o", "stdout"), ("-e", "stderr")):
        parser.add_argument(flag, dest=name)
    parser.add_argument("-k", dest="term_after", type=float)
    parser.add_argument("-K", dest="kill_after", type=float, default=KILL_AFTER_DEFAULT_S)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("sheaf launch: no program after --", file=sys.stderr)
        return 2
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        if getattr(args, name) is not None and not _redirect(fd, name, getattr(args, name)):
            return 1
    if args.term_after is None or args.term_after <= 0:  # kickstart: -k 0 is no timeout
        return _exec(command)
    return run_child(command, args.term_after, args.kill_after)


def _redirect(fd: int, name: str, path: str) -> bool:
    try:
        opened = os.open(path, _FLAGS[name], 0o644)
    except OSError as exc:
        print(f"sheaf launch: cannot open {path} as the task's {name}: {exc.strerror}", file=sys.stderr)
        return False
    os.dup2(opened, fd)
    os.close(opened)
    return True


def _exec(command: Sequence[str]) -> int:
    try:
        os.execvp(command[0], list(command))
    except OSError as exc:
        os.write(2, f"sheaf launch: cannot run {command[0]}: {exc.strerror}\n".encode())
    return 127


def run_child(command: Sequence[str], term_after: float | None = None,
              kill_after: float = KILL_AFTER_DEFAULT_S, *, prog: str = "sheaf launch") -> int:
    """Run ``command`` as a child, forwarding the stop signals to it, and return its exit status
    (a signal n as 128 + n); with ``term_after``, SIGTERM after that many seconds and SIGKILL
    ``kill_after`` seconds later, and then the task has timed out (module docstring)."""
    try:
        child = subprocess.Popen(list(command))
    except OSError as exc:
        print(f"{prog}: cannot run {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        status = _wait(child, term_after)
        timed_out = status is None
        if status is None:
            print(f"{prog}: checkpoint time {term_after:g}s reached: SIGTERM to {command[0]}",
                  file=sys.stderr, flush=True)
            child.send_signal(signal.SIGTERM)
            status = _wait(child, kill_after)
        if status is None:
            print(f"{prog}: still running {kill_after:g}s after SIGTERM: SIGKILL", file=sys.stderr,
                  flush=True)
            child.kill()
            status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    code = 128 - status if status < 0 else status
    return (code or 1) if timed_out else code


def _wait(child: subprocess.Popen[bytes], seconds: float | None) -> int | None:
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


if __name__ == "__main__":
    sys.exit(main())
