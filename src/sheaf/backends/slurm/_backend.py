"""``SlurmBackend``: runs node attempts as Slurm batch jobs, one ``sbatch`` per attempt.

DAG dependencies stay in sheaf's engine (measured: as fast as Slurm's ``afterok``, and PRE/POST,
RETRY, throttles and rescue DAGs keep working); Slurm only runs attempts whose parents are done.

Submission
    Each attempt's launch is written as a spec file into the backend's state directory
    (``_records``) and submitted with ``sbatch`` (``_render.render``: resources from the
    job ad, evaluated per attempt; job name ``sheaf-<stem>`` and a comment naming run, node and
    attempt; ``--no-requeue``).  The batch script is a Python script (no shell) that runs
    ``_job.main``, the wrapper that reproduces the launch exactly and polices it.  Clusters: a
    seqexec cluster is one job; a Decaf cluster (its script runs ``srun --multi-prog``) or a PMC
    cluster (``mpiexec`` inside) asks for several tasks or nodes and runs as one multi-task
    allocation, its job given the allocation's ``SLURM_*`` variables (``_render.multi_task``).
    Launches wait in the backend's own queue, highest priority first then FIFO, while the cap of
    this run's jobs in Slurm (``max_queued``) is reached or the rate limit (``RateLimit``) has no
    token.  A transient controller error backs off (1 s doubling to 30 s, DAGMan's back-off) and submits
    again, at most the launch's ``submit_attempts`` times (``DAGMAN_MAX_SUBMIT_ATTEMPTS``, default 6),
    then the attempt is ``Held`` with sbatch's own message; a QOS/MaxSubmit refusal puts the attempt
    back and lowers the cap to what Slurm accepted; any other refusal is ``Held`` with sbatch's message.

Results
    The wrapper's records are the result: ``wait`` reads the state directory's inbox (a directory as
    small as the jobs in flight) when a record is renamed into it (inotify, ``_dirwatch``) and at least
    every ``poll_interval`` (records written by another host over a shared file system raise no inotify
    event). A start record is reported through ``started()`` (the job's EXECUTE). ``squeue`` is only the
    safety net, one batched call every ``squeue_interval`` (60 s): a job that left the queue, or that
    Slurm lists as ended, with no exit record after ``vanish_grace`` seconds is a **failed** attempt
    (reported as killed, with the reason), never a success: squeue forgets a job ``MinJobAge`` after it
    ends, and "gone" says nothing about how it ended. ``sacct`` is never used.

Cancel and close
    ``cancel`` takes a queued launch out of the backend's queue, or ``scancel``s its job; cancels
    that come in a burst (the engine stopping many nodes) are sent as one ``scancel`` with many ids
    at the next ``wait``.  ``close`` cancels every job of this backend.

Resume (``adopt``)
    A stem is derived from the run id and the launch key, so an engine resumed after ``kill -9``
    finds each attempt's records -- and, through ``squeue --name``, a job submitted just before the
    crash whose id was never written.  ``adopt`` takes over the attempts still queued or running
    and reports the exit records of those that ended meanwhile (even one the dead engine had been
    told of but not journaled); other jobs of the run still in Slurm are cancelled.

Held jobs
    A job the wrapper stopped by ``periodic_hold`` is reported ``Suspended``; the backend then
    evaluates the job's ``periodic_release``/``periodic_remove`` every policy interval
    (``_periodic.decide``) and submits it again (``Released``) or reports it ``Removed``.
"""

from __future__ import annotations

import heapq
import itertools
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from sheaf.backends._periodic import (
    IDLE,
    JobRecord,
    decide,
    decide_at_exit,
    has_policy,
    policy_interval,
)
from sheaf.backends._records import Paths, read_record, stem_of, write_record
from sheaf.backends.slurm._ctl import RateLimit, SlurmCommands
from sheaf.backends.slurm._dirwatch import DirectoryWatch
from sheaf.backends.slurm._records import JOB_PREFIX, history_of, launch_of, spec_of
from sheaf.backends.slurm._render import launcher, memory_request, multi_task, render
from sheaf.engine import (
    ATTEMPT_VARIABLE,
    Event,
    Exited,
    Held,
    Launch,
    Released,
    Removed,
    Requeued,
    Started,
    Suspended,
    needs_expansion,
)
from sheaf.errors import UsageError

