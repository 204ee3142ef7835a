"""A discrete-event simulation of an executable workflow on a platform, under an overhead model.

Policy (the engine's and the backends', so that the simulation replays what a run would do)
-------------------------------------------------------------------------------------------
- A node is *ready* when its last parent is done (roots at time 0).  Ready nodes wait in one queue
  per CATEGORY keyed ``(-priority, seq)``, ``seq`` growing as nodes become ready (first ready, first
  submitted) or shrinking with depth-first submission -- DAGMan's ``DagPriorityQ`` as the engine
  keeps it.  A node is submitted while the DAG's ``MAXJOBS`` and its category's ``MAXJOBS`` allow;
  the tokens come back when its job ends.  Among categories the best key goes first.
- Submission costs the ``engine`` delay; the job reaches its site's queue ``submit`` later, and the
  site starts queued jobs first come, first served while its CPUs (and memory, when the platform
  states it) suffice -- the local pool's and a batch scheduler's FIFO -- and no sooner than the
  site's ``dispatch`` interval after its previous start.  A job asking for more CPUs than its site
  has is given the whole site.
- A job holds its CPUs for ``launch`` plus its work: its tasks one after another (seqexec), or
  spread over its cores longest first (PMC, ``parallel`` > 1), each task paying ``task``; a data
  job's bytes move at ``bandwidth``.  ``post`` after it ends the node is done and its children
  are released.  A NOOP node (a node with no job) takes no slot and no token.

Each replicate draws every delay from its distribution (``_overheads``) and one speed factor
for the run, which scales all of them, every runtime and the dispatch intervals; the prediction
is the median of the replicates' makespans with their p10 and p90.  When every site shares one
speed spread, a factor scaling every time in a run scales its makespan alike, so each event-loop
run is made at factor 1 and multiplied by many speed draws (``_SAMPLES`` makespans in all).  One
more run at the means gives the schedule, the utilisation and the per-level breakdown.  The
critical path is the DAG's longest path of mean job durations (overheads included), whatever the
slots: the makespan on an unbounded platform.

Cost: O((V + E) log V) per replicate; the replicates share their random draws per component
(numpy, vectorised), the event loop is plain Python over lists.
"""

from __future__ import annotations

__all__ = ["LevelFigures", "Platform", "Prediction", "SimJob", "SimWorkflow", "simulate"]

import heapq
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sheaf.model import kahn_levels
from sheaf.predict._overheads import COMPONENTS, OverheadModel, Overheads


@dataclass(slots=True)
class SimJob:
    """One node of the executable workflow, as the simulation needs it."""

    id: str
    level: int = 0
    runtimes: tuple[float, ...] = ()  # its tasks' runtimes, seconds
    spread: float = 0.0               # coefficient of variation of one task's runtime
    parallel: int = 1                 # cores its tasks share (PMC); 1: one after another
    cpus: int = 1
    memory: float = 0.0               # MB; 0: not limited
    priority: int = 0
    category: str | None = None
    site: str | None = None
    bytes: float = 0.0                # what a data job moves
    extra: float = 0.0                # seconds of work that are no task's (a data job's, as measured)
    noop: bool = False


@dataclass(slots=True)
class SimWorkflow:
    jobs: list[SimJob]
    edges: list[tuple[int, int]]      # (parent, child) positions in ``jobs``
    maxjobs: int = 0                  # 0: no limit
    category_limits: dict[str, int] = field(default_factory=dict)
    depth_first: bool = False


@dataclass(frozen=True, slots=True)
class Platform:
    """CPUs (and memory in MB, 0 = not limited) per site; ``None`` is the site of jobs without one
    and of sites not listed."""

    slots: Mapping[str | None, int]
    memory: Mapping[str | None, float] = field(default_factory=dict)
    backend: str = "local"

    def cpus(self, site: str | None) -> int:
        found = self.slots.get(site)
        return max(1, found if found is not None else self.slots.get(None, 1))

    def mem(self, site: str | None) -> float:
        found = self.memory.get(site)
        return found if found is not None else self.memory.get(None, 0.0)


@dataclass(frozen=True, slots=True)
class LevelFigures:
    level: int
    jobs: int
    tasks: int
    work_s: float       # the tasks' runtimes summed
    overhead_s: float   # every job's delays summed (engine, submit, launch, task, post, transfers)
    start_s: float      # the level's first job submitted
    end_s: float        # its last node done


