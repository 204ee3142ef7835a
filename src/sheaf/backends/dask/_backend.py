"""``DaskBackend``: node attempts as tasks of a Dask cluster (``sheaf run DIR --backend dask``).

Cluster
    ``DaskBackend(scheduler)`` connects to a running scheduler (``dask scheduler``, dask-jobqueue,
    a Kubernetes operator...) and leaves it running; ``DaskBackend()`` starts a ``LocalCluster`` on
    this machine (one worker process, a thread per CPU, resources ``CPU`` and ``MEMORY`` the
    machine's, no Dask memory limit: sheaf's own memory watch polices the jobs) and closes it in
    :meth:`close`.  The owned cluster never re-runs a task whose worker died
    (``distributed.scheduler.allowed-failures = 0``): that attempt is *failed*, and the engine's
    RETRY decides; on a scheduler sheaf does not own, that is the site's setting.

Where attempts run
    Each attempt is one Dask task, ``_task.run_attempt``, which runs the ``Launch`` through the
    local backend's launch path on the worker (see there: argv, environment, files, memory watch,
    ``periodic_*``, ``$$()``).  A clustered job (seqexec, PMC) is one ``Launch``, so one task: Dask's
    per-task overhead, several times a plain thread pool's (``benchmarks/backend_overhead.py``), is
    paid once per cluster.  Dependencies, PRE/POST scripts, retries, throttles and rescue
    DAGs stay in sheaf's engine; Dask sees only ready attempts.

Resources and order
    The cluster's workers are modelled as a local ``Pool`` of partitionable slots, one per worker,
    sized by the worker's resources ``CPU``/``MEMORY`` (MB) when it declares them (``dask worker
    --resources "CPU=4 MEMORY=8000"``), else its threads and memory limit.  Launches wait in sheaf's
    own queue (``_queue``: priority first, FIFO among equals) and are handed to Dask only when the
    pool grants them a claim, so ``idle``/``running`` are exact without asking the scheduler, node
    priorities hold across the cluster, and a request no worker could ever meet is ``Held`` with the
    pool's reason instead of waiting forever.  Requests are evaluated per attempt (``DAGNodeRetry`` in
    scope), and the task carries Dask resource restrictions ``CPU``/``MEMORY`` of the claim when every
    worker declares them, so Dask places it on a worker with room.  The worker list is read at start
    (waiting up to ``worker_timeout`` for a first worker); a scheduler whose workers change (adaptive
    dask-jobqueue clusters) is re-read every ``refresh`` seconds while nothing runs.

Results
    Each future's completion is pushed by the client's thread onto a queue that :meth:`wait` blocks
    on; finished futures are gathered in one call.  A task that raised (its worker died, the task
    was lost) is ``Exited(signal=9)`` with the reason: a failed attempt, never a success.

Cancel
    A queued launch leaves sheaf's queue; a submitted one is flagged on the workers
    (``Client.run(cancel_attempts)``: the task kills its job's process group) and its future
    cancelled (``force``: no other client's wish, nor ``fire_and_forget``, keeps it queued).  ``close``
    does this for every attempt of this backend -- only its own: other runs may share the workers --
    and waits for the tasks to return before closing the client (and the owned cluster), so nothing
    is left running or waiting to run.

Resume (``adopt``; records in ``_records``)
    With a state directory (``sheaf run``: ``DIR/sheaf-dask``) each attempt leaves a job record
    written before the task is submitted, and its task start and exit records.  On a scheduler sheaf
    does not own, tasks are ``fire_and_forget``: they run on when the engine dies.  A resumed engine
    takes the result of an attempt that ended while it was down from its exit record, adopts one the
    same scheduler still has (its exit record is looked for every 0.1 s; one the scheduler lost
    without a record is a failed attempt), and runs the rest again.  A LocalCluster the dead engine
    owned dies with it: its worker, if still there, is stopped first, then a finished attempt's record
    is taken and the others run again, once.  The engine's orphan scan (``SHEAF_ATTEMPT``) stops
    whatever is left of the old attempts on this machine, sparing the adopted ones.  Adopted attempts
    are not counted in the pool (their requests are not known until resubmitted): for the moment they
    run, Dask's own resource restrictions place the new tasks.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sheaf.backends._pool import Claim, Pool
from sheaf.backends._queue import LaunchQueue, Outcome
from sheaf.backends._records import Paths, read_record, stem_of, write_record
from sheaf.backends.dask._records import read_events, stop_dead_worker
from sheaf.backends.dask._task import cancel_attempts, run_attempt, warm
from sheaf.engine import ATTEMPT_VARIABLE, Event, Exited, Held, Launch
from sheaf.errors import EngineError

__all__ = ["DaskBackend", "pool_config"]

_CLOSE_WAIT = 30.0
_ADOPT_POLL = 0.1   # how often the exit records of adopted attempts are looked for (s)
_ADOPT_CHECK = 5.0  # how often the scheduler is asked whether it still has them (s)
_ADOPT_LOST = 2     # checks in a row that do not find one, with no exit record: it was lost

Worker = tuple[int, int]  # (CPUs, memory MB) that a worker offers


def pool_config(workers: list[Worker]) -> str:
    """A pool configuration with one partitionable slot per worker (workers of one size share a type)."""
    sizes: dict[Worker, int] = {}
    for size in workers:
        sizes[size] = sizes.get(size, 0) + 1
    lines = [f"NUM_CPUS = {sum(c for c, _ in workers)}", f"MEMORY = {sum(m for _, m in workers)}",
             f"MAX_SLOT_TYPES = {max(10, len(sizes))}"]
    for n, ((cpus, memory), count) in enumerate(sorted(sizes.items()), start=1):
        lines += [f"SLOT_TYPE_{n} = cpus={cpus}, ram={memory}", f"NUM_SLOTS_TYPE_{n} = {count}",
                  f"SLOT_TYPE_{n}_PARTITIONABLE = True"]
    return "\n".join(lines) + "\n"


def _workers(info: dict[str, Any]) -> tuple[list[Worker], bool]:
    """The workers' sizes, and whether every one declares ``CPU`` and ``MEMORY`` resources."""
    sizes: list[Worker] = []
    declared = True
    for worker in info.get("workers", {}).values():
        res = worker.get("resources") or {}
        if "CPU" in res and "MEMORY" in res:
            sizes.append((int(res["CPU"]), int(res["MEMORY"])))
        else:
            declared = False
            memory = int(worker.get("memory_limit") or 0) // 2**20 or _machine_memory()
            sizes.append((int(worker.get("nthreads") or 1), memory))
    return sizes, declared


