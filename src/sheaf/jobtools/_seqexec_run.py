"""Running the tasks of a seqexec cluster: pegasus-cluster's execution policy.

Policy (pegasus-cluster's, which pegasus-monitord and pegasus-exitcode rely on):

- Tasks start in file order, at most ``cpus`` at once.  Each is exec'd directly (``posix_spawn``;
  ``argv[0]`` looked up in ``PATH`` when it has no ``/``), with stdin from ``/dev/null`` and the
  cluster job's stdout/stderr, in the cluster's process group.  Nothing goes through a shell.
- A task fails when it dies on a signal or exits with a code outside {0} + ``-S`` codes.  A task
  whose executable cannot be exec'd is a failed task with status 32512 (exit 127, what
  pegasus-cluster's child reports), pid -1: the cluster goes on.
- Default mode runs every task; ``-f`` (fail hard) starts nothing new after the first failure
  but waits for the tasks already running; ``-e`` always exits 0.  Otherwise the exit status is 5
  if any task failed, else 0; ``stat`` of the summary is "fail" exactly when the exit status is not 0.
- Every finished task gets one ``[cluster-task ...]`` line the moment it is reaped, then the cluster
  ends with one ``[cluster-summary ...]`` line.  Records are single ``write()`` calls on fd 1, so
  they never interleave mid-line with the tasks' own output.
- SIGTERM, SIGINT and SIGHUP are forwarded to the running tasks; nothing new starts; once they are
  reaped the summary is written and the cluster dies of the same signal (its parent sees what it
  sent).  ``SEQEXEC_SETUP``/``SEQEXEC_CLEANUP`` commands run before/after the tasks and count as
  ``extra``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from sheaf.jobtools import _records

# Imported at start-up of every cluster job: only modules the interpreter has already loaded (see
# seqexec.py); dataclasses, typing, shlex and sheaf.formats would cost more than 50 tasks' spawns.
TYPE_CHECKING = False  # mypy honours the name
if TYPE_CHECKING:
    import signal
else:  # the C module behind signal, without its enum wrappers (enum is a fifth of start-up)
    import _signal as signal
if TYPE_CHECKING:
    import resource
    from collections.abc import Sequence
    from types import FrameType
    from typing import Protocol

    from sheaf.jobtools._progress import ProgressReport

    class TaskLike(Protocol):
        """What a run needs of a task (``sheaf.formats._seqexec_in.SeqexecTask`` is one)."""

        @property
        def argv(self) -> tuple[str, ...]: ...
        @property
        def line(self) -> int: ...

EXEC_FAILED = 127 << 8  # the wait status of a child whose execve failed in pegasus-cluster
FAILURE_EXIT = 5
_ENOENT, _EINVAL = 2, 22  # Linux's numbers (errno is not imported at start-up)
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class SeqexecRunTask:
    """One command of a ``.in`` file as the quick reader gives it: argv and its 1-based line."""

    __slots__ = ("argv", "line")

    def __init__(self, argv: tuple[str, ...], line: int) -> None:
        self.argv = argv
        self.line = line


class Settings:
    """How a run behaves (the options of ``sheaf-cluster``)."""

    __slots__ = ("always_succeed", "app", "argv", "cpus", "fail_hard", "progress", "success_codes")

    def __init__(self, cpus: int = 1, fail_hard: bool = False, always_succeed: bool = False,
                 success_codes: frozenset[int] = frozenset({0}), app: str = "sheaf-cluster",
                 argv: tuple[str, ...] = (), progress: ProgressReport | None = None) -> None:
        self.cpus = cpus
        self.fail_hard = fail_hard
        self.always_succeed = always_succeed
        self.success_codes = success_codes
        self.app = app
        self.argv = argv
        self.progress = progress


class _Child:
    __slots__ = ("argv", "count", "line", "start")

    def __init__(self, count: int, line: int, argv: tuple[str, ...], start: float) -> None:
        self.count = count
        self.line = line
        self.argv = argv
        self.start = start


class _State:
    __slots__ = ("extra", "failed", "running", "started", "stop_signal")

    def __init__(self) -> None:
        self.running: dict[int, _Child] = {}
        self.started = 0
        self.failed = 0
        self.extra = 0
        self.stop_signal: int | None = None


class _Spawner:
    """posix_spawn with PATH lookup cached per name, stdin from /dev/null, default signals."""

    def __init__(self) -> None:
        self._paths: dict[str, str] = {}
        self._actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        self._env = dict(os.environ)  # iterating os.environ decodes every entry again at each spawn
        self._sigdef = [s for s in (signal.SIGPIPE, getattr(signal, "SIGXFSZ", None), *_FORWARDED) if s]

    def resolve(self, argv: Sequence[str]) -> tuple[str, ...]:
        name = argv[0]
        if "/" not in name and name:
            if name not in self._paths:
                self._paths[name] = _which(name) or name
            return (self._paths[name], *argv[1:])
        return tuple(argv)

    def spawn(self, argv: Sequence[str]) -> int:
        try:
            return os.posix_spawn(argv[0], list(argv), self._env, file_actions=self._actions,
                                  setsigdef=self._sigdef)
        except ValueError as exc:
            # An empty program name or a NUL in an argument: os.posix_spawn refuses it before any
            # exec, which would fail as well; so it is a task that could not start, not a crash.
            raise OSError(_ENOENT if not argv[0] else _EINVAL, str(exc)) from None


def _which(name: str) -> str | None:
    """The first executable ``name`` on PATH (shutil.which, without importing shutil at start-up)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


