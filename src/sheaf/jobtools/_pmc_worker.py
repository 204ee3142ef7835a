"""A PMC worker: registers its host's resources, then runs one task at a time for the master.

Per task (as PMC's worker does):

- The task is exec'd (never a shell; a bare name is looked up in PATH) in its own session, stdin
  from /dev/null, with ``PMC_TASK``, ``PMC_MEMORY``, ``PMC_CPUS``, ``PMC_RANK``, ``PMC_HOST_RANK``
  (and ``PMC_AFFINITY``) set.  It dies with its worker (``PR_SET_PDEATHSIG``, set by util-linux's
  ``setpriv`` -- a Python pre-exec hook would make every task's fork much dearer): a task whose
  worker was killed is run again elsewhere, and must not live on beside its second run.
- stdout/stderr go to this worker's ``DAG.out.RANK``/``DAG.err.RANK`` (appended; the master merges
  them into its own at the end) or, with ``--per-task-stdio``, to ``NAME.out.NNN``/``NAME.err.NNN``
  beside the DAG, NNN counting attempts.  After the task a ``[cluster-task ...]`` record is appended
  to its stdout.  An executable that cannot be exec'd gives status 256 and a line on its stderr.
- Pipe forwards (``-f VAR=FILE``) are read while the task runs; file forwards (``-F SRC=DEST``) are
  read after it (at most 1 MB each, then deleted).  Their data goes back with the result, only
  if the task succeeded; the master appends it to the destinations before it journals the task done.
- While a task runs the worker sends a heartbeat every ``heartbeat`` seconds and obeys ``abort``
  (SIGTERM to the task's process group, SIGKILL 2 s later).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from sheaf.jobtools import _records
from sheaf.jobtools._pmc_transport import LocalWorker, WorkerLink

_PR_SET_PDEATHSIG = 1
_FORWARD_LIMIT = 1024 * 1024


def host_memory_mb() -> int:
    return max(1, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))


def host_cpus() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def clear_affinity() -> None:
    with contextlib.suppress(OSError):  # a cpuset we may not leave: keep what we were given
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


@dataclass(slots=True)
class _Worker:
    link: WorkerLink
    config: dict[str, Any]
    host_rank: int = 0
    hostname: str = field(default_factory=socket.gethostname)
    out: int = -1
    err: int = -1


_SETPRIV = shutil.which("setpriv")  # util-linux: sets the parent-death signal, then execs


def _child_setup(strict_memory: int, bindings: tuple[int, ...]) -> Any:
    """A pre-exec hook, only when needed: it makes the fork much dearer than a plain spawn."""
    if not strict_memory and not bindings and _SETPRIV:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def setup() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if strict_memory > 0:
            limit = strict_memory * 1024 * 1024
            for which in (resource.RLIMIT_DATA, resource.RLIMIT_AS):
                resource.setrlimit(which, (limit, limit))
        if bindings:
            os.sched_setaffinity(0, bindings)
    return setup


@functools.lru_cache(maxsize=256)
def _on_path(name: str) -> str | None:
    return shutil.which(name)


def _resolve(argv0: str) -> str | None:
    """The executable to exec (PATH lookup for a bare name), or None if there is none."""
    if "/" not in argv0:
        return _on_path(argv0)
    return argv0 if os.path.isfile(argv0) and os.access(argv0, os.X_OK) else None


def _stdio(worker: _Worker, name: str) -> tuple[int, int]:
    if not worker.config["per_task_stdio"]:
        return worker.out, worker.err
    base = os.path.join(os.path.dirname(worker.config["dag"]) or ".", name)
    seq = 0
    while os.path.exists(f"{base}.out.{seq:03d}"):
        seq += 1
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    return os.open(f"{base}.out.{seq:03d}", flags, 0o644), os.open(f"{base}.err.{seq:03d}", flags, 0o644)


def _environment(worker: _Worker, spec: dict[str, Any], pipes: dict[str, tuple[int, int]]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PMC_TASK=spec["name"], PMC_MEMORY=str(spec["memory"]), PMC_CPUS=str(spec["cpus"]),
               PMC_RANK=str(worker.link.rank), PMC_HOST_RANK=str(worker.host_rank))
    if spec["bindings"]:
        env["PMC_AFFINITY"] = ",".join(map(str, spec["bindings"]))
    for var, (_, write_end) in pipes.items():
        env[var] = str(write_end)
    return env


@dataclass(slots=True)
class _Running:
    proc: subprocess.Popen[bytes]
    pipes: dict[int, bytearray]  # read end -> data
    open_pipes: set[int] = field(default_factory=set)
    aborted: float = 0.0


def _wait(worker: _Worker, run: _Running) -> int:
    """Wait for the task; heartbeat, read pipe forwards, obey abort.  Returns the raw wait status."""
    try:
        pidfd: int | None = os.pidfd_open(run.proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    link_fd = worker.link.fileno()
    beat = worker.config["heartbeat"]
    next_beat = time.monotonic() + beat
    try:
        while run.proc.poll() is None:
            fds = [fd for fd in (pidfd, link_fd) if fd is not None] + list(run.open_pipes)
            step = 0.05 if pidfd is None or link_fd is None else max(0.0, next_beat - time.monotonic())
            readable, _, _ = select.select(fds, [], [], step)
            _read_pipes(run, [fd for fd in readable if fd in run.open_pipes])
            _check_master(worker, run, link_fd is None or link_fd in readable)
            if time.monotonic() >= next_beat:
                worker.link.send(("alive", {}))
                next_beat = time.monotonic() + beat
            if run.aborted and time.monotonic() - run.aborted > 2:
                _kill(run.proc, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    _drain_pipes(run)
    code = run.proc.returncode
    return code << 8 if code >= 0 else -code


def _check_master(worker: _Worker, run: _Running, look: bool) -> None:
    if not look:
        return
    message = worker.link.poll(0)
    if message is not None and message[0] in ("abort", "shutdown") and not run.aborted:
        run.aborted = time.monotonic()
        _kill(run.proc, signal.SIGTERM)


def _read_pipes(run: _Running, fds: list[int]) -> None:
    for fd in fds:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if chunk:
            run.pipes[fd] += chunk
        else:
            run.open_pipes.discard(fd)  # end of file: stop watching it


def _drain_pipes(run: _Running) -> None:
    """After the task exits: take what is buffered, without waiting for writers it left behind."""
    for fd in list(run.open_pipes):
        while fd in run.open_pipes and select.select([fd], [], [], 0)[0]:
            _read_pipes(run, [fd])


def _kill(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _file_forwards(spec: dict[str, Any]) -> tuple[list[tuple[str, bytes]], bool]:
    data: list[tuple[str, bytes]] = []
    for src, dest in spec["file_forwards"]:
        try:
            if os.path.getsize(src) > _FORWARD_LIMIT:
                return data, False
            with open(src, "rb") as stream:
                data.append((dest, stream.read()))
        except FileNotFoundError:
            continue  # a task may succeed without producing the file
        except OSError:
            return data, False
    return data, True


def _execute(worker: _Worker, spec: dict[str, Any], out: int, err: int,
             ) -> tuple[int, list[tuple[str, bytes]]]:
    """Run the task to its end: (raw wait status, forwarded data if it succeeded)."""
    argv = list(spec["argv"])
    executable = _resolve(argv[0])
    if executable is None:  # as PMC's child reports a failed exec: a line on stderr, exit 1
        os.write(err, f"Unable to exec command {argv[0]} for task {spec['name']}: not found or not "
                 "executable\n".encode())
        return 256, []
    setup = _child_setup(worker.config["strict_limits"] and spec["memory"], spec["bindings"])
    command = [executable, *argv[1:]]
    if setup is None:  # the task must die with its worker: it is re-run elsewhere
        command = [_SETPRIV or "setpriv", "--pdeathsig", "KILL", "--", *command]
    pipes = {var: os.pipe() for var, _ in spec["pipe_forwards"]}
    try:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=_environment(worker, spec, pipes),
            pass_fds=[w for _, w in pipes.values()], start_new_session=True,
            preexec_fn=setup)  # noqa: PLW1509 - no threads of our own; three system calls
    except OSError as exc:
        os.write(err, f"Unable to exec command {argv[0]} for task {spec['name']}: {exc.strerror}\n".encode())
        proc = None
    for _, write_end in pipes.values():
        os.close(write_end)  # the task has its copies
    if proc is None:
        for read_end, _ in pipes.values():
            os.close(read_end)
        return 256, []
    reads = [r for r, _ in pipes.values()]
    run = _Running(proc, {r: bytearray() for r in reads}, set(reads))
    try:
        status = _wait(worker, run)
    finally:
        for fd in reads:
            os.close(fd)
    if status != 0:
        return status, []
    dests = dict(spec["pipe_forwards"])
    forwards = [(dests[var], bytes(run.pipes[r])) for var, (r, _) in pipes.items() if run.pipes[r]]
    files, ok = _file_forwards(spec)
    return (0, forwards + files) if ok else (256, [])


def run_task(worker: _Worker, spec: dict[str, Any]) -> dict[str, Any]:
    out, err = _stdio(worker, spec["name"])
    start = time.time()
    status, forwards = _execute(worker, spec, out, err)
    duration = time.time() - start
    record = _records.pmc_task(spec["pegasus_id"], spec["name"], start, duration, status, spec["argv"][0],
                               worker.hostname, worker.link.rank, spec["cpus"], spec["memory"])
    os.write(out, record.encode("utf-8", "surrogateescape"))
    for src, _ in spec["file_forwards"]:
        with contextlib.suppress(OSError):
            os.unlink(src)
    if worker.config["per_task_stdio"]:
        os.close(out)
        os.close(err)
    return {"name": spec["name"], "status": status, "start": start, "runtime": duration,
            "forwards": forwards}


def _open_shared_stdio(worker: _Worker) -> None:
    if worker.config["per_task_stdio"]:
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    dag, rank = worker.config["dag"], worker.link.rank
    worker.out = os.open(f"{dag}.out.{rank}", flags, 0o644)
    worker.err = os.open(f"{dag}.err.{rank}", flags, 0o644)


def serve(link: WorkerLink) -> int:
    """The worker's whole life: configure, register, run tasks until shutdown."""
    message = link.poll(3600.0)
    if message is None or message[0] != "config":
        return 0  # the master gave up before configuring us (bad usage, say)
    worker = _Worker(link, message[1])
    if not worker.config["keep_affinity"]:
        clear_affinity()
    master = worker.config.get("master")
    if master is not None and hasattr(link, "master"):
        link.master = (master[0], master[1])
    link.send(("register", {"hostname": worker.hostname, "pid": os.getpid(),
                            "memory": worker.config["host_memory"] or host_memory_mb(),
                            "cpus": worker.config["host_cpus"] or host_cpus()}))
    _open_shared_stdio(worker)
    while True:
        message = link.poll(1.0)
        if message is None:
            if not link.master_alive():
                return 1
            continue
        kind, payload = message
        if kind == "hostrank":
            worker.host_rank = payload["hostrank"]
        elif kind == "run":
            link.send(("result", run_task(worker, payload)))
        elif kind == "shutdown":
            if payload.get("abandon") and hasattr(link, "abandon"):
                link.abandon = True
            return 0


def main() -> None:
    """``python -m sheaf.jobtools._pmc_worker FD RANK``: a local worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the master decides; ^C reaches it too
    try:
        code = serve(LocalWorker(int(sys.argv[1]), int(sys.argv[2])))
    except (EOFError, OSError):
        code = 1  # the master is gone
    sys.exit(code)


if __name__ == "__main__":
    main()