def _machine_memory() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20


@dataclass(slots=True)
class _Adopted:
    """A killed engine's attempt taken over (``adopt``)."""

    stem: str
    task: str                          # its Dask key
    events: list[Event] | None = None  # its result, once its exit record was read
    claimed: bool = False              # the resumed engine has submitted its key
    unknown: int = 0                   # scheduler checks in a row that did not find it


class DaskBackend:
    """Run launches as tasks of a Dask cluster (see the module docstring)."""

    def __init__(self, scheduler: str | None = None, *, policy_interval: float = 60.0,
                 connect_timeout: float = 10.0, worker_timeout: float = 60.0, refresh: float = 10.0,
                 cluster_options: dict[str, Any] | None = None, state_dir: str | None = None,
                 run_id: str | None = None) -> None:
        self._cluster: Any = None
        self._client: Any = None
        self._client, self._cluster = _connect(scheduler, connect_timeout, cluster_options or {})
        self.address: str = str(self._client.scheduler_info()["address"])
        self._paths = Paths(os.path.abspath(state_dir)) if state_dir else None
        self._run_id = run_id or uuid.uuid4().hex
        self._adopted: dict[str, _Adopted] = {}  # launch key -> a killed engine's attempt taken over
        self._next_poll = self._next_check = 0.0
        self._policy_interval = policy_interval
        self._refresh = refresh
        self._prefix = f"sheaf-{uuid.uuid4().hex[:8]}-"
        self._queue = LaunchQueue()
        self._running: dict[str, tuple[Any, Claim]] = {}  # launch key -> (future, claim)
        self._tasks: dict[str, str] = {}  # Dask key (unique per submission) -> launch key
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._events: list[Event] = []
        self._closed = False
        self._next_refresh = 0.0
        self.started_total = 0
        try:
            self._read_workers(worker_timeout)
        except BaseException:
            self._client.close()
            if self._cluster is not None:
                self._cluster.close()
            raise

    # -- the cluster's shape ---------------------------------------------------------------------------

    def _read_workers(self, timeout: float) -> None:
        try:
            self._client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise EngineError(f"the Dask scheduler at {self.address} has no workers "
                              f"(waited {timeout:.0f} s)") from None
        sizes, self._declared = _workers(self._client.scheduler_info(n_workers=-1))
        self._sizes = sorted(sizes)
        self.pool = Pool(pool_config(self._sizes))
        self._client.run(warm)  # start-up's cost, not the first tasks': imports and the guard
        self._next_refresh = time.monotonic() + self._refresh

    def _maybe_refresh(self) -> None:
        if self._running or time.monotonic() < self._next_refresh:
            return
        sizes, declared = _workers(self._client.scheduler_info(n_workers=-1))
        if sorted(sizes) != self._sizes and sizes:
            self._sizes, self._declared = sorted(sizes), declared
            self.pool = Pool(pool_config(self._sizes))
            self._client.run(warm)
        self._next_refresh = time.monotonic() + self._refresh

    # -- the Backend protocol ----------------------------------------------------------------------

    def submit(self, launch: Launch) -> None:
        """Queue ``launch``; it is handed to Dask at once if a worker has room (never blocks)."""
        if self._closed:
            raise RuntimeError("DaskBackend is closed")
        adopted = self._adopted.get(launch.key)
        if adopted is not None and not adopted.claimed:  # the resumed engine takes its attempt back
            adopted.claimed = True
            self._report_adopted()
            return
        if launch.key in self._queue or launch.key in self._running or launch.key in self._adopted:
            raise ValueError(f"launch key {launch.key!r} is already submitted")
        self._queue.push(launch)
        self._schedule()

    def wait(self, timeout: float | None) -> list[Event]:
        """Block up to ``timeout`` seconds for at least one event; [] on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._events:
            self._poll_adopted()
            if self._events:
                break
            if not self._running:
                if self._queue:
                    self._maybe_refresh()
                    self._schedule()
                if not self._running and not self._watched():
                    break
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            pause = remaining if not self._watched() else min(_ADOPT_POLL, remaining or _ADOPT_POLL)
            try:
                first = self._done.get(timeout=pause) if pause != 0.0 else self._done.get_nowait()
            except queue.Empty:
                if not self._watched() or (deadline is not None and time.monotonic() >= deadline):
                    break
                continue
            self._finish([first, *_drain(self._done)])
        events, self._events = self._events, []
        return events

    def cancel(self, key: str) -> None:
        """Stop a queued or running attempt; no event is reported for it (even one not yet taken)."""
        self._events = [e for e in self._events if e.key != key]
        if self._queue.remove(key):
            return
        adopted = self._adopted.pop(key, None)
        if adopted is not None:
            if adopted.events is None:
                self._client.run(cancel_attempts, [adopted.task])
                self._client.cancel([self._future(adopted.task)], force=True)
            return
        entry = self._running.pop(key, None)
        if entry is None:
            return
        future, claim = entry
        self._tasks.pop(future.key, None)
        self._client.run(cancel_attempts, [future.key])
        future.cancel(force=True)  # force: a fire_and_forget task would otherwise still run
        self.pool.release(claim)
        self._schedule()

    def idle(self) -> int:
        return len(self._queue)

    def running(self) -> int:
        return len(self._running) + sum(1 for a in self._adopted.values() if a.events is None)

    def close(self) -> None:
        """Stop every attempt, wait for their tasks, close the client (and the owned cluster)."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._events = []
        futures = [future for future, _ in self._running.values()]
        # this backend's tasks only: other runs may share the scheduler's workers
        adopted = [a.task for a in self._adopted.values() if a.events is None]
        tasks = [f.key for f in futures] + adopted
        self._running.clear()
        self._adopted.clear()
        with contextlib.suppress(Exception):  # a scheduler already gone has nothing left to stop
            futures += [self._future(task) for task in adopted]
            if tasks:
                self._client.run(cancel_attempts, tasks)  # running ones kill their jobs
            if futures:
                self._client.cancel(futures, force=True)  # queued ones never start
            _wait_all(futures, _CLOSE_WAIT)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def statistics(self) -> dict[str, object]:
        return {"idle": self.idle(), "running": self.running(), "started_total": self.started_total,
                "scheduler": self.address, "workers": len(self._sizes), "pool": self.pool.statistics()}

    # -- resume ------------------------------------------------------------------------------------

    def adopt(self, run_id: str, attempts: Collection[tuple[str, int]]) -> set[str]:
        """Take over the attempts ``(node, attempt)`` a killed engine of run ``run_id`` had in flight
        (``_records``: finished ones by their exit records, running ones on this scheduler);
        returns their launch keys.  Their events come through ``wait`` once their keys are submitted."""
        if self._paths is None:
            return set()
        found = [(key, stem_of(run_id, key)) for node, attempt in attempts
                 for key in self._keys(run_id, node, attempt)]
        jobs = {key: read_record(self._paths.job(stem)) or {} for key, stem in found}
        live = {str(job.get("task")) for job in jobs.values()
                if self._cluster is None and job.get("scheduler") == self.address}
        known = self._known(sorted(live)) if live else set()
        for key, stem in found:
            job = jobs[key]
            if not job.get("scheduler"):  # the dead engine's own LocalCluster: stop what is left of it
                stop_dead_worker(read_record(self._paths.start(stem)))
            events = read_events(self._paths.exit(stem))
            if events is not None:
                self._adopted[key] = _Adopted(stem, str(job.get("task")), events)
            elif str(job.get("task")) in known:
                self._adopted[key] = _Adopted(stem, str(job["task"]))
        self._next_check = time.monotonic() + _ADOPT_CHECK
        return set(self._adopted)

    def _keys(self, run_id: str, node: str, attempt: int) -> list[str]:
        """The launch keys of a node attempt that were handed to Dask: ``node#attempt`` or its procs."""
        assert self._paths is not None
        key = f"{node}#{attempt}"
        if os.path.exists(self._paths.job(stem_of(run_id, key))):
            return [key]
        procs: list[str] = []
        while os.path.exists(self._paths.job(stem_of(run_id, f"{key}.{len(procs)}"))):
            procs.append(f"{key}.{len(procs)}")
        return procs

    def _external(self) -> str:
        """The scheduler a job record names: its address, or "" for a LocalCluster this engine owns."""
        return "" if self._cluster is not None else self.address

    def _known(self, tasks: list[str]) -> set[str]:
        """The ``tasks`` the scheduler still has (queued, running, or finished and kept)."""
        return set(self._client.run_on_scheduler(_tasks_known(), tasks))

    def _future(self, task: str) -> Any:
        """A future of a task another client submitted (an adopted one), to cancel it."""
        from distributed import Future

        return Future(task, self._client)

    def _watched(self) -> bool:
        return any(a.events is None for a in self._adopted.values())

    def _poll_adopted(self) -> None:
        """Read the exit records of adopted attempts still running; one lost with its worker (the
        scheduler no longer has it, and it left no record) is a failed attempt."""
        if not self._adopted or time.monotonic() < self._next_poll:
            return
        assert self._paths is not None
        self._next_poll = time.monotonic() + _ADOPT_POLL
        waiting = {key: a for key, a in self._adopted.items() if a.events is None}
        for adopted in waiting.values():
            adopted.events = read_events(self._paths.exit(adopted.stem))
        if waiting and time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + _ADOPT_CHECK
            known = self._known([a.task for a in waiting.values() if a.events is None])
            for key, adopted in waiting.items():
                if adopted.events is not None or adopted.task in known:
                    adopted.unknown = 0
                    continue
                adopted.events = read_events(self._paths.exit(adopted.stem))
                adopted.unknown += 1
                if adopted.events is None and adopted.unknown >= _ADOPT_LOST:
                    adopted.events = [_gone(key, "the Dask scheduler no longer has the adopted task and it "
                                                 "left no exit record")]
        self._report_adopted()

    def _report_adopted(self) -> None:
        for key, adopted in list(self._adopted.items()):
            if adopted.claimed and adopted.events is not None:
                del self._adopted[key]
                self._events.extend(adopted.events)

    def _records(self, launch: Launch, task: str) -> tuple[str, str] | None:
        """The job record of an attempt handed to Dask (written now), and where its task writes its
        start and exit records; None without a state directory."""
        if self._paths is None:
            return None
        token = launch.env.get(ATTEMPT_VARIABLE)
        stem = stem_of(token.split("/", 1)[0] if token else self._run_id, launch.key)
        start, exit_ = self._paths.start(stem), self._paths.exit(stem)
        for stale in (start, exit_):  # an earlier submission of this key (after a cancel or a hold)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        write_record(self._paths.job(stem), {"task": task, "key": launch.key, "scheduler": self._external()})
        return start, exit_

    # -- scheduling ------------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._queue:
            self._queue.schedule(self._attempt)

    def _attempt(self, launch: Launch, shape: tuple[object, ...]) -> Outcome:
        sig = shape[0]
        assert isinstance(sig, tuple)
        claim = self.pool.claim(launch.job_ad, sig)
        if claim is None:
            reason = self.pool.unrunnable(launch.job_ad, sig)
            if reason is None:
                return "blocked"
            self._events.append(Held(launch.key, f"no Dask worker could run it: {reason}"))
            return "dropped"
        cpus, memory = max(claim.cpus, 1), max(claim.memory, 1)
        resources = {"CPU": cpus, "MEMORY": memory} if self._declared and not claim.local else None
        task = f"{self._prefix}{self.started_total}-{launch.key}"
        future = self._client.submit(run_attempt, launch, cpus, memory, self._policy_interval, task,
                                     self._records(launch, task), key=task, pure=False, retries=0,
                                     priority=launch.priority, resources=resources)
        if self._cluster is None:
            from distributed import fire_and_forget

            fire_and_forget(future)  # it runs on if this engine dies: a resumed one adopts it
        future.add_done_callback(self._done.put)
        self._running[launch.key] = (future, claim)
        self._tasks[future.key] = launch.key
        self.started_total += 1
        return "started"

    def _finish(self, futures: list[Any]) -> None:
        """Turn finished futures into events (those of cancelled attempts are dropped).  The slots are
        refilled first, so the next tasks travel while the results are fetched (one call for all)."""
        mine = [(key, *self._running.pop(key)) for key in (self._tasks.pop(f.key, None) for f in futures)
                if key is not None and key in self._running]
        for _, _, claim in mine:
            self.pool.release(claim)
        if not mine:
            return
        self._schedule()
        good = [(key, future) for key, future, _ in mine if future.status == "finished"]
        for events in self._client.gather([future for _, future in good]) if good else ():
            self._events.extend(events)
        for key, future, _ in mine:
            if future.status != "finished":
                self._events.append(_lost(key, future))


