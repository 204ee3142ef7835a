"""``LocalBackend``: runs node attempts as processes on this machine, in the slots of a local pool.

The engine hands over ``Launch``es; the backend queues them, matches them to slots, runs them and
reports ``Exited``/``Held`` events.  One thread (the engine loop's) drives it; spawning and reaping
may run in threads of their own (see "Processes").  Linux only (pidfd, ``/proc``, ``sched_setaffinity``).

Scheduling policy
    Queued launches are tried highest ``priority`` first, FIFO among equals (``_queue``).  A launch
    starts when the pool grants it a claim (``Pool.claim``: requirements, rank, requests, slot
    splitting, ``START_LOCAL_UNIVERSE``) *and* its concurrency limits are granted in the machine-wide
    store (``ConcurrencyLimits``; skipped for the local universe, as HTCondor does).  Scheduling runs
    on ``submit`` and after every exit, so a slot freed by an exit is refilled before the engine even
    sees the event.  A job that could never match (``Pool.unrunnable``), whose executable or
    directory is missing, or whose output cannot be opened is reported ``Held`` with the reason --
    but one that could never match and has a ``periodic_*`` policy stays idle, as HTCondor keeps
    it, for its policy to hold or remove.
    While a launch waits on a limit held by another run, the queue is retried every 0.25 s.

Processes (``sheaf.backends._spawn``, ``_spawner``)
    argv exec'd directly (never a shell), the complete environment of the launch as given, the
    launch's working directory, stdout/stderr truncated per attempt (as HTCondor does), stdin
    the description's ``input`` (else /dev/null), no other descriptor of the engine, each job in its
    own process group (so ``cancel``/``close``/memory kills reach its children via the group),
    pinned to the claim's CPUs when the pool enforces CPU affinity.  When a job's
    main process exits, what is left of its process group is killed, as HTCondor's starter does.
    Where the ``_cspawn`` extension was built, spawns run in C threads of their own
    (``_spawner.make_spawner``), so the engine loop does not wait for each child's ``execve``: a
    launch granted a claim is *starting* until the thread hands its pid back (through an eventfd in
    the same epoll).  A launch cancelled while starting is killed as soon as its pid comes back.
    The C threads also own the children they spawned (see "Exits") and refill a freed slot
    themselves ("Successors"); claims, events, policies and memory stay in the engine loop's thread.
    Without the extension, or with ``SHEAF_PURE_PYTHON=1``, the engine loop's thread spawns each job
    itself (``_spawn.spawn``) and waits for its ``execve``.

Started processes
    Each started attempt's pid is kept until ``started()`` takes it with its start time
    (``/proc/<pid>/stat``), for attempts still running then; the engine journals them, to stop a
    killed engine's orphans on resume.  Each job's process group is also listed in this process's
    job guard's table (``_jobguard``: shared memory, no system call) right after its spawn and
    unlisted before its reap: if the process running the backend dies (``kill -9`` of the engine),
    the guard kills the jobs at once, so none goes on to finish unrecorded and run again on resume.

Exits
    Each process has a pidfd watched by an epoll, and exactly the pids that ended are reaped with
    ``wait4`` (no SIGCHLD handler, no per-job thread, and never ``waitpid(-1)``, which would steal
    the engine's own PRE/POST children).  With the C threads (``_cspawn``'s header) the epoll is a
    reaper thread's: it kills what is left of the job's group, reaps it and queues the exit (wait
    status, ``ru_maxrss``, the time), which ``wait`` -- blocked in ``epoll.poll`` on the threads'
    eventfd -- turns into the event; those threads list their jobs in the job guard's table.  A
    kill of a running job (``cancel``, memory, a policy) goes through the thread's lock
    (``CSpawner.kill``), so it never reaches a group the reaper has freed; a cancelled job's exit
    is dropped.  Otherwise the epoll is the engine loop's own and ``wait`` reaps.

Successors (``_successors``)
    With the C threads, the queue's first launch is bound to a running job of the same queue
    shape (the same claim) whose slot it would take next, and the thread starts it the moment that
    job is reaped, in the same claim and CPUs, before the engine hears of either: slots no longer
    wait for the engine's turn between two jobs.  Only launches that need nothing of this thread in
    between are bound (no limits, sandbox, ``$$()``, policy or local universe); a more urgent
    launch or a slot freed elsewhere puts the bound ones back in their places in the queue.

File transfer (``_sandbox``)
    A launch with ``should_transfer_files = YES`` runs in a sandbox of its own, its
    ``transfer_input_files`` copied in first and its ``transfer_output_files`` copied back into its
    ``initialdir`` when it exits, the sandbox then removed -- as HTCondor's shadow and starter do.

RunningJob policy (``_periodic``)
    A launch whose ad has ``PeriodicHold``/``PeriodicRelease``/``PeriodicRemove`` is evaluated every
    ``PERIODIC_EXPR_INTERVAL`` seconds (pool configuration, default 60) as the schedd evaluates it:
    hold kills a running job's process group (or takes it off the queue) and reports ``Suspended``;
    release queues it again (``Released``; it runs from the start, ``NumJobStarts`` counting up);
    remove stops it wherever it is and reports ``Removed``.

Memory (``_memwatch``)
    A claim's memory limit (the job's ``RequestMemory``, else its slot's memory) is enforced by
    polling the RSS of the job's process tree every 0.1 s while ``wait`` runs, for jobs that have
    lived longer than that; a job over its limit is killed with SIGKILL and reported as
    ``Exited(signal=9, reason="memory usage ... exceeded request ...")``.  A job whose peak RSS
    (``wait4``'s ``ru_maxrss``) exceeded the limit between two polls is reported the same way at
    exit -- when that peak is above the engine's own: Linux carries the pre-exec high-water mark
    across execve, so a spawned child's ``ru_maxrss`` is at least the spawner's RSS and says nothing
    about the job below that.  The local universe is not limited.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Self

from sheaf._proc import start_ticks
from sheaf.backends import _jobguard
from sheaf.backends._limits import MachineLimits
from sheaf.backends._memwatch import POLL_INTERVAL, tree_rss_mb
from sheaf.backends._periodic import (
    IDLE,
    JobRecord,
    decide,
    decide_at_exit,
    duration_due,
    has_policy,
    policy_interval,
)
from sheaf.backends._pool import Claim, Pool
from sheaf.backends._queue import LaunchQueue, Outcome, Shape
from sheaf.backends._sandbox import TransferFailure, copy_back, make_sandbox, remove_sandbox
from sheaf.backends._spawn import Spawned, SpawnError, seal_descriptors, spawn
from sheaf.backends.local._spawner import CSpawner, ExitResult, SpawnResult, make_spawner
from sheaf.backends.local._successors import Chain, RunningJob, Successors, Tag, chainable, request
from sheaf.classad import ClassAd, Demand, parse_limits
from sheaf.engine import (
    Event,
    Exited,
    FileTransfer,
    Held,
    Launch,
    Released,
    Removed,
    Requeued,
    Started,
    Suspended,
    expand_launch,
    needs_expansion,
)

__all__ = ["LocalBackend"]

_LIMIT_RETRY = 0.25


class LocalBackend:
    """Run launches on this machine's pool (see the module docstring)."""

    self_refilling = True  # a freed slot takes the next queued launch within wait() (see _collect)

    def __init__(self, pool: Pool | None = None, *, limits: MachineLimits | None = None,
                 poll_interval: float = POLL_INTERVAL, clock: Callable[[], float] = time.time) -> None:
        self.pool = pool if pool is not None else Pool.from_config()
        self._limits = limits
        self._own_limits = limits is None
        self._poll_interval = poll_interval
        self._clock = clock
        self._queue = LaunchQueue()
        self._jobs: dict[str, RunningJob] = {}  # running, by launch key
        self._fds: dict[int, RunningJob] = {}  # by pidfd, those reaped here
        self._events: list[Event] = []
        self._started: list[tuple[str, int, float, str]] = []  # (key, pid, time, slot) not yet taken
        self._epoll = select.epoll()
        self._demands: dict[object, Demand] = {}
        self._next_poll = 0.0
        self._next_retry = 0.0
        self._closed = False
        self.started_total = 0
        self._policy: dict[str, JobRecord] = {}  # launches with a periodic_* policy, by key
        self._policy_every = policy_interval(self.pool.config)
        self._next_policy = 0.0
        seal_descriptors()
        self._starting: dict[str, Tag] = {}  # handed to the spawner thread
        self._cancelled: set[str] = set()  # cancelled while starting: killed when the pid comes back
        self._spawner: CSpawner[Tag] | None = make_spawner(clock, reap=True)
        self._successors = Successors(self._spawner, self._queue)  # (none bound without the C threads)
        self._guarded = False  # the C thread was given the job guard
        self._released = 0  # claims given back to the pool, ever
        self._seen = 0  # ... as of the last scheduling pass
        #: launch key -> (sandbox, its top level's mtimes, initialdir, transfer) of file-transfer jobs
        self._sandboxes: dict[str, tuple[str, dict[str, float], str, FileTransfer]] = {}
        if self._spawner is not None:
            self._epoll.register(self._spawner.wakeup, select.EPOLLIN)

    # -- the Backend protocol ----------------------------------------------------------------------

    def submit(self, launch: Launch) -> None:
        """Queue ``launch``; it starts at once if resources allow (never blocks)."""
        if self._closed:
            raise RuntimeError("LocalBackend is closed")
        if self._present(launch.key):
            raise ValueError(f"launch key {launch.key!r} is already submitted")
        order = self._queue.push(launch)
        if self._successors.more_urgent(order):  # the bound ones no longer go next
            self._successors.withdraw(self._jobs)
        if has_policy(launch.job_ad):
            now = self._clock()
            self._policy[launch.key] = JobRecord(launch, now, now)
            if len(self._policy) == 1:
                self._next_policy = time.monotonic() + self._policy_every
        if not self.pool.saturated or self.pool.is_local(launch.job_ad):
            self._schedule()
        self._successors.bind(self._policy)

    def wait(self, timeout: float | None) -> list[Event]:
        """Block up to ``timeout`` seconds for at least one event; [] on timeout."""
        if self._closed:
            return self._drain()
        deadline = None if timeout is None else time.monotonic() + timeout
        polled = False
        while True:
            if self._events:
                return self._drain()
            if not (self._jobs or self._queue or self._starting or self._policy or self._successors):
                return []
            now = time.monotonic()
            if polled and deadline is not None and now >= deadline:
                return []
            self._collect(self._sleep_for(now, deadline))
            polled = True

    def fileno(self) -> int:
        """A descriptor readable while ``wait(0)`` has news to take (an exit, a spawner thread's
        result): the epoll's own.  The engine waits on it beside the journal's commit
        (``EngineRun._durable``) instead of polling ``wait`` every 0.5 ms.  The timed duties of
        ``wait`` (memory, policies, limits) are not in it: a caller calls ``wait(0)`` now and then."""
        return self._epoll.fileno()

    def cancel(self, key: str) -> None:
        """Stop a queued or running attempt; no event is reported for it (even one not yet taken)."""
        self._events = [e for e in self._events if e.key != key]
        self._policy.pop(key, None)
        self._stop(key)
        self._schedule()
        self._successors.bind(self._policy)

    def _stop(self, key: str) -> None:
        """Take a job off the queue, or kill its process group (once started) and free its slot."""
        if self._queue.remove(key):
            return
        if self._successors.unbind(key, self._jobs):
            return
        job = self._jobs.get(key)
        if job is not None and job.handle < 0:
            _reap_group(job.spawned.pid)
            self._forget(job)
            return
        if job is not None:  # the C thread reaps it (its exit is then dropped, its slot freed)
            job.cancelled = True
            self._signal(job, signal.SIGKILL)
        elif key in self._starting or key in self._successors:
            self._cancelled.add(key)  # taken by the C thread already: killed when its pid comes back
        while self._spawner is not None and self._present(key):  # a spawn, a killed job's exit: ms
            select.select([self._spawner.wakeup], [], [], 1.0)
            self._take(self._spawner.results())

    def _present(self, key: str) -> bool:
        """Whether the launch is queued, bound, starting or running."""
        return key in self._queue or key in self._jobs or key in self._starting or key in self._successors

    def started(self) -> list[Started]:
        """Every start since the last call (a job released from hold starts again): pid, start time
        and slot; ``start_ticks`` 0 for a process gone already.

        The ``/proc`` start time is read here, not at spawn: a short job is reaped by the time the
        engine asks, and then costs no ``/proc`` read."""
        started: list[Started] = []
        for key, pid, when, slot in self._started:
            ticks = start_ticks(pid) if key in self._jobs else None  # None: gone or a zombie
            started.append(Started(key, pid, ticks or 0, when, slot))
        self._started = []
        return started

    def idle(self) -> int:
        return len(self._queue) + len(self._successors)

    def running(self) -> int:
        return len(self._jobs) + len(self._starting)

    def close(self) -> None:
        """Kill every running job (whole process groups), release all claims and limits."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._policy.clear()
        if self._spawner is not None:
            self._epoll.unregister(self._spawner.wakeup)
            self._cancelled.update(self._starting, self._successors.bound)
            for job in self._jobs.values():
                job.cancelled = True
            self._successors.drop(self._jobs)  # never started: the C thread drops them
            self._take(self._spawner.close())  # the C thread kills and reaps its own
        for job in list(self._jobs.values()):
            _reap_group(job.spawned.pid)
            self._forget(job)
        self._epoll.close()
        if self._limits is not None and self._own_limits:
            self._limits.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def statistics(self) -> dict[str, object]:
        return {"idle": self.idle(), "running": self.running(), "started_total": self.started_total,
                "pool": self.pool.statistics(),
                "limits": self._limits.statistics() if self._limits is not None else {}}

    # -- scheduling ------------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._released != self._seen:  # a slot is free: first come, first served
            self._successors.withdraw(self._jobs)
        self._seen = self._released
        if self._queue:
            self._queue.schedule(self._attempt)

    def _attempt(self, launch: Launch, shape: Shape) -> Outcome:
        ad = launch.job_ad
        sig = shape[0]
        assert isinstance(sig, tuple)
        claim = self.pool.claim(ad, sig)
        if claim is None and self.pool.saturated and not self.pool.is_local(ad):
            return "blocked"  # judged when a slot is free: whether it could ever fit
        if claim is None:
            reason = self.pool.unrunnable(ad, sig)
            if reason is None or launch.key in self._policy:
                # a job its own policy may hold or remove stays idle until then, as in HTCondor
                return "blocked"
            self._events.append(Held(launch.key, reason))
            return "dropped"
        if not claim.local and not self._acquire_limits(launch, ad):
            self.pool.release(claim)
            beyond = self._limits.beyond(self._demand(ad)) if self._limits is not None else None
            if beyond is not None and launch.key not in self._policy:  # as a job no slot can match
                self._events.append(Held(launch.key, beyond))
                return "dropped"
            return "blocked"
        if self._spawner is not None and chainable(launch, claim, launch.key in self._policy):
            self._successors.starting(launch.key, shape)
        return self._start(launch, claim)

    def _acquire_limits(self, launch: Launch, ad: ClassAd) -> bool:
        demand = self._demand(ad)
        if not demand:
            return True
        if self._limits is None:
            self._limits = MachineLimits(self.pool.config)
        if self._limits.try_acquire(launch.key, demand):
            return True
        self._next_retry = time.monotonic() + _LIMIT_RETRY
        return False

    def _demand(self, ad: ClassAd) -> Demand:
        expr = ad.get_expr("ConcurrencyLimits")
        if expr is None:
            return ()
        demand = self._demands.get(expr)
        if demand is None:
            value = ad.eval("ConcurrencyLimits")
            demand = self._demands[expr] = parse_limits(value) if isinstance(value, str) else ()
        return demand

    def _start(self, launch: Launch, claim: Claim) -> Outcome:
        if needs_expansion(launch):  # $$(attr), $$([expr]): against the matched slot, as the schedd
            launch, reason = expand_launch(launch, self.pool.slot_ad(claim))
            if reason is not None:
                self._release(launch.key, claim)
                self._events.append(Held(launch.key, reason))
                return "dropped"
        if launch.transfer is not None:  # HTCondor file transfer: the attempt runs in a sandbox
            try:
                sandbox, before = make_sandbox(launch.transfer, self.pool.config.get("EXECUTE"))
            except TransferFailure as exc:
                self._release(launch.key, claim)
                self._events.append(Held(launch.key, str(exc)))
                return "dropped"
            self._sandboxes[launch.key] = (sandbox, before, launch.cwd, launch.transfer)
            launch = replace(launch, cwd=sandbox)
        if self._spawner is not None:
            if not self._guarded:
                self._spawner.guard(*_jobguard.shared())  # the C threads list their jobs themselves
                self._guarded = True
            self._starting[launch.key] = (launch, claim)
            self._spawner.submit(request(launch, claim))
            return "started"
        started, since = self._clock(), time.monotonic()
        try:
            spawned = spawn(launch.argv, launch.env, launch.cwd, launch.stdout, launch.stderr,
                            claim.cpu_ids, launch.stdin)
            _jobguard.add(spawned.pid)
        except (SpawnError, ValueError) as exc:
            self._release(launch.key, claim)
            self._events.append(Held(launch.key, str(exc)))
            return "dropped"
        self._adopt(launch, claim, spawned, started, since)
        return "started"

    def _adopt(self, launch: Launch, claim: Claim, spawned: Spawned, started: float, since: float,
               handle: int = -1) -> RunningJob:
        watched = claim.memory_limit is not None and not claim.local
        job = RunningJob(launch, claim, spawned, started, since, watched, handle=handle)
        self._jobs[launch.key] = job
        if handle < 0:
            self._fds[spawned.pidfd] = job
            self._epoll.register(spawned.pidfd, select.EPOLLIN)
        else:
            self._successors.started(job)
        self.started_total += 1
        self._started.append((launch.key, spawned.pid, started, claim.slot or "local"))
        record = self._policy.get(launch.key)
        if record is not None:
            record.started(started)
            self._bring_forward(record)
        return job

    def _take(self, results: list[SpawnResult[Tag] | ExitResult[Tag]]) -> None:
        """The C threads' news, in order: starts and exits."""
        for result in results:
            if isinstance(result, ExitResult):
                self._exited(result)
            else:
                self._take_spawn(result)

    def _take_spawn(self, result: SpawnResult[Tag]) -> None:
        """Adopt what the C thread started (it reaps it too); a failed spawn is ``Held``, a cancelled
        one killed."""
        launch, claim = result.tag
        self._starting.pop(launch.key, None)
        spawned = result.spawned
        if spawned is None:
            if launch.key not in self._cancelled:
                self._events.append(Held(launch.key, result.error or "the job could not be started"))
            self._cancelled.discard(launch.key)
            chain, shape = self._successors.failed(launch.key)
            self._hand_on(launch.key, chain, claim, shape)
            return
        job = self._adopt(launch, claim, spawned, result.started, result.since, result.handle)
        if launch.key in self._cancelled:
            self._cancelled.discard(launch.key)
            job.cancelled = True
            self._signal(job, signal.SIGKILL)

    def _hand_on(self, key: str, chain: Chain | None, claim: Claim, shape: Shape | None) -> None:
        """``key`` is done with ``claim``: its first successor takes it over (the C thread starts it
        now), else it goes back to the pool."""
        successor = self._successors.hand_on(chain, shape)
        if successor is None:
            self._release(key, claim)
        else:
            self._starting[successor.key] = (successor, claim)

    def _release(self, key: str, claim: Claim) -> None:
        self._released += 1
        sandbox = self._sandboxes.pop(key, None)
        if sandbox is not None:
            remove_sandbox(sandbox[0])
        self.pool.release(claim)
        if self._limits is not None and not claim.local:
            self._limits.release(key)

    # -- exits and memory ---------------------------------------------------------------------------

    def _sleep_for(self, now: float, deadline: float | None) -> float:
        wake = deadline if deadline is not None else now + 3600.0
        if any(job.limited for job in self._jobs.values()):
            wake = min(wake, max(self._next_poll, now + 0.001))
        if self._queue and self._next_retry:
            wake = min(wake, self._next_retry)
        if self._policy:
            wake = min(wake, self._next_policy)
        return max(wake - now, 0.0)

    def _collect(self, timeout: float) -> None:
        """Reap what ended within ``timeout``, police memory, retry limits, refill slots."""
        freed = False
        for fd, _mask in self._epoll.poll(timeout):
            job = self._fds.get(fd)
            if job is not None:
                self._reap(job)
                freed = True
            elif self._spawner is not None and fd == self._spawner.wakeup:
                freed = self._take_news() or freed
        now = time.monotonic()
        if now >= self._next_poll:
            self._police_memory(now)
        retry = bool(self._next_retry) and now >= self._next_retry
        if retry:
            self._next_retry = 0.0
        if self._policy and now >= self._next_policy:
            self._next_policy = now + self._policy_every
            retry = self._apply_policy() or retry
            for record in self._policy.values():
                self._bring_forward(record)
        if freed or retry:
            self._schedule()
        self._successors.bind(self._policy)

    def _take_news(self) -> bool:
        """The spawner thread's results; True when a claim went back to the pool (a slot is free)."""
        assert self._spawner is not None
        before = self._released
        self._take(self._spawner.results())
        return self._released != before

    def _reap(self, job: RunningJob) -> None:
        """A job of this thread ended (its pidfd is readable): reap it, as the C thread does its own."""
        status, usage = _reap_group(job.spawned.pid)
        self._ended(job, status, usage.ru_maxrss, self._clock())

    def _exited(self, result: ExitResult[Tag]) -> None:
        job = self._jobs.get(result.tag[0].key)
        if job is not None:
            self._ended(job, result.status, result.maxrss_kb, result.ended)

    def _ended(self, job: RunningJob, status: int, maxrss_kb: int, ended: float) -> None:
        """Report a reaped job (``Exited``, or ``Held`` when its output cannot be transferred back),
        its claim freed or handed to its first successor."""
        key = job.launch.key
        sandbox = self._sandboxes.pop(key, None)
        self._forget(job)
        if job.cancelled:  # stopped here (cancel, a policy, close): the caller reports it, or nobody
            return
        record = self._policy.pop(key, None)
        reason = job.killed
        if reason is None and job.limited and maxrss_kb > (job.claim.memory_limit or 0) * 1024:
            reason = self._peak_reason(job, maxrss_kb / 1024)  # above the limit: was it the job's?
        if reason is not None:
            code, sig = None, signal.SIGKILL.value
        elif os.WIFSIGNALED(status):
            code, sig = None, os.WTERMSIG(status)
        else:
            code, sig = os.WEXITSTATUS(status), None
        if sandbox is not None:
            held = copy_back(sandbox[3], sandbox[0], sandbox[1], sandbox[2], code == 0)
            remove_sandbox(sandbox[0])
            if held is not None:
                self._events.append(Held(key, held))
                return
        action = decide_at_exit(record, ended, code, sig) if record is not None and reason is None \
            else None
        if action is None:
            self._events.append(Exited(key, code, sig, reason, job.started, ended, job.claim.slot or "local"))
            return
        assert record is not None
        what, why, hold_code, subcode = action
        if what == "remove":
            self._events.append(Removed(key, why))
            return
        self._policy[key] = record
        if what == "hold":
            record.hold(ended, why, subcode, hold_code)
            self._events.append(Suspended(key, why, hold_code, subcode))
        else:  # its OnExitRemove keeps it queued: it runs again
            self._queue.push(record.launch)
            self._events.append(Requeued(key, code, sig, why))

    def _peak_reason(self, job: RunningJob, peak_mb: float) -> str | None:
        limit = job.claim.memory_limit
        if not job.limited or limit is None or peak_mb <= limit:
            return None
        # Linux keeps the pre-exec high-water mark across execve, and a posix_spawn'd child starts
        # in (a copy of) this process's memory: its ru_maxrss is at least our own peak at spawn
        # time.  Only a peak above ours says something about the job itself.
        if peak_mb <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:
            return None
        return (f"memory usage {peak_mb:.0f} MB exceeded request {limit} MB "
                "(peak resident set, measured at exit)")

    def _forget(self, job: RunningJob) -> None:
        """A job is gone: its claim goes to its first successor, else back to the pool."""
        key = job.launch.key
        del self._jobs[key]
        self._successors.ended(job)
        if job.handle < 0:
            del self._fds[job.spawned.pidfd]
            self._epoll.unregister(job.spawned.pidfd)
            os.close(job.spawned.pidfd)
        self._hand_on(key, job.chain, job.claim, job.shape)

    def _signal(self, job: RunningJob, sig: int) -> None:
        """Signal a running job's process group (the C thread's own under its lock: never a reaped group)."""
        if job.handle < 0:
            _kill_group(job.spawned.pid, sig)
        elif self._spawner is not None:
            self._spawner.kill(job.handle, sig)

    def _police_memory(self, now: float) -> None:
        self._next_poll = now + self._poll_interval
        watched = {job.spawned.pid: job for job in self._jobs.values()
                   if job.limited and job.killed is None and now - job.since >= self._poll_interval}
        if not watched:
            return
        for pid, used in tree_rss_mb(watched).items():
            job = watched[pid]
            limit = job.claim.memory_limit
            if limit is not None and used > limit:
                job.killed = f"memory usage {used:.0f} MB exceeded request {limit} MB"
                self._signal(job, signal.SIGKILL)

    def _bring_forward(self, record: JobRecord) -> None:
        """The next policy pass no later than the running job's duration limit holds it, as the
        shadow's timer fires then (``_periodic.duration_due``)."""
        due = duration_due(record)
        if due is not None:
            self._next_policy = min(self._next_policy, time.monotonic() + max(due - self._clock(), 0.0))

    def _apply_policy(self) -> bool:
        """Evaluate every tracked job's policy (``_periodic``); True when a slot was freed or a job
        queued again."""
        now = self._clock()
        running = {job.spawned.pid: job for job in self._jobs.values() if job.launch.key in self._policy}
        memory = tree_rss_mb(running) if running else {}
        by_key = {job.launch.key: pid for pid, job in running.items()}
        changed = False
        for key, record in list(self._policy.items()):
            pid = by_key.get(key)
            action = decide(record, now, memory.get(pid) if pid is not None else None)
            if action is None:
                continue
            what, reason, hold_code, subcode = action
            changed = True
            if what == "release":
                record.stopped(now, IDLE)
                self._queue.push(record.launch)
                self._events.append(Released(key, reason))
                continue
            self._stop(key)
            if what == "hold":
                record.hold(now, reason, subcode, hold_code)
                self._events.append(Suspended(key, reason, hold_code, subcode))
            else:
                del self._policy[key]
                self._events.append(Removed(key, reason))
        return changed

    def _drain(self) -> list[Event]:
        events, self._events = self._events, []
        return events


def _reap_group(pid: int) -> tuple[int, resource.struct_rusage]:
    """Kill what is left of a job of this thread's process group, unlist it from the job guard and
    reap it: the zombie leader keeps the group id from reuse until the ``wait4`` (``_jobguard``)."""
    _kill_group(pid)
    _jobguard.remove(pid)
    _, status, usage = os.wait4(pid, 0)
    return status, usage


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the whole group is gone already
        os.killpg(pid, sig)