@dataclass(frozen=True, slots=True)
class Prediction:
    makespan_s: float
    low_s: float
    high_s: float
    jobs: int
    tasks: int
    critical_path_s: float
    utilisation: float
    levels: tuple[LevelFigures, ...]
    replicates: int
    work_s: float
    overhead_s: float
    schedule: tuple[tuple[float, float, float], ...] = ()  # per job, the mean run's (submitted, start, end)

    def to_json(self) -> dict[str, object]:
        return {"makespan_s": self.makespan_s, "low_s": self.low_s, "high_s": self.high_s,
                "jobs": self.jobs, "tasks": self.tasks, "critical_path_s": self.critical_path_s,
                "utilisation": self.utilisation, "work_s": self.work_s, "overhead_s": self.overhead_s,
                "replicates": self.replicates,
                "levels": [{"level": f.level, "jobs": f.jobs, "tasks": f.tasks, "work_s": f.work_s,
                            "overhead_s": f.overhead_s, "start_s": f.start_s, "end_s": f.end_s}
                           for f in self.levels]}


def _work(job: SimJob) -> float:
    """The job's tasks' nominal time on its cores: their sum, or longest first onto ``parallel`` cores."""
    if job.parallel <= 1 or len(job.runtimes) <= 1:
        return float(sum(job.runtimes))
    loads = [0.0] * min(job.parallel, len(job.runtimes))
    for runtime in sorted(job.runtimes, reverse=True):
        heapq.heapreplace(loads, loads[0] + runtime)
    return max(loads)


#: makespans sampled for the p10-p90: each event-loop run times as many speed draws as reach this
_SAMPLES = 200


