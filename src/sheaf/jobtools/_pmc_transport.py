"""How PMC's master and workers talk: over MPI (mpi4py) or over local processes and socket pairs.

Both transports carry the same messages, ``(kind, payload)`` tuples pickled by the transport:

    master -> worker   ("config", {...})  ("run", {...})  ("abort", {})  ("shutdown", {})
    worker -> master   ("register", {...})  ("alive", {})  ("result", {...})
    transport -> master  ("lost", {"why": ...})    -- synthesised: the worker is gone

The master side never blocks for long (``recv`` takes a timeout) so the loop can watch wall time,
signals and heartbeats.  Worker loss is detected by the transport where it can be seen at once --
end of file on a local socket; for MPI, the registered pid vanishing on the master's own host --
and otherwise by the master's heartbeat timeout.  Under OpenMPI a rank that dies kills the whole
job unless ``mpiexec --enable-recovery`` is given; with it, the survivors carry on.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn, Protocol

from sheaf._proc import alive as pid_alive

Message = tuple[str, dict[str, Any]]


class MasterLink(Protocol):
    def ranks(self) -> list[int]: ...
    def send(self, rank: int, message: Message) -> None: ...
    def recv(self, timeout: float) -> list[tuple[int, Message]]: ...
    def watch(self, rank: int, hostname: str, pid: int) -> None: ...
    def close(self) -> None: ...


class WorkerLink(Protocol):
    rank: int
    def send(self, message: Message) -> None: ...
    def poll(self, timeout: float) -> Message | None: ...
    def fileno(self) -> int | None: ...
    def master_alive(self) -> bool: ...


# -- local processes ---------------------------------------------------------------------------
class LocalMaster:
    """Workers are child processes (``python -m sheaf.jobtools._pmc_worker FD RANK``)."""

    def __init__(self, workers: int) -> None:
        self._conns: dict[int, Connection] = {}
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        for rank in range(1, workers + 1):
            mine, theirs = socket.socketpair()
            fd = theirs.fileno()
            self._procs[rank] = subprocess.Popen(
                [sys.executable, "-m", "sheaf.jobtools._pmc_worker", str(fd), str(rank)],
                pass_fds=(fd,), stdin=subprocess.DEVNULL)
            theirs.close()
            self._conns[rank] = Connection(mine.detach())

    def ranks(self) -> list[int]:
        return sorted(self._conns)

    def pid(self, rank: int) -> int:
        return self._procs[rank].pid

    def send(self, rank: int, message: Message) -> None:
        conn = self._conns.get(rank)
        if conn is not None:
            with contextlib.suppress(OSError):  # the worker is gone; its end of file is reported by recv
                conn.send(message)

    def recv(self, timeout: float) -> list[tuple[int, Message]]:
        by_fd = {conn.fileno(): (rank, conn) for rank, conn in self._conns.items()}
        events: list[tuple[int, Message]] = []
        for ready in wait([conn for _, conn in by_fd.values()], timeout):
            rank, conn = by_fd[ready.fileno() if not isinstance(ready, int) else ready]
            try:
                while conn.poll():
                    events.append((rank, conn.recv()))
            except (EOFError, OSError):
                self._drop(rank)
                events.append((rank, ("lost", {"why": "its connection closed (process died)"})))
        return events

    def _drop(self, rank: int) -> None:
        self._conns.pop(rank).close()
        self._procs[rank].poll()

    def forget(self, rank: int) -> None:
        """Give up a worker that fell silent: it is killed so that it cannot come back."""
        if rank in self._conns:
            self._procs[rank].kill()
            self._drop(rank)

    def watch(self, rank: int, hostname: str, pid: int) -> None:
        """Local workers are watched through their sockets."""

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        for proc in self._procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class LocalWorker:
    def __init__(self, fd: int, rank: int) -> None:
        self.rank = rank
        self._conn = Connection(fd)

    def send(self, message: Message) -> None:
        self._conn.send(message)

    def poll(self, timeout: float) -> Message | None:
        if self._conn.poll(timeout):
            result: Message = self._conn.recv()
            return result
        return None

    def fileno(self) -> int | None:
        return self._conn.fileno()

    def master_alive(self) -> bool:
        return True  # a dead master shows as end of file on poll()


# -- MPI -----------------------------------------------------------------------------------------
#: MPI_Recv cannot time out, and OpenMPI's blocking receive spins a core (which the tasks need), so
#: both sides probe and nap.  The nap starts short and grows only while nothing arrives, and is capped
#: low: every message waits for at most one nap, and each task costs two messages (run, result) plus
#: the nap of the side that waited, so the cap bounds the per-task latency.
NAP_FIRST = 0.00005
NAP_CAP = 0.001


def poll_until(ready: Callable[[], bool], timeout: float) -> bool:
    """Call ``ready`` until it is true (True) or ``timeout`` seconds pass (False), napping between."""
    deadline = time.monotonic() + timeout
    nap = NAP_FIRST
    while not ready():
        if time.monotonic() >= deadline:
            return False
        time.sleep(nap)
        nap = min(nap * 2, NAP_CAP)
    return True


class MpiMaster:
    """Rank 0 of ``MPI.COMM_WORLD``; probes and naps (``poll_until``) as PMC does."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI  # MPI is initialised only when it is used

        self._mpi = MPI
        self._comm = comm
        self._live = set(range(1, comm.Get_size()))
        self._watched: dict[int, int] = {}
        self._host = socket.gethostname()
        self.configured: set[int] = set()  # ranks that were sent their configuration
        #: a rank died: MPI_Finalize would wait on it (OpenMPI's finalize synchronises every process,
        #: and a SIGKILLed rank never arrives), so the survivors leave without finalizing.
        self.lost_any = False

    def ranks(self) -> list[int]:
        return sorted(self._live)

    def send(self, rank: int, message: Message) -> None:
        if rank in self._live:
            if message[0] == "shutdown" and self.lost_any:
                message = ("shutdown", {**message[1], "abandon": True})
            self._comm.send(message, dest=rank)
            if message[0] == "config":
                self.configured.add(rank)

    def recv(self, timeout: float) -> list[tuple[int, Message]]:
        events: list[tuple[int, Message]] = []

        def ready() -> bool:
            events.extend(self._drain())
            events.extend(self._lost())
            return bool(events)

        poll_until(ready, timeout)
        return events

    def _drain(self) -> list[tuple[int, Message]]:
        events: list[tuple[int, Message]] = []
        status = self._mpi.Status()
        while self._comm.iprobe(source=self._mpi.ANY_SOURCE, status=status):
            rank = status.Get_source()
            events.append((rank, self._comm.recv(source=rank)))
        return events

    def _lost(self) -> list[tuple[int, Message]]:
        gone = [rank for rank, pid in self._watched.items() if not pid_alive(pid)]
        for rank in gone:
            del self._watched[rank]
            self._live.discard(rank)
            self.lost_any = True
        return [(rank, ("lost", {"why": "its process is gone"})) for rank in gone]

    def watch(self, rank: int, hostname: str, pid: int) -> None:
        if hostname == self._host:  # a pid means something only on this host
            self._watched[rank] = pid

    def forget(self, rank: int) -> None:
        self._live.discard(rank)
        self._watched.pop(rank, None)
        self.lost_any = True

    def close(self) -> None:
        """MPI is finalised by mpi4py at exit, unless a rank was lost (``lost_any``)."""


def exit_without_finalize(code: int) -> NoReturn:
    """Flush and leave at once: after a rank died, MPI_Finalize can wait forever."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class MpiWorker:
    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self._mpi = MPI
        self._comm = comm
        self.rank = comm.Get_rank()
        self.master: tuple[str, int] | None = None  # (hostname, pid) once configured
        self.abandon = False  # the master lost a rank: leave without MPI_Finalize (see MpiMaster)

    def send(self, message: Message) -> None:
        self._comm.send(message, dest=0)

    def poll(self, timeout: float) -> Message | None:
        if not poll_until(lambda: bool(self._comm.iprobe(source=0)), timeout):
            return None
        result: Message = self._comm.recv(source=0)
        return result

    def fileno(self) -> int | None:
        return None

    def master_alive(self) -> bool:
        if self.master is None or self.master[0] != socket.gethostname():
            return True
        return pid_alive(self.master[1])
