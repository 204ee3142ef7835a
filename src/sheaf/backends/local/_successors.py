"""Successors: queued launches bound to running jobs, which the C thread starts as those jobs end.

Why: a slot freed by an exit used to wait for the engine's one Python thread -- busy about half the
time with the state machine, the journal and the reports -- to reap the job and start the next
launch, so short jobs left the CPUs partly idle.  The C thread of
``_cspawn`` reaps its own children, and a launch bound to a running job as its successor is started
by that thread the moment the job is reaped, in the job's claim (``Claim`` moves to it, never back
to the pool in between); the engine hears of both afterwards.

Policy (what makes a successor the launch the scheduler would have started there anyway)
    - Only the queue's first launch is bound (highest priority, FIFO: ``LaunchQueue.first``), and
      only while it waits (``bind`` runs after every scheduling pass), to a running job of the same
      queue *shape* -- same match signature, limits and universe, so the same claim -- the job with
      the shortest chain first, at most ``CHAIN`` deep.
    - Neither the job nor the launch may need this thread between the two: no concurrency limits,
      no file transfer (sandbox), no ``$$()`` to expand against the slot, no periodic policy, not
      the local universe (``chainable``).
    - A launch submitted with a higher priority than a bound one, or a claim given back to the pool
      (a slot free for anyone), puts every bound launch back in its place in the queue
      (``withdraw``); they are bound again after the scheduling pass.  So a bound launch never
      waits behind a long job while a slot is free, and never overtakes a better launch.
    - Unbinding races with the C thread: a successor it has taken already starts (its start is in
      the thread's results), and the caller treats it as starting.

Chains: a running job's bound successors form a ``deque`` handed from job to job: when the job is
reaped its first successor starts with the rest as its own chain; one that fails to start hands
the claim on to the next.  The C thread keeps the same chain in the same order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from sheaf.backends._pool import Claim
from sheaf.backends._queue import LaunchQueue, Order, Shape
from sheaf.backends._spawn import Spawned
from sheaf.backends.local._spawner import CSpawner, SpawnRequest
from sheaf.engine import Launch, needs_expansion

__all__ = ["CHAIN", "Bound", "Chain", "RunningJob", "Successors", "Tag", "chainable", "request"]

#: successors bound to one running job at most: enough to ride out a slow engine turn or a journal
#: fsync with sub-millisecond jobs; a launch bound behind a long job goes back
#: to the queue as soon as another claim is free (``withdraw``), so depth costs no slot any time
CHAIN = 64
Tag = tuple[Launch, Claim]


@dataclass(slots=True)
class Bound:
    """A launch bound as a successor in the C thread."""

    launch: Launch
    order: Order  # its place in the queue, kept for its return there
    shape: Shape  # its queue shape, kept for the same (``shape_of`` is most of a push's cost)
    handle: int
    chain: Chain  # the chain it is in (handed from job to job)


Chain = deque[Bound]


@dataclass(slots=True)
class RunningJob:
    """A running job of the local backend."""

    launch: Launch
    claim: Claim
    spawned: Spawned
    started: float
    since: float
    limited: bool
    killed: str | None = None
    handle: int = -1  # the C thread's number (it reaps the job), else -1 (reaped by the backend)
    shape: Shape | None = None  # set when successors may be bound to it
    chain: Chain = field(default_factory=deque)
    cancelled: bool = False  # ends without an event (cancel, a policy, close)


def request(launch: Launch, claim: Claim) -> SpawnRequest[Tag]:
    return SpawnRequest((launch, claim), launch.argv, launch.env, launch.cwd, launch.stdout, launch.stderr,
                        claim.cpu_ids, launch.stdin)


def chainable(launch: Launch, claim: Claim, policed: bool) -> bool:
    """Whether successors may follow this launch in its claim, or it may follow another job:
    nothing that needs the backend's thread between two jobs of a slot (see the module docstring)."""
    return (not claim.local and launch.transfer is None and not policed
            and launch.job_ad.get_expr("ConcurrencyLimits") is None and not needs_expansion(launch))


