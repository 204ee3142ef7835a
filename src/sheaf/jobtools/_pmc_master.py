"""The PMC master's loop: the only part that touches workers, files, clocks and signals.

Order of a run: configure every worker, collect their registrations (resources per host), refuse
a DAG some task of which fits no host, then loop -- assign what the scheduler says, take events
(results, heartbeats, lost workers), watch wall time and signals -- until the scheduler is done.
Then write the ``[cluster-summary ...]`` record, merge the workers' task stdio into the master's
stdout/stderr (or ``-o``/``-e``), shut the workers down.

Journal first: a task's forwarded I/O is appended to its destinations, then ``DONE name`` is
appended to the rescue log; the records of one batch of results are fdatasync'ed together, before
the loop starts anything again (so before any child of those tasks runs).  The
rescue log is started anew each run (the DONE records carried over are written to a temporary file
that replaces the old one by rename), so it never grows with repeats and is never half-rewritten.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO

from sheaf.formats import PmcDag
from sheaf.jobtools import _records
from sheaf.jobtools._pmc_core import Assign, Host, Scheduler
from sheaf.jobtools._pmc_transport import MasterLink, Message

LEVELS = ("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")


@dataclass(slots=True)
class PmcOptions:
    dag: str = ""
    stdout: str = "stdout"
    stderr: str = "stderr"
    skip_rescue: bool = False
    no_rescue: bool = False
    max_failures: int = 0
    tries: int = 1
    lock: bool = True
    rescue: str = ""
    host_memory: int = 0
    host_cpus: int = 0
    strict_limits: bool = False
    max_wall_time: float = 0.0  # minutes; 0 = unlimited
    per_task_stdio: bool = False
    jobstate_log: bool = False
    resource_log: bool = True
    keep_affinity: bool = False
    set_affinity: bool = False
    loglevel: int = 3
    workers: int = 0
    transport: str = "auto"
    worker_timeout: float = 60.0  # seconds of silence before a busy worker is given up
    heartbeat: float = 2.0
    app: str = "sheaf-mpi-cluster"


class Log:
    def __init__(self, level: int) -> None:
        self.level = level

    def __call__(self, level: int, message: str) -> None:
        if level <= self.level:
            print(f"{_records.iso_time(time.time())} {LEVELS[level]} [master] {message}",
                  file=sys.stderr, flush=True)


class RescueLog:
    """Append-only ``DONE name`` records, made durable by ``sync()`` (one fdatasync per batch)."""

    def __init__(self, path: str, carried: list[str]) -> None:
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as stream:
            stream.writelines(f"DONE {name}\n" for name in carried)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
        self._stream: TextIO = open(path, "a")  # noqa: SIM115 - held for the whole run
        self._dirty = False

    def done(self, name: str) -> None:
        self._stream.write(f"DONE {name}\n")
        self._dirty = True

    def sync(self) -> None:
        """Make the records durable; the loop calls it before it starts anything new."""
        if self._dirty:
            self._stream.flush()
            os.fdatasync(self._stream.fileno())
            self._dirty = False

    def close(self) -> None:
        self.sync()
        self._stream.close()


class PmcJobstateLog:
    """PMC's ``jobstate.log`` lines (appended), as pegasus-monitord reads them."""

    def __init__(self, path: str) -> None:
        self._stream: TextIO = open(path, "a")  # noqa: SIM115

    def line(self, text: str) -> None:
        self._stream.write(f"{time.time():.6f} {text}\n")
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()