def _is_failure(status: int, settings: Settings) -> bool:
    return not (os.WIFEXITED(status) and os.WEXITSTATUS(status) in settings.success_codes)


def _emit(text: str) -> None:
    data = text.encode("utf-8", "surrogateescape")
    while data:
        data = data[os.write(1, data):]


class SeqexecRun:
    """One execution of a list of tasks; ``run()`` returns the exit status."""

    def __init__(self, tasks: Sequence[TaskLike], total_lines: int, settings: Settings) -> None:
        self._tasks = tasks
        self._lines = total_lines
        self._settings = settings
        self._state = _State()
        self._spawner = _Spawner()

    def run(self) -> int:
        start = time.time()
        if self._settings.progress is not None:
            self._settings.progress.started(start, self._settings.argv)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _FORWARDED}
        try:
            self._extra("setup", os.environ.get("SEQEXEC_SETUP"))
            lines = self._run_tasks()
            self._drain(0)
            self._extra("cleanup", os.environ.get("SEQEXEC_CLEANUP"))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self._finish(start, lines)

    def _run_tasks(self) -> int:
        for task in self._tasks:
            self._drain(self._settings.cpus - 1)
            if self._state.stop_signal is not None or (self._settings.fail_hard and self._state.failed):
                return task.line
            self._start(task)
        return self._lines

    def _start(self, task: TaskLike) -> None:
        state = self._state
        argv = self._spawner.resolve(task.argv)
        state.started += 1
        begin = time.time()
        try:
            pid = self._spawner.spawn(argv)
        except OSError as exc:
            print(f"{os.path.basename(self._settings.app)}: exec {argv[0]}: {exc.errno}: {exc.strerror}",
                  file=sys.stderr, flush=True)
            self._report(_Child(state.started, task.line, argv, begin), EXEC_FAILED, -1, None)
            return
        state.running[pid] = _Child(state.started, task.line, argv, begin)
        if state.stop_signal is not None:  # the signal came between spawn and bookkeeping
            os.kill(pid, state.stop_signal)

    def _drain(self, keep: int) -> None:
        """Reap children until at most ``keep`` are running."""
        while len(self._state.running) > keep:
            pid, status, use = os.wait4(-1, 0)
            child = self._state.running.pop(pid, None)
            if child is not None:
                self._report(child, status, pid, use)

    def _report(self, child: _Child, status: int, pid: int, use: resource.struct_rusage | None) -> None:
        final = time.time()
        if _is_failure(status, self._settings):
            self._state.failed += 1
        app = _records.application(child.argv)
        _emit(_records.seqexec_task(child.count, child.start, final - child.start, status, child.line,
                                    pid, app))
        if self._settings.progress is not None:
            self._settings.progress.finished(child.count, final, final - child.start, status,
                                             child.argv, use)

    def _extra(self, what: str, command: str | None) -> None:
        if command is None:
            return
        self._state.extra += 1
        import shlex  # only for SEQEXEC_SETUP/SEQEXEC_CLEANUP (shlex imports re)

        try:
            argv = self._spawner.resolve(shlex.split(command))
        except (ValueError, IndexError):
            print(f"{os.path.basename(self._settings.app)}: unparsable {what} string, ignoring",
                  file=sys.stderr)
            return
        begin, status, pid = time.time(), EXEC_FAILED, -1
        try:
            pid = self._spawner.spawn(argv)
            status = os.waitpid(pid, 0)[1]
        except OSError as exc:
            print(f"{os.path.basename(self._settings.app)}: {what}: {exc}", file=sys.stderr, flush=True)
        final = time.time()
        _emit(_records.seqexec_task(what, begin, final - begin, status, None, pid,
                                    _records.application(argv)))
        if self._settings.progress is not None:
            self._settings.progress.finished(what, begin, final - begin, status, argv, None)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._state.stop_signal = signum
        for pid in list(self._state.running):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _finish(self, start: float, lines: int) -> int:
        state, settings = self._state, self._settings
        code = FAILURE_EXIT if state.failed and not settings.always_succeed else 0
        stopped = state.stop_signal is not None
        _emit(_records.seqexec_summary(code != 0 or stopped, lines, state.started, state.failed,
                                       state.extra, time.time() - start, start, os.getpid(),
                                       settings.app))
        if state.stop_signal is not None:
            signal.signal(state.stop_signal, signal.SIG_DFL)
            os.kill(os.getpid(), state.stop_signal)
        return code