class Successors:
    """The bound launches and the chains they are in (see the module docstring)."""

    def __init__(self, reaper: CSpawner[Tag] | None, queue: LaunchQueue) -> None:
        """``reaper`` None: no C threads, nothing is ever bound (every method is then a no-op)."""
        self._reaper = reaper
        self._queue = queue
        self.bound: dict[str, Bound] = {}  # by launch key
        self._chains: dict[str, Chain] = {}  # a starting successor's followers
        self._open: dict[str, RunningJob] = {}  # running jobs that take more successors
        self._shapes: dict[str, Shape] = {}  # shapes of starting launches that may take successors
        self._worst: Order = (0, 0)  # no bound launch goes after this place in the queue

    def __len__(self) -> int:
        return len(self.bound)

    def __contains__(self, key: str) -> bool:
        return key in self.bound

    def starting(self, key: str, shape: Shape) -> None:
        """A launch that may take successors (``chainable``) was handed to the C thread."""
        self._shapes[key] = shape

    def started(self, job: RunningJob) -> Chain | None:
        """``job`` runs: its shape, and its chain when it was a successor."""
        key = job.launch.key
        job.shape = self._shapes.pop(key, None)
        chain = self._chains.pop(key, None)
        if chain is not None:
            job.chain = chain
        if job.shape is not None and job.handle >= 0 and len(job.chain) < CHAIN:
            self._open[key] = job
        return chain

    def failed(self, key: str) -> tuple[Chain | None, Shape | None]:
        """A launch did not start: its chain and shape, for ``hand_on``."""
        return self._chains.pop(key, None), self._shapes.pop(key, None)

    def ended(self, job: RunningJob) -> None:
        self._open.pop(job.launch.key, None)

    def hand_on(self, chain: Chain | None, shape: Shape | None) -> Launch | None:
        """The chain's first launch, which the C thread starts now in the claim of the job before
        it (None: no successor, the claim goes back to the pool)."""
        if not chain:
            return None
        first = chain.popleft()
        key = first.launch.key
        del self.bound[key]
        self._chains[key] = chain
        if shape is not None:
            self._shapes[key] = shape
        return first.launch

    def more_urgent(self, order: Order) -> bool:
        """Whether a launch queued at ``order`` goes before a bound one."""
        return bool(self.bound) and order < self._worst

    def bind(self, policed: Container[str]) -> None:
        """Bind the queue's first launches to running jobs of their shape, shortest chain first."""
        while self._open and (first := self._queue.first()) is not None:
            order, launch, shape = first
            job = _shortest(self._open.values(), shape)
            if job is None or not chainable(launch, job.claim, launch.key in policed):
                return
            assert self._reaper is not None  # lanes are jobs of the C threads
            handle = self._reaper.follow(job.handle, request(launch, job.claim))
            if handle is None:  # it ended already: its exit is on its way
                del self._open[job.launch.key]
                continue
            self._queue.take_first(shape)
            bound = self.bound[launch.key] = Bound(launch, order, shape, handle, job.chain)
            job.chain.append(bound)
            self._worst = max(self._worst, order)
            if len(job.chain) >= CHAIN:
                del self._open[job.launch.key]

    def unbind(self, key: str, jobs: dict[str, RunningJob]) -> bool:
        """Take a bound launch back from the C thread; False when it has taken it (it starts)."""
        bound = self.bound.get(key)
        if bound is None or self._reaper is None or not self._reaper.unfollow(bound.handle):
            return False
        bound.chain.remove(bound)
        del self.bound[key]
        self._reopen(jobs)
        return True

    def withdraw(self, jobs: dict[str, RunningJob]) -> None:
        """Put the bound launches back in their places in the queue (those the C thread has taken
        already start)."""
        if not self.bound or self._reaper is None:
            return
        chains: dict[int, Chain] = {}
        for bound in list(self.bound.values()):
            if self._reaper.unfollow(bound.handle):
                chains[id(bound.chain)] = bound.chain
                del self.bound[bound.launch.key]
                self._queue.push(bound.launch, bound.order, bound.shape)
        for chain in chains.values():  # once a chain, not a deque.remove (linear) per launch
            kept = [one for one in chain if one.launch.key in self.bound]
            chain.clear()
            chain.extend(kept)
        self._worst = (0, 0)
        self._reopen(jobs)

    def drop(self, jobs: dict[str, RunningJob]) -> None:
        """Forget every bound launch (the C thread drops them at close)."""
        for job in jobs.values():
            job.chain.clear()
        self.bound.clear()
        self._open.clear()

    def _reopen(self, jobs: dict[str, RunningJob]) -> None:
        self._open = {key: job for key, job in jobs.items()
                      if job.shape is not None and job.handle >= 0 and len(job.chain) < CHAIN}


def _shortest(jobs: Iterable[RunningJob], shape: Shape) -> RunningJob | None:
    """The job of ``shape`` with the shortest chain, the first of equals (a loop: asked for every
    launch bound, where a list of the lanes and ``min`` with a key made two more calls a job)."""
    best: RunningJob | None = None
    for job in jobs:
        if job.shape == shape and (best is None or len(job.chain) < len(best.chain)):
            best = job
    return best