def _lost(key: str, future: Any) -> Exited:
    """A task that raised or was lost (its worker died): a failed attempt, never a success."""
    try:
        exc = future.exception(timeout=_CLOSE_WAIT)
    except Exception as error:  # noqa: BLE001 - cancelled by the scheduler, or gone with it
        exc = error
    return _gone(key, f"the Dask task was lost: {type(exc).__name__}: {exc}")


def _gone(key: str, reason: str) -> Exited:
    now = time.time()
    return Exited(key, None, signal.SIGKILL.value, reason, now, now)


def _tasks_known() -> Any:
    """What the scheduler runs to say which of some task keys it has.  Made here, so that it travels
    by value: a scheduler started without sheaf installed runs it too."""

    def known(tasks: list[str], dask_scheduler: Any = None) -> list[str]:
        return [task for task in tasks if task in dask_scheduler.tasks]

    return known


def _drain(done: queue.SimpleQueue[Any]) -> list[Any]:
    items: list[Any] = []
    with contextlib.suppress(queue.Empty):
        while True:
            items.append(done.get_nowait())
    return items


def _wait_all(futures: list[Any], timeout: float) -> None:
    from distributed import wait

    if futures:
        with contextlib.suppress(TimeoutError):
            wait(futures, timeout=timeout)


def _connect(scheduler: str | None, timeout: float, options: dict[str, Any]) -> tuple[Any, Any]:
    """A client of ``scheduler``, or of a new ``LocalCluster`` (returned too, to be closed)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise EngineError("the Dask backend needs the distributed package "
                          "(pip install 'sheaf-wms[dask]' or pip install distributed)") from None
    if scheduler is not None:
        try:
            return Client(scheduler, timeout=timeout, set_as_default=False), None
        except (OSError, TimeoutError) as exc:
            raise EngineError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cpus = len(os.sched_getaffinity(0))
    settings = {"n_workers": 1, "threads_per_worker": cpus, "processes": True, "memory_limit": 0,
                "resources": {"CPU": cpus, "MEMORY": _machine_memory()}, "dashboard_address": ":0",
                **options}
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(**settings)
        return Client(cluster, set_as_default=False), cluster