def _replicates(n: int) -> int:
    """How many event-loop runs with sampled delays: enough for a small workflow, whose makespan
    each job's variation moves, few for a large one, whose per-job variations average out."""
    return max(1, min(40, 50_000 // max(n, 1)))


class _Draws:
    """Per-job delays of one run: the means, or draws from each component's gamma distribution."""

    def __init__(self, jobs: Sequence[SimJob], overheads: Sequence[Overheads]) -> None:
        self.n = len(jobs)
        tasks = np.array([max(len(j.runtimes), 1 if not j.noop else 0) for j in jobs], dtype=float)
        self.work = np.array([_work(j) + j.extra for j in jobs], dtype=float)
        self.transfer = np.array([j.bytes / o.bandwidth for j, o in zip(jobs, overheads, strict=True)])
        noop = np.array([j.noop for j in jobs], dtype=bool)
        self.means: dict[str, np.ndarray] = {}
        self.cvs: dict[str, np.ndarray] = {}
        for name in COMPONENTS:
            means = np.array([getattr(o, name).mean for o in overheads], dtype=float)
            cvs = np.array([getattr(o, name).cv for o in overheads], dtype=float)
            if name == "task":  # n tasks' start-ups: n times the mean, their spread averaging out
                means = means * tasks
                cvs = cvs / np.sqrt(np.maximum(tasks, 1.0))
            means[noop] = 0.0
            self.means[name], self.cvs[name] = means, cvs
        # the sum of n tasks' runtimes varies by 1/sqrt(n) of one task's spread
        self.work_cv = np.array([j.spread for j in jobs], dtype=float) / np.sqrt(np.maximum(tasks, 1.0))
        self.speed_cv = np.array([o.speed_cv for o in overheads], dtype=float)

    def mean_run(self) -> dict[str, list[float]]:
        out = {name: self.means[name].tolist() for name in COMPONENTS}
        out["work"] = (self.work + self.transfer).tolist()
        out["speed"] = [1.0]
        return out

    def uniform_speed(self) -> bool:
        """Whether every job's site shares one speed spread (then a run's speed factor scales its
        makespan, and need not be drawn inside the event loop)."""
        return not self.n or float(np.ptp(self.speed_cv)) == 0.0

    def sample(self, rng: np.random.Generator, z: float) -> dict[str, list[float]]:
        """A run's delays; ``z`` is its speed draw, each site scaling it by its spread."""
        speed = np.maximum(1.0 + self.speed_cv * z, 0.1)
        out = {name: (_gamma(rng, self.means[name], self.cvs[name]) * speed).tolist() for name in COMPONENTS}
        out["work"] = ((_gamma(rng, self.work, self.work_cv) + self.transfer) * speed).tolist()
        out["speed"] = [max(1.0 + float(self.speed_cv.max(initial=0.0)) * z, 0.1)]
        return out


def _gamma(rng: np.random.Generator, means: np.ndarray, cvs: np.ndarray) -> np.ndarray:
    varied = (cvs > 0) & (means > 0)
    if not varied.any():
        return means
    shape = np.where(varied, 1.0 / np.maximum(cvs, 1e-9) ** 2, 1.0)
    scale = np.where(varied, means / shape, 0.0)
    return np.where(varied, rng.gamma(shape, scale), means)


def simulate(workflow: SimWorkflow, platform: Platform, model: OverheadModel, *,
             replicates: int | None = None, seed: int = 0, schedule: bool = False) -> Prediction:
    """Predict ``workflow``'s makespan on ``platform`` under ``model`` (module docstring)."""
    jobs = workflow.jobs
    overheads = [model.for_site(job.site, platform.backend) for job in jobs]
    draws = _Draws(jobs, overheads)
    dispatch = {job.site: o.dispatch for job, o in zip(jobs, overheads, strict=True)}
    runner = _Runner(workflow, platform, dispatch)
    mean = draws.mean_run()
    times = runner.run(mean)
    count = replicates if replicates is not None else _replicates(len(jobs))
    rng = np.random.default_rng(seed)
    if draws.uniform_speed():
        # every delay, runtime and dispatch interval scaled by one factor scales the makespan by it:
        # each event-loop run at factor 1 stands for many speed draws
        runs = np.array([runner.run(draws.sample(rng, 0.0))[3] for _ in range(count)])
        cv = float(draws.speed_cv[0]) if draws.n else 0.0
        speeds = np.maximum(1.0 + cv * rng.standard_normal((count, -(-_SAMPLES // max(count, 1)))), 0.1)
        spans = sorted((runs[:, None] * speeds).ravel().tolist()) or [times[3]]
    else:
        spans = sorted(runner.run(draws.sample(rng, float(rng.standard_normal())))[3]
                       for _ in range(count)) or [times[3]]
    work = float(sum(_work(job) for job in jobs))
    overhead = float(sum(sum(mean[name]) for name in COMPONENTS) + sum(mean["work"])) - work
    busy = sum(job.cpus * (mean["launch"][j] + mean["task"][j] + mean["work"][j])
               for j, job in enumerate(jobs) if not job.noop)
    capacity = sum(platform.cpus(site) for site in {job.site for job in jobs if not job.noop}) or 1
    return Prediction(
        makespan_s=_quantile(spans, 0.5), low_s=_quantile(spans, 0.1), high_s=_quantile(spans, 0.9),
        jobs=sum(1 for job in jobs if not job.noop), tasks=sum(len(job.runtimes) for job in jobs),
        critical_path_s=_critical_path(workflow, mean),
        utilisation=min(1.0, busy / (capacity * times[3])) if times[3] > 0 else 0.0,
        levels=_levels(jobs, mean, times), replicates=count, work_s=work, overhead_s=overhead,
        schedule=tuple(zip(times[0], times[1], times[2], strict=True)) if schedule else ())


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (``values`` sorted)."""
    position = q * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def _durations(mean: Mapping[str, list[float]]) -> np.ndarray:
    """Each job's mean duration, every delay included."""
    return np.asarray(np.sum([mean[name] for name in (*COMPONENTS, "work")], axis=0), dtype=float)


def _critical_path(workflow: SimWorkflow, mean: Mapping[str, list[float]]) -> float:
    n = len(workflow.jobs)
    parents: list[list[int]] = [[] for _ in range(n)]
    children: list[list[int]] = [[] for _ in range(n)]
    for parent, child in workflow.edges:
        parents[child].append(parent)
        children[parent].append(child)
    duration = _durations(mean).tolist() if n else []
    finish = [0.0] * n
    levels, _ = kahn_levels(range(n), parents.__getitem__, children.__getitem__)
    for level in levels:
        for j in level:
            finish[j] = duration[j] + max((finish[p] for p in parents[j]), default=0.0)
    return max(finish, default=0.0)


def _levels(jobs: Sequence[SimJob], mean: Mapping[str, list[float]],
            times: tuple[list[float], list[float], list[float], float]) -> tuple[LevelFigures, ...]:
    if not jobs:
        return ()
    submitted, _, done, _ = times
    numbers, at = np.unique([job.level for job in jobs], return_inverse=True)
    work = np.array([_work(job) for job in jobs])
    overhead = _durations(mean) - work - np.array([job.extra for job in jobs])
    count = len(numbers)
    first = np.full(count, math.inf)
    np.minimum.at(first, at, submitted)
    last = np.zeros(count)
    np.maximum.at(last, at, done)
    real = np.bincount(at, weights=[0 if job.noop else 1 for job in jobs], minlength=count)
    tasks = np.bincount(at, weights=[len(job.runtimes) for job in jobs], minlength=count)
    runtime = np.bincount(at, weights=[sum(job.runtimes) for job in jobs], minlength=count)
    delays = np.bincount(at, weights=overhead, minlength=count)
    return tuple(LevelFigures(int(numbers[i]), int(real[i]), int(tasks[i]), float(runtime[i]),
                              float(delays[i]), float(min(first[i], last[i])), float(last[i]))
                 for i in range(count))


_ARRIVE, _END, _DONE, _WAKE = 0, 1, 2, 3


class _Runner:
    """The event loop of one run over fixed per-job delays; the graph is prepared once."""

    def __init__(self, workflow: SimWorkflow, platform: Platform,
                 dispatch: Mapping[str | None, float] | None = None) -> None:
        jobs = workflow.jobs
        self.n = len(jobs)
        self.children: list[list[int]] = [[] for _ in jobs]
        self.indegree = [0] * self.n
        for parent, child in workflow.edges:
            self.children[parent].append(child)
            self.indegree[child] += 1
        sites = sorted({job.site or "" for job in jobs})
        self.site_of = [sites.index(job.site or "") if len(sites) > 1 else 0 for job in jobs]
        self.capacity = [platform.cpus(site or None) for site in sites]
        self.memory = [platform.mem(site or None) for site in sites]
        self.dispatch = [(dispatch or {}).get(site or None, 0.0) for site in sites]
        self.cpus = [min(job.cpus, self.capacity[s]) for job, s in zip(jobs, self.site_of, strict=True)]
        self.mem = [job.memory if self.memory[s] > 0 else 0.0
                    for job, s in zip(jobs, self.site_of, strict=True)]
        self.priority = [-job.priority for job in jobs]
        categories = sorted({job.category for job in jobs if job.category is not None})
        number = {name: i + 1 for i, name in enumerate(categories)}
        self.category = [number.get(job.category or "", 0) if job.category is not None else 0 for job in jobs]
        self.category_limit = [0] + [workflow.category_limits.get(c, 0) for c in categories]
        self.maxjobs = workflow.maxjobs
        self.noop = [job.noop for job in jobs]
        self.step = -1 if workflow.depth_first else 1

    def run(self, d: Mapping[str, list[float]]) -> tuple[list[float], list[float], list[float], float]:
        """(submitted, started, done) per job and the makespan, for these delays."""
        replay = _Replay(self, d)
        end = replay.go()
        return replay.submitted, replay.started, replay.done, end


class _Replay:
    """One run: the engine's ready queues and throttles, each site's FIFO queue and free CPUs."""

    def __init__(self, graph: _Runner, d: Mapping[str, list[float]]) -> None:
        n = graph.n
        self.g = graph
        self.engine, self.submit, self.post = d["engine"], d["submit"], d["post"]
        self.speed = d.get("speed", [1.0])[0]  # the run's factor, which a site's dispatch interval shares
        self.busy = [a + b + c for a, b, c in zip(d["launch"], d["task"], d["work"], strict=True)]
        self.submitted, self.started, self.done = [0.0] * n, [0.0] * n, [0.0] * n
        self.events: list[tuple[float, int, int, int]] = []
        self.heaps: list[list[tuple[int, int, int]]] = [[] for _ in graph.category_limit]
        self.in_category = [0] * len(graph.category_limit)
        self.queues: list[deque[int]] = [deque() for _ in graph.capacity]
        self.free = list(graph.capacity)
        self.free_mem = list(graph.memory)
        self.seq = 0
        self.counter = 0
        self.in_flight = 0
        self.unmet: list[int] = []
        self.next_start = [0.0] * len(graph.capacity)  # a site's scheduler starts no job before this
        self.waking = [False] * len(graph.capacity)

    def release(self, j: int) -> None:
        self.seq += self.g.step
        heapq.heappush(self.heaps[self.g.category[j]], (self.g.priority[j], self.seq, j))

    def submit_ready(self, now: float) -> None:
        """Submit ready nodes, best first, while the throttles allow; a NOOP node needs no token and
        is done at once (after its POST delay)."""
        heaps, in_category, noop = self.heaps, self.in_category, self.g.noop
        limits, maxjobs = self.g.category_limit, self.g.maxjobs
        while True:
            job_ok = not maxjobs or self.in_flight < maxjobs
            best = -1
            for c, heap in enumerate(heaps):
                if not heap or (best >= 0 and heap[0] > heaps[best][0]):
                    continue
                if not noop[heap[0][2]] and (not job_ok or (limits[c] and in_category[c] >= limits[c])):
                    continue
                best = c
            if best < 0:
                return
            j = heapq.heappop(heaps[best])[2]
            self.submitted[j] = now
            self.counter += 1
            if noop[j]:
                if self.post[j] > 0:
                    heapq.heappush(self.events, (now + self.post[j], self.counter, _DONE, j))
                else:
                    self.finish(j, now)
                continue
            self.in_flight += 1
            in_category[best] += 1
            heapq.heappush(self.events, (now + self.engine[j] + self.submit[j], self.counter, _ARRIVE, j))

    def start(self, s: int, now: float) -> None:
        """Start a site's queued jobs, first come first served, while its CPUs (and memory) suffice."""
        queue, cpus, mem, free, free_mem = self.queues[s], self.g.cpus, self.g.mem, self.free, self.free_mem
        while queue:
            j = queue[0]
            if cpus[j] > free[s] or (mem[j] and mem[j] > free_mem[s] and free[s] < self.g.capacity[s]):
                return
            if now < self.next_start[s]:
                if not self.waking[s]:
                    self.waking[s] = True
                    self.counter += 1
                    heapq.heappush(self.events, (self.next_start[s], self.counter, _WAKE, s))
                return
            self.next_start[s] = now + self.g.dispatch[s] * self.speed
            queue.popleft()
            free[s] -= cpus[j]
            free_mem[s] -= mem[j]
            self.started[j] = now
            self.counter += 1
            heapq.heappush(self.events, (now + self.busy[j], self.counter, _END, j))

    def finish(self, j: int, now: float) -> None:
        """The node is done: its children whose last parent it was become ready."""
        self.done[j] = now
        unmet = self.unmet
        for child in self.g.children[j]:
            unmet[child] -= 1
            if not unmet[child]:
                self.release(child)

    def go(self) -> float:
        g, events, pop, push = self.g, self.events, heapq.heappop, heapq.heappush
        site_of, cpus, mem, category, post = g.site_of, g.cpus, g.mem, g.category, self.post
        free, free_mem, queues, in_category = self.free, self.free_mem, self.queues, self.in_category
        start, finish, submit_ready = self.start, self.finish, self.submit_ready
        for j in range(g.n):
            if not g.indegree[j]:
                self.release(j)
        self.unmet = list(g.indegree)
        submit_ready(0.0)
        while events:
            now, _, kind, j = pop(events)
            if kind == _WAKE:
                self.waking[j] = False
                start(j, now)
                continue
            s = site_of[j]
            if kind == _ARRIVE:
                queues[s].append(j)
                start(s, now)
                continue
            if kind == _END:
                free[s] += cpus[j]
                free_mem[s] += mem[j]
                start(s, now)
                self.in_flight -= 1
                in_category[category[j]] -= 1
                if post[j] > 0:
                    self.counter += 1
                    push(events, (now + post[j], self.counter, _DONE, j))
                else:  # the engine hears of the exit and finishes the node in one step
                    finish(j, now)
            else:
                finish(j, now)
            submit_ready(now)
        return max(self.done, default=0.0)
