"""The PMC master's scheduling state: a pure core, fed events, returning assignments.

State:

- A *host* is a machine (workers that register the same hostname share it) with memory (MB) and
  CPUs; a *slot* is one worker (MPI rank) on a host.  A task runs on one slot and holds ``memory``
  MB and ``cpus`` CPUs of that slot's host while it runs.
- A task is *waiting* (a parent not done), *ready* (queued), *running* on a slot, *done* (exit 0,
  journaled in the rescue log by the loop), or *failed* (its tries used up).

Policy (PMC's, plus worker loss):

- Ready tasks are considered by priority (larger first), ties in the order they became ready.  A
  task that fits no free slot now is deferred and a lower-priority task that fits runs instead.
- Before anything runs, every task must fit some host when that host is empty; otherwise the
  workflow cannot finish and is refused (``unrunnable``).
- A failed attempt is retried until the task's tries are used up; then the task is failed and
  its descendants never run.  After ``max_failures`` failed tasks (0 = unlimited) nothing new starts.
- A lost worker (its process died, or it fell silent) loses its slot for good; the task it was
  running goes back to the ready queue without using up a try.  No slots left = the run is stuck.
- With ``set_affinity``, a task asking for more than one CPU is given a contiguous run of CPU
  numbers of its host (none if the free CPUs are fragmented); single-CPU tasks float.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from sheaf.formats import PmcDag, PmcTask


@dataclass(slots=True)
class Host:
    name: str
    memory: int
    cpus: int
    memory_free: int = 0
    cpus_free: int = 0
    owners: list[str | None] = field(default_factory=list)  # per CPU: the task bound to it

    def __post_init__(self) -> None:
        self.memory_free, self.cpus_free = self.memory, self.cpus
        self.owners = [None] * self.cpus

    def fits_empty(self, task: PmcTask) -> bool:
        return self.memory >= task.memory and self.cpus >= task.cpus

    def fits(self, task: PmcTask) -> bool:
        return self.memory_free >= task.memory and self.cpus_free >= task.cpus

    def take(self, task: PmcTask, bind: bool) -> tuple[int, ...]:
        self.memory_free -= task.memory
        self.cpus_free -= task.cpus
        if not bind or task.cpus <= 1:
            return ()
        for first in range(self.cpus - task.cpus + 1):
            if all(owner is None for owner in self.owners[first:first + task.cpus]):
                self.owners[first:first + task.cpus] = [task.name] * task.cpus
                return tuple(range(first, first + task.cpus))
        return ()  # fragmented: let it float

    def give_back(self, task: PmcTask) -> None:
        self.memory_free += task.memory
        self.cpus_free += task.cpus
        self.owners = [None if owner == task.name else owner for owner in self.owners]


@dataclass(frozen=True, slots=True)
class Assign:
    rank: int
    task: PmcTask
    attempt: int  # 1 on the first try
    seq: int  # submit sequence number, 1, 2, ... (jobstate.log)
    bindings: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    name: str
    success: bool
    final: bool  # False when the task goes back to the queue for another try


class Scheduler:
    """Feed it workers and results; ask it what to run next."""

    def __init__(self, dag: PmcDag, done: Iterable[str], default_tries: int, max_failures: int = 0,
                 set_affinity: bool = False) -> None:
        self.dag = dag
        self._tries = default_tries
        self._max_failures = max_failures
        self._bind = set_affinity
        self.done: set[str] = set(done)
        self.failed_tasks: set[str] = set()
        self._children: dict[str, list[str]] = {name: [] for name in dag.tasks}
        self._waiting: dict[str, int] = dict.fromkeys(dag.tasks, 0)
        for parent, child in dag.edges:
            self._children[parent].append(child)
            self._waiting[child] += parent not in self.done
        self._ready: list[tuple[int, int, str]] = []
        self._order = 0
        self.hosts: dict[str, Host] = {}
        self.slot_host: dict[int, Host] = {}
        self.free: list[int] = []  # free ranks, kept sorted
        self.running: dict[int, tuple[PmcTask, int]] = {}  # rank -> (task, attempt)
        self.attempts: dict[str, int] = dict.fromkeys(dag.tasks, 0)
        self.submitted = self.succeeded = self.failed_attempts = 0
        self.seq = 0
        for name in dag.tasks:
            if name not in self.done and self._waiting[name] == 0:
                self._queue(name)

    # -- workers ---------------------------------------------------------------------------
    def add_worker(self, rank: int, hostname: str, memory: int, cpus: int) -> None:
        host = self.hosts.setdefault(hostname, Host(hostname, memory, cpus))
        self.slot_host[rank] = host
        self.free.append(rank)
        self.free.sort()

    def unrunnable(self) -> str | None:
        """A task that no host could ever run (checked once all workers registered)."""
        for task in self.dag.tasks.values():
            if task.name not in self.done and not any(h.fits_empty(task) for h in self.hosts.values()):
                return task.name
        return None

    def worker_lost(self, rank: int) -> str | None:
        """Forget a dead worker; its running task (returned) goes back to the queue, no try used."""
        host = self.slot_host.pop(rank, None)
        if rank in self.free:
            self.free.remove(rank)
        if rank not in self.running or host is None:
            return None
        task, _ = self.running.pop(rank)
        host.give_back(task)
        self.attempts[task.name] -= 1
        self._queue(task.name)
        return task.name

    # -- tasks -----------------------------------------------------------------------------
    def _queue(self, name: str) -> None:
        self._order += 1
        heapq.heappush(self._ready, (-self.dag.tasks[name].priority, self._order, name))

    def schedule(self) -> list[Assign]:
        if self.stopped():
            return []
        assigned: list[Assign] = []
        deferred: list[tuple[int, int, str]] = []
        while self._ready and self.free:
            entry = heapq.heappop(self._ready)
            task = self.dag.tasks[entry[2]]
            rank = next((r for r in self.free if self.slot_host[r].fits(task)), None)
            if rank is None:
                deferred.append(entry)
                continue
            self.free.remove(rank)
            assigned.append(self._assign(rank, task))
        for entry in deferred:
            heapq.heappush(self._ready, entry)
        return assigned

    def _assign(self, rank: int, task: PmcTask) -> Assign:
        bindings = self.slot_host[rank].take(task, self._bind)
        self.attempts[task.name] += 1
        self.running[rank] = (task, self.attempts[task.name])
        self.submitted += 1
        self.seq += 1
        return Assign(rank, task, self.attempts[task.name], self.seq, bindings)

    def finished(self, rank: int, success: bool) -> TaskOutcome:
        task, attempt = self.running.pop(rank)
        host = self.slot_host.get(rank)
        if host is not None:
            host.give_back(task)
            self.free.append(rank)
            self.free.sort()
        if success:
            self.succeeded += 1
            self.done.add(task.name)
            self._release(task.name)
            return TaskOutcome(task.name, True, True)
        self.failed_attempts += 1
        tries = task.tries if task.tries is not None else self._tries
        if attempt < tries:
            self._queue(task.name)
            return TaskOutcome(task.name, False, False)
        self.failed_tasks.add(task.name)
        return TaskOutcome(task.name, False, True)

    def _release(self, name: str) -> None:
        for child in self._children[name]:
            self._waiting[child] -= 1
            if self._waiting[child] == 0 and child not in self.done:
                self._queue(child)

    def stopped(self) -> bool:
        return self._max_failures > 0 and len(self.failed_tasks) >= self._max_failures

    def is_finished(self) -> bool:
        """Nothing running and nothing that could still start."""
        return not self.running and (not self._ready or self.stopped() or not self.slot_host)

    def succeeded_all(self) -> bool:
        return len(self.done) == len(self.dag.tasks)