__all__ = ["SlurmBackend", "from_options"]

_ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
                    "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED"})
_BACKOFF_MAX = 30.0
_CANCEL_BATCH = 0.2  # a cancel this soon after the last scancel waits for the next wait()


@dataclass(slots=True)
class _Job:
    launch: Launch
    stem: str
    job: str                      # Slurm job id
    started: bool = False
    gone_since: float | None = None
    claimed: bool = True          # False for an adopted job until the engine submits its key
    parked: Event | None = None   # its event, held back until then


class SlurmBackend:
    """Run launches as Slurm jobs (see the module docstring)."""

    def __init__(self, state_dir: str, *, max_queued: int = 1000, rate: RateLimit | None = None,
                 squeue_interval: float = 60.0, vanish_grace: float = 30.0, poll_interval: float = 0.05,
                 env: Mapping[str, str] | None = None, run_id: str | None = None,
                 config: Mapping[str, str] | None = None, python: str = sys.executable,
                 extra_args: Iterable[str] = (), execute: str | None = None,
                 mpiexec: Iterable[str] = ("mpiexec",), clock: Callable[[], float] = time.time) -> None:
        if max_queued < 1:
            raise ValueError(f"max_queued must be >= 1 (got {max_queued})")
        self.paths = Paths(os.path.abspath(state_dir))
        self.commands = SlurmCommands(env)
        self.cap = self.max_queued = max_queued
        self.rate = rate if rate is not None else RateLimit()
        self.squeue_interval, self.vanish_grace = squeue_interval, vanish_grace
        self.poll_interval = poll_interval
        self.run_id = run_id or uuid.uuid4().hex
        self.extra_args = tuple(extra_args)
        self.execute = execute  # where a job with file transfer gets its sandbox on the node
        self.mpiexec = list(mpiexec)  # what starts a PMC cluster across its allocation's tasks
        self._policy_every = policy_interval(config or {})
        self._clock = clock
        self._script = self._write_script(python)
        self._watch = DirectoryWatch(self.paths.inbox)
        self._waiting: list[tuple[int, int, Launch]] = []   # heap: (-priority, sequence, launch)
        self._waiting_keys: dict[str, int] = {}  # queued key -> sequence of its live heap entry
        self._seq = itertools.count()
        self._jobs: dict[str, _Job] = {}
        self._by_stem: dict[str, str] = {}
        self._held: dict[str, JobRecord] = {}     # held by periodic_hold, waiting for periodic_release
        self._history: dict[str, JobRecord] = {}  # keys held at least once: their runs and holds so far
        self._events: list[Event] = []
        self._started: list[Started] = []
        self._cancels: list[str] = []
        self._last_scancel = -1e18
        self._backoff, self._backoff_until = 0.0, 0.0
        self._failed_submits: dict[str, int] = {}  # launch key -> its submissions that failed so far
        self._next_squeue = time.monotonic() + squeue_interval
        self._next_policy = 0.0
        self._closed = False
        self.submitted_total = 0

    def _write_script(self, python: str) -> str:
        path = os.path.join(self.paths.root, "sheaf-job.py")
        text = (f"#!{python}\n# sheaf's Slurm job wrapper: runs one attempt (sheaf.backends.slurm._job)\n"
                "import os, sys\nfrom sheaf.backends.slurm._job import main\ncode = main(sys.argv[1:])\n"
                "sys.stdout.flush()\nsys.stderr.flush()\nos._exit(code)  # no interpreter teardown\n")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
        return path

    # -- the Backend protocol ----------------------------------------------------------------------

    def submit(self, launch: Launch) -> None:
        """Queue ``launch``; it is submitted to Slurm at once when the cap and the rate allow."""
        if self._closed:
            raise RuntimeError("SlurmBackend is closed")
        key = launch.key
        adopted = self._jobs.get(key)
        if adopted is not None and not adopted.claimed:  # the resumed engine takes its job back
            adopted.claimed = True
            if adopted.parked is not None:
                del self._jobs[key]
                self._events.append(adopted.parked)
            return
        if key in self._waiting_keys or key in self._jobs or key in self._held:
            raise ValueError(f"launch key {key!r} is already submitted")
        self._push(launch)
        self._pump()

    def wait(self, timeout: float | None) -> list[Event]:
        """Block up to ``timeout`` seconds for at least one event; [] on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._flush_cancels(force=True)
            self._pump()
            self._collect()
            now = time.monotonic()
            if self._held and now >= self._next_policy:
                self._apply_policy(now)
            if now >= self._next_squeue and self._jobs:
                self._safety_net(now)
            if self._events or self._closed:
                return self._drain()
            if not self._jobs and not self._waiting and not self._held:
                return []
            if deadline is not None and now >= deadline:
                return []
            pause = self.poll_interval if deadline is None else min(self.poll_interval, deadline - now)
            self._watch.wait(pause)  # a record renamed into the inbox wakes it at once

    def cancel(self, key: str) -> None:
        """Stop a queued or running attempt; no event is reported for it."""
        self._events = [e for e in self._events if e.key != key]
        self._held.pop(key, None)
        self._history.pop(key, None)
        if self._waiting_keys.pop(key, None) is not None:
            return  # its heap entry is skipped when popped
        job = self._jobs.pop(key, None)
        if job is None:
            return
        self._by_stem.pop(job.stem, None)
        if job.job:  # an adopted attempt known only by its exit record has no job to cancel
            self._cancels.append(job.job)
        self._flush_cancels(force=False)

    def idle(self) -> int:
        self._collect()
        return len(self._waiting_keys) + sum(1 for job in self._jobs.values() if not job.started)

    def running(self) -> int:
        self._collect()
        return sum(1 for job in self._jobs.values() if job.started)

    def close(self) -> None:
        """Cancel every job of this backend (one batched ``scancel``)."""
        if self._closed:
            return
        self._closed = True
        self._waiting.clear()
        self._waiting_keys.clear()
        self._held.clear()
        self._cancels.extend(job.job for job in self._jobs.values() if job.job)
        self._jobs.clear()
        self._by_stem.clear()
        self._flush_cancels(force=True)
        self._events.clear()
        self._watch.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def statistics(self) -> dict[str, object]:
        return {"idle": len(self._waiting_keys), "in_slurm": len(self._jobs), "cap": self.cap,
                "submitted_total": self.submitted_total, "calls": dict(self.commands.calls),
                "rate": self.rate.statistics()}

    # -- resume ------------------------------------------------------------------------------------

    def adopt(self, run_id: str, attempts: Collection[tuple[str, int]]) -> set[str]:
        """Take over the attempts ``(node, attempt)`` a killed engine of run ``run_id`` had in flight;
        returns the launch keys taken over (module docstring).  Their events come through ``wait``."""
        listing = self.commands.squeue("%i %j %T %k") or []
        by_name = {row[1]: row for row in listing if len(row) >= 3}
        adopted: set[str] = set()
        for node, attempt in attempts:
            for key in self._keys_of(run_id, node, attempt):
                if self._adopt_one(run_id, key, by_name):
                    adopted.add(key)
        mine = {self._jobs[key].job for key in adopted}
        strays = [row[0] for row in listing
                  if len(row) == 4 and f"run={run_id} " in row[3] + " " and row[0] not in mine
                  and row[2] not in _ENDED]
        self.commands.scancel(strays)
        self._next_squeue = time.monotonic()  # check at once what the adopted jobs are doing
        return adopted

    def _keys_of(self, run_id: str, node: str, attempt: int) -> list[str]:
        """The launch keys of a node attempt that have a spec: ``node#attempt`` or its procs."""
        key = f"{node}#{attempt}"
        if os.path.exists(self.paths.spec(stem_of(run_id, key))):
            return [key]
        procs: list[str] = []
        for proc in itertools.count():
            one = f"{key}.{proc}"
            if not os.path.exists(self.paths.spec(stem_of(run_id, one))):
                return procs
            procs.append(one)
        return procs  # pragma: no cover - the loop returns

    def _adopt_one(self, run_id: str, key: str, by_name: Mapping[str, list[str]]) -> bool:
        stem = stem_of(run_id, key)
        spec = read_record(self.paths.spec(stem))
        if spec is None:
            return False
        taken = self.paths.taken(stem)
        if os.path.exists(taken):  # the dead engine was told, but may not have journaled it
            os.replace(taken, self.paths.exit(stem))
        record = read_record(self.paths.job(stem))
        row = by_name.get(JOB_PREFIX + stem)
        job = str(record["job"]) if record is not None else (row[0] if row is not None else None)
        if job is None and not os.path.exists(self.paths.exit(stem)):
            return False  # never reached Slurm: the engine submits it again
        launch = launch_of(spec)
        self._jobs[key] = _Job(launch, stem, job or "", started=os.path.exists(self.paths.seen(stem)),
                               claimed=False)
        self._by_stem[stem] = key
        return True

    # -- submission --------------------------------------------------------------------------------

    def _push(self, launch: Launch) -> None:
        seq = next(self._seq)
        heapq.heappush(self._waiting, (-launch.priority, seq, launch))
        self._waiting_keys[launch.key] = seq

    def _pump(self) -> None:
        """Submit queued launches while the cap, the rate and any back-off allow."""
        while self._waiting and len(self._jobs) < self.cap and time.monotonic() >= self._backoff_until:
            _, seq, launch = self._waiting[0]
            if self._waiting_keys.get(launch.key) != seq:  # cancelled while queued (maybe queued again)
                heapq.heappop(self._waiting)
                continue
            if not self.rate.try_acquire():
                return
            heapq.heappop(self._waiting)
            del self._waiting_keys[launch.key]
            self._sbatch(launch)

    def _run_id_of(self, launch: Launch) -> str:
        token = launch.env.get(ATTEMPT_VARIABLE)
        return token.split("/", 1)[0] if token else self.run_id

    def _sbatch(self, launch: Launch) -> None:
        run_id = self._run_id_of(launch)
        stem = stem_of(run_id, launch.key)
        spec = self.paths.spec(stem)
        history = self._history.get(launch.key)
        write_record(spec, spec_of(launch, history=history_of(history) if history is not None else None,
                                   memory_limit=memory_request(launch.job_ad),
                                   policy_interval=self._policy_every, expand=needs_expansion(launch),
                                   policy=has_policy(launch.job_ad),
                                   allocation=multi_task(launch.job_ad), execute=self.execute,
                                   launcher=self.mpiexec if launcher(launch.job_ad) else None))
        for stale in (self.paths.start(stem), self.paths.seen(stem), self.paths.exit(stem),
                      self.paths.taken(stem)):
            if os.path.exists(stale):
                os.unlink(stale)  # an earlier submission of this key (released after a hold)
        argv = render(launch, stem=stem, run_id=run_id, script=self._script, spec=spec,
                      log=os.path.join(self.paths.root, "jobs", stem + ".log"), extra=self.extra_args)
        result = self.commands.sbatch(argv)
        if result.kind == "ok":
            self._backoff = 0.0
            self._failed_submits.pop(launch.key, None)
            write_record(self.paths.job(stem), {"job": result.job, "key": launch.key})
            self._jobs[launch.key] = _Job(launch, stem, result.job)
            self._by_stem[stem] = launch.key
            self.submitted_total += 1
        elif result.kind == "error":
            self._events.append(Held(launch.key, f"sbatch refused the job: {result.message}"))
        elif result.kind == "transient" and self._submit_failed(launch):
            tries = launch.submit_attempts
            self._events.append(Held(launch.key, f"sbatch failed {tries} time(s) (DAGMAN_MAX_SUBMIT_ATTEMPTS "
                                                 f"= {tries}): {result.message}"))
        else:
            if result.kind == "limit":
                self.cap = max(1, len(self._jobs))
            self._backoff = min(_BACKOFF_MAX, max(1.0, self._backoff * 2))
            self._backoff_until = time.monotonic() + self._backoff
            self._push(launch)

    def _submit_failed(self, launch: Launch) -> bool:
        """Count a failed submission of ``launch``: True once it has failed its last allowed time."""
        failures = self._failed_submits.get(launch.key, 0) + 1
        if failures >= launch.submit_attempts:
            self._failed_submits.pop(launch.key, None)
            return True
        self._failed_submits[launch.key] = failures
        return False

    def _flush_cancels(self, *, force: bool) -> None:
        if not self._cancels:
            return
        now = time.monotonic()
        if not force and now - self._last_scancel < _CANCEL_BATCH:
            return
        ids, self._cancels = self._cancels, []
        self.commands.scancel(ids)
        self._last_scancel = now

    # -- results -----------------------------------------------------------------------------------

    def _collect(self) -> None:
        """Read the records in the inbox: starts for ``started()``, exits turned into events."""
        try:
            names = os.listdir(self.paths.inbox)
        except FileNotFoundError:
            return
        for name in names:
            stem, _, kind = name.partition(".")
            if kind == "start":
                self._take_start(stem)
            elif kind == "exit":
                self._take_exit(stem)

    def _take_start(self, stem: str) -> None:
        """A start record: the job runs (``started()`` reports it, so its EXECUTE is written now)."""
        path = self.paths.start(stem)
        record = read_record(path) or {}
        os.replace(path, self.paths.seen(stem))
        key = self._by_stem.get(stem)
        if key is None:
            return
        self._jobs[key].started = True
        self._started.append(Started(key, 0, 0, float(record.get("started") or self._clock()),
                                     record.get("host")))

    def started(self) -> list[Started]:
        """The attempts whose start record arrived since the last call (``Backend.started``).  The
        pid is 0: the job's processes are on a Slurm node, and a resumed engine finds the job
        through ``adopt``, not by a local process.  The records are read by ``wait``, which the
        engine calls before it asks."""
        started, self._started = self._started, []
        return started

    def _take_exit(self, stem: str) -> None:
        path = self.paths.exit(stem)
        record = read_record(path)
        if record is None:
            return
        os.replace(path, self.paths.taken(stem))
        key = self._by_stem.pop(stem, None)
        if key is None:
            return  # cancelled, or not ours
        job = self._jobs[key]
        event = self._event(job, record)
        if job.claimed and isinstance(event, Exited) and has_policy(job.launch.job_ad):
            event = self._at_exit(job, event)
        if not isinstance(event, Suspended | Requeued):
            self._history.pop(key, None)
        if job.claimed:
            del self._jobs[key]
            self._events.append(event)
            if isinstance(event, Requeued):
                self._push(job.launch)
        else:
            job.parked = event

    def _event(self, job: _Job, record: Mapping[str, Any]) -> Event:
        key, kind, reason = job.launch.key, record.get("kind", "exited"), record.get("reason")
        if kind == "held":
            return Held(key, reason or "the job could not be started")
        if kind == "remove":
            return Removed(key, reason or "removed by periodic_remove")
        if kind == "hold":
            self._held[key] = self._hold_record(job, record)
            self._next_policy = min(self._next_policy or 1e18, time.monotonic() + self._policy_every)
            return Suspended(key, reason or "held by periodic_hold", int(record.get("code") or 3),
                             int(record.get("subcode") or 0))
        return Exited(key, record.get("exit_code"), record.get("signal"), reason,
                      float(record.get("started") or 0.0), float(record.get("ended") or 0.0),
                      record.get("slot"))

    def _at_exit(self, job: _Job, exited: Exited) -> Event:
        """The schedd's policy for a job that exited (``_periodic.decide_at_exit``): held, removed, queued
        again by its ``OnExitRemove`` (its record kept, its next run counting on), or gone."""
        key = job.launch.key
        record = self._history.get(key) or JobRecord(job.launch, exited.started, exited.started)
        record.started(exited.started)
        action = decide_at_exit(record, exited.ended, exited.exit_code, exited.signal)
        if action is None:
            return exited
        what, reason, code, subcode = action
        if what == "remove":
            return Removed(key, reason)
        self._history[key] = record
        if what == "requeue":
            return Requeued(key, exited.exit_code, exited.signal, reason)
        record.hold(exited.ended, reason, subcode, code)
        self._held[key] = record
        self._next_policy = min(self._next_policy or 1e18, time.monotonic() + self._policy_every)
        return Suspended(key, reason, code, subcode)

    def _hold_record(self, job: _Job, record: Mapping[str, Any]) -> JobRecord:
        """The schedd's record of a held job: its earlier runs and holds (``history``) plus this one."""
        now = self._clock()
        held = self._history.get(job.launch.key) or JobRecord(job.launch, now, now)
        started, ended = float(record.get("started") or now), float(record.get("ended") or now)
        held.started(started)
        held.hold(ended, str(record.get("reason") or ""), int(record.get("subcode") or 0),
                  int(record.get("code") or 3))
        self._history[job.launch.key] = held
        return held

    def _safety_net(self, now: float) -> None:
        """One batched squeue: jobs gone (or ended) with no exit record fail after the grace."""
        self._next_squeue = now + self.squeue_interval
        listing = self.commands.squeue()
        if listing is None:
            return  # the controller did not answer: judge nothing now
        self._collect()  # an exit record written since the last poll wins over the listing
        states = {row[0]: row[1] for row in listing if len(row) == 2}
        for key, job in list(self._jobs.items()):
            if job.parked is not None:
                continue
            state = states.get(job.job)
            if state is not None and state not in _ENDED:
                job.gone_since = None
                continue
            if job.gone_since is None:
                job.gone_since = now
                self._next_squeue = min(self._next_squeue, now + self.vanish_grace)
            elif now - job.gone_since >= self.vanish_grace and not os.path.exists(self.paths.exit(job.stem)):
                self._vanished(key, job, state)
            else:
                self._next_squeue = min(self._next_squeue, job.gone_since + self.vanish_grace)

    def _vanished(self, key: str, job: _Job, state: str | None) -> None:
        self._by_stem.pop(job.stem, None)
        seen = f"Slurm lists it {state}" if state else "it left the queue"
        ended = self._clock()
        event = Exited(key, None, 9, f"Slurm job {job.job or '?'} ended without an exit record ({seen}): "
                                     "the attempt failed", ended, ended, None)
        if job.claimed:
            del self._jobs[key]
            self._events.append(event)
        else:
            job.parked = event

    def _apply_policy(self, now: float) -> None:
        self._next_policy = now + self._policy_every
        wall = self._clock()
        for key, record in list(self._held.items()):
            action = decide(record, wall)
            if action is None:
                continue
            del self._held[key]
            if action[0] == "release":
                record.stopped(wall, IDLE)
                self._events.append(Released(key))
                self._push(record.launch)
            elif action[0] == "remove":
                self._history.pop(key, None)
                self._events.append(Removed(key, action[1]))

    def _drain(self) -> list[Event]:
        events, self._events = self._events, []
        return events


