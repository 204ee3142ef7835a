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
    Each attempt is one Dask task, ``_dask_task.run_attempt``, which runs the ``Launch`` through the
    local backend's launch path on the worker (see there: argv, environment, files, memory watch,
    ``periodic_*``, ``$$()``).  A clustered job (seqexec, PMC) is one ``Launch``, so one task: per-task
    Dask overhead (measured: 110-200 single-command tasks/s here, against ~950/s for a plain thread
    pool) is paid once per cluster.  Dependencies, PRE/POST scripts, retries, throttles and rescue
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
    cancelled.  ``close`` does this for every attempt and waits for the tasks to return before
    closing the client (and the owned cluster), so nothing is left running.

Resume: the engine re-runs the nodes a killed engine left in flight; on this machine its orphan scan
(``SHEAF_ATTEMPT`` in the job's environment) stops the old processes first.  A cluster the dead
engine owned is gone with it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import time
import uuid
from typing import Any

from sheaf.backends._dask_task import cancel_attempts, run_attempt
from sheaf.backends._pool import Claim, Pool
from sheaf.backends._queue import LaunchQueue, Outcome
from sheaf.engine import Event, Exited, Held, Launch
from sheaf.errors import EngineError

__all__ = ["DaskBackend", "pool_config"]

_CLOSE_WAIT = 30.0

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


class DaskBackend:
    """Run launches as tasks of a Dask cluster (see the module docstring)."""

    def __init__(self, scheduler: str | None = None, *, policy_interval: float = 60.0,
                 connect_timeout: float = 10.0, worker_timeout: float = 60.0, refresh: float = 10.0,
                 cluster_options: dict[str, Any] | None = None) -> None:
        self._cluster: Any = None
        self._client: Any = None
        self._client, self._cluster = _connect(scheduler, connect_timeout, cluster_options or {})
        self.address: str = str(self._client.scheduler_info()["address"])
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
        self._next_refresh = time.monotonic() + self._refresh

    def _maybe_refresh(self) -> None:
        if self._running or time.monotonic() < self._next_refresh:
            return
        sizes, declared = _workers(self._client.scheduler_info(n_workers=-1))
        if sorted(sizes) != self._sizes and sizes:
            self._sizes, self._declared = sorted(sizes), declared
            self.pool = Pool(pool_config(self._sizes))
        self._next_refresh = time.monotonic() + self._refresh

    # -- the Backend protocol ----------------------------------------------------------------------

    def submit(self, launch: Launch) -> None:
        """Queue ``launch``; it is handed to Dask at once if a worker has room (never blocks)."""
        if self._closed:
            raise RuntimeError("DaskBackend is closed")
        if launch.key in self._queue or launch.key in self._running:
            raise ValueError(f"launch key {launch.key!r} is already submitted")
        self._queue.push(launch)
        self._schedule()

    def wait(self, timeout: float | None) -> list[Event]:
        """Block up to ``timeout`` seconds for at least one event; [] on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._events:
            if not self._running:
                if self._queue:
                    self._maybe_refresh()
                    self._schedule()
                if not self._running:
                    break
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                first = self._done.get(timeout=remaining) if remaining != 0.0 else self._done.get_nowait()
            except queue.Empty:
                break
            self._finish([first, *_drain(self._done)])
        events, self._events = self._events, []
        return events

    def cancel(self, key: str) -> None:
        """Stop a queued or running attempt; no event is reported for it (even one not yet taken)."""
        self._events = [e for e in self._events if e.key != key]
        if self._queue.remove(key):
            return
        entry = self._running.pop(key, None)
        if entry is None:
            return
        future, claim = entry
        self._tasks.pop(future.key, None)
        self._client.run(cancel_attempts, [future.key])
        future.cancel()
        self.pool.release(claim)
        self._schedule()

    def idle(self) -> int:
        return len(self._queue)

    def running(self) -> int:
        return len(self._running)

    def close(self) -> None:
        """Stop every attempt, wait for their tasks, close the client (and the owned cluster)."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self._events = []
        futures = [future for future, _ in self._running.values()]
        self._running.clear()
        with contextlib.suppress(Exception):  # a scheduler already gone has nothing left to stop
            self._client.run(cancel_attempts, None)
            _wait_all(futures, _CLOSE_WAIT)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def statistics(self) -> dict[str, object]:
        return {"idle": self.idle(), "running": self.running(), "started_total": self.started_total,
                "scheduler": self.address, "workers": len(self._sizes), "pool": self.pool.statistics()}

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
        future = self._client.submit(run_attempt, launch, cpus, memory, self._policy_interval, task, key=task,
                                     pure=False, retries=0,
                                     priority=launch.priority, resources=resources)
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
    now = time.time()
    return Exited(key, None, signal.SIGKILL.value, f"the Dask task was lost: {type(exc).__name__}: {exc}",
                  now, now)


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
                          "(pip install 'sheaf[dask]' or pip install distributed)") from None
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