class MasterRun:
    def __init__(self, opts: PmcOptions, dag: PmcDag, done: set[str], link: MasterLink) -> None:
        self.opts = opts
        self.link = link
        self.log = Log(opts.loglevel)
        self.sched = Scheduler(dag, done, opts.tries, opts.max_failures, opts.set_affinity)
        self.abort: str | None = None
        self.rescue: RescueLog | None = None
        self.jobstate = PmcJobstateLog(os.path.join(os.path.dirname(opts.dag) or ".", "jobstate.log")) \
            if opts.jobstate_log else None
        self.resources: TextIO | None = None
        self.last_heard: dict[int, float] = {}
        self.runtime = 0.0
        self.lost: list[int] = []
        self.slots = 0
        self.rank_seq: dict[int, int] = {}

    # -- set-up ------------------------------------------------------------------------------
    def configure(self) -> None:
        config = {"dag": self.opts.dag, "per_task_stdio": self.opts.per_task_stdio,
                  "keep_affinity": self.opts.keep_affinity, "host_memory": self.opts.host_memory,
                  "host_cpus": self.opts.host_cpus, "strict_limits": self.opts.strict_limits,
                  "heartbeat": self.opts.heartbeat, "master": (socket.gethostname(), os.getpid())}
        self.slots = len(self.link.ranks())
        for rank in self.link.ranks():
            self.link.send(rank, ("config", config))

    def register(self) -> None:
        waiting = set(self.link.ranks())
        deadline = time.monotonic() + max(60.0, self.opts.worker_timeout)
        host_ranks: dict[str, int] = {}
        while waiting and time.monotonic() < deadline:
            for rank, (kind, payload) in self.link.recv(1.0):
                waiting.discard(rank)
                if kind != "register":
                    self.lost.append(rank)
                    continue
                self.sched.add_worker(rank, payload["hostname"], payload["memory"], payload["cpus"])
                self.link.watch(rank, payload["hostname"], payload["pid"])
                host_ranks[payload["hostname"]] = host_ranks.get(payload["hostname"], -1) + 1
                self.link.send(rank, ("hostrank", {"hostrank": host_ranks[payload["hostname"]]}))
        self.lost.extend(sorted(waiting))
        for host in self.sched.hosts.values():
            self.log(3, f"host {host.name}: {host.memory} MB, {host.cpus} CPUs")

    # -- the loop ------------------------------------------------------------------------------
    def run(self, rescue_path: str | None, carried: list[str]) -> bool:
        """Run the workflow; True when every task is done."""
        start = time.time()
        if rescue_path:
            self.rescue = RescueLog(rescue_path, carried)
        if self.opts.resource_log:
            self.resources = open(f"{self.opts.dag}.resource", "a")  # noqa: SIM115
            for host in self.sched.hosts.values():
                self._resource_line(host)
        self._jobstate("INTERNAL *** PMC_STARTED ***")
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        deadline = start + self.opts.max_wall_time * 60 if self.opts.max_wall_time > 0 else None
        try:
            self._loop(deadline)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        ok = self.abort is None and self.sched.succeeded_all()
        self._jobstate(f"INTERNAL *** PMC_FINISHED {0 if ok else 1} ***")
        self.summary(start, not ok)
        return ok

    def _loop(self, deadline: float | None) -> None:
        grace: float | None = None
        while not self.sched.is_finished():
            if self.abort is None:
                for assign in self.sched.schedule():
                    self._submit(assign)
            for rank, message in self.link.recv(0.5):
                self._event(rank, message)
            if self.rescue is not None:
                self.rescue.sync()  # journal first: nothing is started on unsynced DONE records
            self._check_silence()
            if self.abort is None and deadline is not None and time.time() >= deadline:
                self.abort = "workflow wall time exceeded"
            if self.abort is not None and grace is None:
                self.log(0, f"aborting workflow: {self.abort}")
                grace = time.monotonic() + 10
                for rank in list(self.sched.running):
                    self.link.send(rank, ("abort", {}))
            if grace is not None and (not self.sched.running or time.monotonic() > grace):
                break  # aborted: nothing left running (or workers ignoring abort, left to shutdown)

    def _submit(self, a: Assign) -> None:
        t = a.task
        payload = {"name": t.name, "argv": t.argv, "memory": t.memory, "cpus": t.cpus,
                   "pegasus_id": t.pegasus_id, "bindings": a.bindings, "attempt": a.attempt,
                   "pipe_forwards": t.pipe_forwards, "file_forwards": t.file_forwards}
        self.link.send(a.rank, ("run", payload))
        self.last_heard[a.rank] = time.monotonic()
        self.rank_seq[a.rank] = a.seq
        self.log(4, f"task {t.name} (try {a.attempt}) -> worker {a.rank}")
        self._jobstate(f"{t.name} SUBMIT {a.seq}.0 - - {a.seq}")
        self._jobstate(f"{t.name} EXECUTE {a.seq}.0 - - {a.seq}")
        self._resource_line(self.sched.slot_host[a.rank])

    def _event(self, rank: int, message: Message) -> None:
        kind, payload = message
        self.last_heard[rank] = time.monotonic()
        if kind == "result" and rank in self.sched.running:
            self._result(rank, payload)
        elif kind == "lost":
            self._lose(rank, payload["why"])

    def _result(self, rank: int, result: dict[str, Any]) -> None:
        status = result["status"]
        if status == 0 and not self._forward(result["name"], result["forwards"]):
            status = 256  # PMC: a task whose I/O could not be written failed
        self.runtime += result["runtime"]
        host = self.sched.slot_host.get(rank)
        seq = self.rank_seq.pop(rank, 0)
        if status == 0 and self.rescue is not None:
            self.rescue.done(result["name"])  # journal first, then release the children
        outcome = self.sched.finished(rank, status == 0)
        level = 4 if outcome.success else 1
        self.log(level, f"task {outcome.name} {'finished' if outcome.success else 'failed'} with status "
                 f"{status}{'' if outcome.final else ', will retry'}")
        event = "JOB_SUCCESS" if outcome.success else "JOB_FAILURE"
        self._jobstate(f"{outcome.name} JOB_TERMINATED {seq}.0 - - {seq}")
        self._jobstate(f"{outcome.name} {event} {status} - - {seq}")
        if host is not None:
            self._resource_line(host)

    def _forward(self, name: str, forwards: list[tuple[str, bytes]]) -> bool:
        for dest, data in forwards:
            try:
                with open(dest, "ab") as stream:
                    stream.write(data)
            except OSError as exc:
                self.log(1, f"task {name}: cannot write forwarded data to {dest}: {exc.strerror}")
                return False
        return True

    def _lose(self, rank: int, why: str) -> None:
        if rank not in self.sched.slot_host:
            return
        task = self.sched.worker_lost(rank)
        forget = getattr(self.link, "forget", None)
        if forget is not None:
            forget(rank)
        self.lost.append(rank)
        again = f"; task {task} goes back to the queue" if task else ""
        self.log(1, f"worker {rank} lost: {why}{again}")

    def _check_silence(self) -> None:
        now = time.monotonic()
        for rank in list(self.sched.running):
            if now - self.last_heard.get(rank, now) > self.opts.worker_timeout:
                self._lose(rank, f"silent for {self.opts.worker_timeout:g} s while running a task")

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.abort = f"caught signal {signum}"

    # -- output ------------------------------------------------------------------------------
    def _jobstate(self, text: str) -> None:
        if self.jobstate is not None:
            self.jobstate.line(text)

    def _resource_line(self, host: Host) -> None:
        if self.resources is not None:
            free = sum(1 for r in self.sched.free if self.sched.slot_host.get(r) is host)
            self.resources.write(f"{time.time():.6f},{free},{host.cpus_free},{host.memory_free},{host.name}\n")

    def summary(self, start: float, failed: bool) -> None:
        s = self.sched
        cpus = sum(h.cpus for h in s.hosts.values())
        text = _records.pmc_summary(failed, len(s.dag.tasks), s.submitted, s.succeeded, s.failed_attempts,
                                    start, time.time() - start, os.getpid(), self.opts.app, self.runtime,
                                    self.slots, cpus)
        sys.stdout.flush()
        os.write(1, text.encode("utf-8", "surrogateescape"))

    def merge_stdio(self) -> None:
        """Append every worker's task stdout/stderr to ours (or -o/-e) in rank order, then delete."""
        if self.opts.per_task_stdio:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        out = 1 if self.opts.stdout == "stdout" else os.open(self.opts.stdout,
                                                              os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        if self.opts.stderr == "stderr":
            err = 2
        elif self.opts.stderr == self.opts.stdout:
            err = out
        else:
            err = os.open(self.opts.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        ranks = sorted(set(self.link.ranks()) | set(self.lost) | set(self.sched.slot_host))
        for rank in ranks:
            _copy_and_unlink(f"{self.opts.dag}.out.{rank}", out)
            _copy_and_unlink(f"{self.opts.dag}.err.{rank}", err)
        for fd in {out, err} - {1, 2}:
            os.close(fd)

    def shutdown(self) -> None:
        for rank in self.link.ranks():
            self.link.send(rank, ("shutdown", {}))
        for stream in (self.rescue, self.jobstate):
            if stream is not None:
                stream.close()
        if self.resources is not None:
            self.resources.close()
        self.link.close()


def _copy_and_unlink(path: str, fd: int) -> None:
    try:
        with open(path, "rb") as stream:
            while chunk := stream.read(1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
    except FileNotFoundError:
        return
    os.unlink(path)