_SETTINGS: dict[str, tuple[str, Callable[[str], object]]] = {
    "SHEAF_SLURM_MAX_QUEUED": ("max_queued", int),
    "SHEAF_SLURM_SQUEUE_INTERVAL": ("squeue_interval", float),
    "SHEAF_SLURM_VANISH_GRACE": ("vanish_grace", float),
    "SHEAF_SLURM_POLL_INTERVAL": ("poll_interval", float),
    "SHEAF_SLURM_SBATCH_ARGS": ("extra_args", shlex.split),
    "SHEAF_SLURM_EXECUTE": ("execute", str),
    "SHEAF_SLURM_MPIEXEC": ("mpiexec", shlex.split),
}


def from_options(*, state_dir: str, env: Mapping[str, str] | None = None) -> SlurmBackend:
    """The registry's factory (``sheaf run --backend slurm``): state under ``state_dir``, the
    Slurm client configuration from the environment (``SLURM_CONF``), and sheaf's settings from
    ``SHEAF_SLURM_*`` (``MAX_QUEUED``, ``SQUEUE_INTERVAL``, ``VANISH_GRACE``, ``POLL_INTERVAL``,
    ``SBATCH_ARGS``, ``EXECUTE``, ``MPIEXEC``, ``RATE`` and ``BURST``); a bad value is a usage error
    naming the variable."""
    env = env if env is not None else os.environ
    kwargs: dict[str, Any] = {}
    for variable, (name, convert) in _SETTINGS.items():
        if env.get(variable):
            kwargs[name] = _setting(variable, env[variable], convert)
    missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c, path=env.get("PATH")) is None]
    if missing:
        raise UsageError(f"the Slurm backend needs the Slurm client commands; not found on PATH: "
                         f"{', '.join(missing)}")
    rate = _setting("SHEAF_SLURM_RATE", env.get("SHEAF_SLURM_RATE") or "50", float)
    burst = _setting("SHEAF_SLURM_BURST", env.get("SHEAF_SLURM_BURST") or "100", int)
    try:
        return SlurmBackend(state_dir, rate=RateLimit(rate, burst), env=env, **kwargs)
    except ValueError as exc:
        raise UsageError(f"Slurm backend settings: {exc}") from None


def _setting(variable: str, text: str, convert: Callable[[str], Any]) -> Any:
    try:
        return convert(text)
    except ValueError:
        raise UsageError(f"{variable}={text!r} is not a valid value") from None
