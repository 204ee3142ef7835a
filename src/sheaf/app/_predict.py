"""``predict``: how long a submit directory's workflow will take, before it runs.

What is read
    The DAG (``sheaf.condor``): its nodes, edges, ``PRIORITY``, ``CATEGORY`` and ``MAXJOBS``, NOOP
    nodes, ``DAGMAN_MAX_JOBS_SUBMITTED`` and ``DAGMAN_SUBMIT_DEPTH_FIRST`` of its CONFIG file -- so
    any DAG predicts, a hand-written one included; and ``plan.json`` when ``sheaf plan`` wrote the
    directory: each job's site, tasks, their runtimes, its aggregator and CPU and memory requests.
    A SUBDAG node whose DAG is planned in a directory of its own is predicted there and lasts that long.

Where each task's runtime comes from, first found wins
    ``profile``: its pegasus ``runtime`` profile (a WfCommons trace's ``runtimeInSeconds`` becomes
    that profile: ``trace`` when the workflow file is one); ``history``: the median of that
    transformation's successful invocations in earlier runs' events databases (the run directories
    beside this one and any ``calibrate`` directory); else ``default``: ``default_runtime`` seconds.
    A transfer job whose plan.json states the ``bytes`` it moves (stage-in, stage-out, inter-site:
    its files' sizes summed) moves them at the model's ``bandwidth`` (``sizes``); any other data job
    (those of no known size, create-dir, cleanup, registration) costs its history's median by job
    type, else its overheads alone.  The result names each transformation's source, and notes the
    files of unknown size.

The platform is ``slots`` CPUs on every site -- without ``slots``, those of the backend's platform
(``sheaf.app._platform``: the local pool's slots and memory, configured by ``pool_config`` or as
``sheaf run`` finds its configuration; a Slurm cluster's CPUs by ``sinfo``; else this machine's),
the result naming where they came from -- under the overhead model of ``backend``: the defaults,
then the model saved by calibration (:func:`overheads_path`), then ``overheads_file``, then what
``calibrate`` fits (and saves), then ``overhead`` seconds flat.
"""

from __future__ import annotations

__all__ = ["PredictOptions", "PredictResult", "calibrate", "load_model", "overheads_path", "predict"]

import contextlib
import json
import math
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sheaf._fields import check_fields, check_path
from sheaf._gc import gc_paused
from sheaf.app._platform import Slots, platform_slots
from sheaf.condor import Dag, parse_dag
from sheaf.engine import find_dag
from sheaf.errors import StorageError, UsageError
from sheaf.formats import looks_like_workflow
from sheaf.model import kahn_levels
from sheaf.monitor import (
    JobTiming,
    PlanJob,
    PlanProfiles,
    RunTimings,
    braindump,
    master_db_path,
    plan_json,
    run_timings,
    task_history,
)
from sheaf.planner import DATA_KINDS
from sheaf.predict import (
    BACKENDS,
    OverheadModel,
    OverheadModelError,
    Overheads,
    Platform,
    Prediction,
    SimJob,
    SimWorkflow,
    fit_overheads,
    peak_concurrency,
    simulate,
)

DEFAULT_RUNTIME = 60.0


@dataclass(frozen=True, slots=True)
class PredictOptions:
    """What ``predict`` is asked (``sheaf predict``'s options); the module docstring says how each is used.

    ``slots``: CPUs on every site, None: the backend's platform's.  ``pool_config``: the local pool's
    configuration file (backend ``local``).  ``backend``: whose overhead model and platform (one of
    ``sheaf.predict.BACKENDS``).  ``overhead``: a flat per-job overhead in seconds, replacing the
    model.  ``overheads_file``: an overhead model (JSON) merged over the saved one.  ``calibrate``:
    earlier run directories to fit the model from (the fit is saved) and read runtimes from.
    ``history``: read earlier runs' task runtimes.  ``default_runtime``: a task's seconds when
    nothing else gives them.  ``replicates``: the simulation's runs with sampled delays (None: by
    the workflow's size; 0: the mean run alone).  ``seed``: their random numbers' seed.
    ``dag_file``: the DAG to predict, in the directory or absolute; None: the directory's one
    ``*.dag``.  ``schedule``: return the predicted schedule (``PredictResult.gantt``).  ``record``:
    write ``prediction.json`` into the directory (with the schedule), which ``sheaf statistics``
    and ``sheaf plots`` read."""

    slots: int | None = None              # CPUs per site; None: the backend's platform's
    pool_config: str | None = None        # the local pool's configuration file (backend local)
    backend: str = "local"
    overhead: float | None = None         # a flat per-job overhead, seconds
    overheads_file: str | None = None
    calibrate: tuple[str, ...] = ()       # earlier runs to fit the model from (and read history of)
    history: bool = True                  # read earlier runs' task runtimes
    default_runtime: float = DEFAULT_RUNTIME
    replicates: int | None = None
    seed: int = 0
    dag_file: str | None = None           # the DAG to predict, in DIR or absolute; None: DIR's one *.dag
    schedule: bool = False
    record: bool = False                  # write ``prediction.json`` (sheaf statistics reads it)

    def __post_init__(self) -> None:
        """Each field's type (``check_fields``), and no negative runtime, overhead or replicate count."""
        check_fields(self)
        for name, value in (("default_runtime", self.default_runtime), ("overhead", self.overhead),
                            ("replicates", self.replicates)):
            if value is not None and not value >= 0:  # nan too
                raise UsageError(f"PredictOptions.{name} {value!r} is not in the range x>=0")


@dataclass(frozen=True, slots=True)
class PredictResult:
    """A prediction (``predict``).

    ``directory``: the submit directory predicted (its DAG's).  ``prediction``: the simulation's
    figures (makespan, its p10-p90 interval, critical path, utilisation, work and overhead, per
    level).  ``slots``: the CPUs per site it assumed, and ``slots_source`` where they came from.
    ``backend``: the backend whose overheads applied; ``model``: the overhead model used.
    ``sources``: per transformation (or data job type), where its runtime came from (``profile``,
    ``trace``, ``history``, ``default``, ``sizes``).  ``ids``: the DAG's nodes, in the order of the
    prediction's per-job figures.  ``notes``: what the prediction says about itself (files of
    unknown size, sub-DAGs predicted, a schedule too large to record).  ``memory_mb``: the
    platform's memory per site, 0: not limited.  ``gantt``: see below."""

    directory: str
    prediction: Prediction
    slots: int
    backend: str
    model: OverheadModel
    sources: Mapping[str, str]            # transformation (or data job type) -> where its runtime came from
    ids: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    slots_source: str = "--slots"         # where ``slots`` came from (``sheaf.app._platform``)
    memory_mb: float = 0.0                # the platform's memory per site; 0: not limited
    #: with ``PredictOptions.schedule``: each job's (id, transformation or job type, start, end) in the
    #: run at the means, NOOP nodes left out -- the predicted Gantt chart
    gantt: tuple[tuple[str, str, float, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = self.prediction.to_json()
        out.update(directory=self.directory, slots=self.slots, slots_source=self.slots_source,
                   memory_mb=self.memory_mb, backend=self.backend,
                   runtime_sources=dict(sorted(self.sources.items())),
                   overheads=self.model.for_site(None, self.backend).to_json())
        return out


#: prediction.json keeps the predicted schedule of plans up to this many jobs (``sheaf plots`` draws it)
GANTT_JOBS = 20_000


def overheads_path() -> str:
    """Where calibration saves the model and prediction finds it: ``$SHEAF_OVERHEADS``, else
    ``overheads.json`` beside the master database of runs (``$SHEAF_HOME``, else
    ``$XDG_STATE_HOME/sheaf``, else ``~/.sheaf``)."""
    explicit = os.environ.get("SHEAF_OVERHEADS")
    if explicit:
        return explicit
    return os.path.join(os.path.dirname(master_db_path()), "overheads.json")


def load_model(options: PredictOptions) -> OverheadModel:
    """The overhead model ``options`` ask for (module docstring), calibration excepted."""
    if options.backend not in BACKENDS:
        raise UsageError(f"--backend: unknown backend {options.backend!r} (one of {', '.join(BACKENDS)})")
    model = OverheadModel()
    saved = overheads_path()
    if os.path.isfile(saved):
        model = model.merged(_read_json(saved), saved)
    if options.overheads_file is not None:
        model = model.merged(_read_json(options.overheads_file), options.overheads_file)
    return model


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the overhead model: {exc.strerror}") from None
    except ValueError as exc:
        raise OverheadModelError(f"{path}: not JSON: {exc}") from None


def _not_a_workflow(path: str) -> None:
    """A workflow file given where a plan belongs is refused saying what to do, not as a bad DAG."""
    if not path.endswith(".dag") and looks_like_workflow(path):
        raise UsageError(f"{path} is a workflow, not a plan: `sheaf plan {path}` writes one, then "
                         "`sheaf predict` predicts the submit directory it names")


def predict(directory: str, options: PredictOptions = PredictOptions(),
            model: OverheadModel | None = None) -> PredictResult:
    """Predict the run of the submit directory ``directory`` (module docstring)."""
    check_path("directory", directory)
    if options.slots is not None and options.slots < 1:
        raise UsageError(f"--slots must be at least 1, got {options.slots}")
    if model is None:
        model = load_model(options)
    if options.calibrate:
        model = calibrate(options.calibrate, options.backend, base=model)
    if options.overhead is not None:
        model = model.flat(options.overhead)
    slots = platform_slots(options.backend, options.slots, options.pool_config)
    dag_path = find_dag(directory, options.dag_file)  # DIR's DAG, or DIR is itself a DAG file
    _not_a_workflow(dag_path)
    directory = os.path.dirname(dag_path)
    history = _history(directory, options) if options.history else {}
    if options.record:
        options = replace(options, schedule=True)  # prediction.json keeps the Gantt chart
    with gc_paused():  # the DAG, the plan and the simulation's lists: millions of objects, no cycles
        result = _predict_dir(directory, options, model, slots, history, depth=0, dag_path=dag_path)
    if options.record:
        record = {**result.to_json(), "predicted_at": time.time()}
        if result.gantt and len(result.gantt) <= GANTT_JOBS:
            record["schedule"] = [[job, group, round(start, 3), round(end, 3)]
                                  for job, group, start, end in result.gantt]
        elif result.gantt:
            note = (f"prediction.json keeps no schedule of more than {GANTT_JOBS} jobs: sheaf plots draws no "
                    "predicted chart")
            result = replace(result, notes=(*result.notes, note))
        _write_json(os.path.join(result.directory, "prediction.json"), record)
    return result


def calibrate(directories: Sequence[str], backend: str, *, base: OverheadModel | None = None,
              save: bool = True) -> OverheadModel:
    """``base`` (default: the model prediction would use) with ``backend``'s overheads fitted from the
    runs in ``directories``; with ``save``, written to :func:`overheads_path` for the next prediction."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend: unknown backend {backend!r} (one of {', '.join(BACKENDS)})")
    if isinstance(directories, str) or not directories:
        raise UsageError(f"calibrate needs a sequence of one or more run directories (sheaf calibrate "
                         f"RUN_DIR...), got {directories!r}")
    model = base if base is not None else load_model(PredictOptions(backend=backend))
    runs = [run_timings(directory) for directory in directories]
    source = f"calibrated from {len(runs)} run{'s' if len(runs) > 1 else ''}"
    jobs = [job for run in runs for job in _nominal(run)]
    fitted = fit_overheads(jobs, model.for_site(None, backend), source)
    fitted = replace(fitted, speed_cv=max(fitted.speed_cv, _residual(runs, backend, fitted, model)))
    if save:
        _save(backend, fitted.to_json())
    return OverheadModel({**model.backends, backend: fitted}, model.sites)


def _residual(runs: Sequence[RunTimings], backend: str, fitted: Overheads, model: OverheadModel) -> float:
    """How far the fitted model predicts the runs it was fitted from (the root mean square of the
    relative errors, each run on the slots it filled): what the next prediction's interval allows."""
    trial = OverheadModel({**model.backends, backend: fitted}, model.sites)
    errors = []
    for run in runs:
        options = PredictOptions(slots=max(1, peak_concurrency(run.jobs)), backend=backend, history=False,
                                 replicates=0)
        history = task_history([run.directory])  # the run's own runtimes, where no profile gives one
        slots = Slots(options.slots or 1, 0.0, "the run's peak concurrency")
        predicted = _predict_dir(run.directory, options, trial, slots, history, depth=0)
        if predicted.prediction.makespan_s > 0 and run.makespan > 0:
            errors.append(run.makespan / predicted.prediction.makespan_s - 1)
    return math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else 0.0


def _nominal(run: RunTimings) -> list[JobTiming]:
    """The run's jobs with their tasks' seconds as prediction will see them: the runtimes plan.json
    gives (a trace's, a profile's) where it gives every task's, else what the tasks measured -- so
    that what a task costs beyond its nominal runtime (starting its process, a slower machine) is
    fitted into the per-task overhead the prediction adds to nominal runtimes."""
    plan = _plan_jobs(run.directory)
    out = []
    for job in run.jobs:
        record = plan.get(job.job)
        runtimes = record.runtimes if record is not None and isinstance(record.runtimes, list) else None
        if runtimes and len(runtimes) == job.tasks and all(isinstance(v, int | float) for v in runtimes):
            out.append(replace(job, task_seconds=float(sum(runtimes))))
        else:
            out.append(job)
    return out


def _save(backend: str, block: dict[str, Any]) -> None:
    """Put ``backend``'s block into the saved model file, keeping the others; atomically."""
    path = overheads_path()
    saved: dict[str, Any] = {"format": "sheaf-overheads/1", "backends": {}, "sites": {}}
    if os.path.isfile(path):
        OverheadModel().merged(_read_json(path), path)  # refuse to extend a damaged file
        saved.update(_read_json(path))
    saved.setdefault("backends", {})[backend] = block
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    _write_json(path, saved)


def _write_json(path: str, data: Mapping[str, Any]) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise StorageError(f"{path}: cannot write: {exc.strerror}") from None


def _predict_dir(directory: str, options: PredictOptions, model: OverheadModel, slots: Slots,
                 history: Mapping[str, Sequence[float]], depth: int,
                 dag_path: str | None = None) -> PredictResult:
    dag = parse_dag(dag_path or find_dag(directory), read_vars=False)  # its shape: nothing is submitted
    plan = _plan_jobs(os.path.dirname(dag.path))
    trace = _is_trace(os.path.dirname(dag.path))
    sources: dict[str, str] = {}
    notes: list[str] = []
    names = list(dag.nodes)
    summaries = _summaries(history)
    jobs = [_sim_job(name, dag, plan.get(name), summaries, options, sources, trace) for name in names]
    unknown = [int(_number(plan[name].unknown_sizes)) for name in names if name in plan]
    if any(unknown):
        notes.append(f"{sum(1 for n in unknown if n)} data jobs move {sum(unknown)} files of unknown size, "
                     "counted as 0 bytes")
    for job, name in zip(jobs, names, strict=True):
        spec = dag.nodes[name]
        if spec.subdag and depth < 8:
            sub = os.path.dirname(spec.submit)
            if os.path.isfile(spec.submit) and os.path.abspath(sub) != directory:
                inner = _predict_dir(sub, options, model, slots, history, depth + 1)
                job.runtimes = (inner.prediction.makespan_s,)
                sources.update(inner.sources)
                notes.append(f"{name}: its sub-DAG {spec.submit} predicted at "
                             f"{inner.prediction.makespan_s:.1f} s")
    index = {name: i for i, name in enumerate(names)}
    edges = [(index[p], index[c]) for p, children in dag.children.items() for c in children
             if p in index and c in index]
    if not plan:  # a DAG sheaf did not plan: its levels are the nodes' depths
        levels, _ = kahn_levels(names, dag.parents.__getitem__, dag.children.__getitem__)
        for number, level in enumerate(levels):
            for name in level:
                jobs[index[name]].level = number
    config = dag.config
    workflow = SimWorkflow(jobs, edges, maxjobs=_int(config.get("DAGMAN_MAX_JOBS_SUBMITTED")),
                           category_limits=dict(dag.maxjobs),
                           depth_first=dag.flag("DAGMAN_SUBMIT_DEPTH_FIRST", False))
    platform = Platform({None: slots.cpus}, {None: slots.memory}, backend=options.backend)
    prediction = simulate(workflow, platform, model, replicates=options.replicates, seed=options.seed,
                          schedule=options.schedule)
    gantt = tuple((name, _group(plan.get(name)), start, end)
                  for name, job, (_, start, end) in zip(names, jobs, prediction.schedule, strict=True)
                  if not job.noop) if prediction.schedule else ()
    return PredictResult(directory, prediction, slots.cpus, options.backend, model, sources, tuple(names),
                         tuple(notes), slots.source, slots.memory, gantt)


def _group(record: PlanJob | None) -> str:
    """What a job's bar is coloured by: its transformation, else its job type."""
    if record is None:
        return "job"
    return str(record.transformation if isinstance(record.transformation, str) else record.type)


def _plan_jobs(directory: str) -> dict[str, PlanJob]:
    plan = plan_json(directory)
    jobs = plan.jobs if plan is not None and plan.jobs else []
    return {job.id: job for job in jobs if isinstance(job.id, str)}


def _is_trace(directory: str) -> bool:
    """Whether the plan was made from a WfCommons trace (braindump's ``dax`` is a .json file)."""
    return braindump(directory).get("dax", "").endswith(".json")


def _sim_job(name: str, dag: Dag, record: PlanJob | None, history: Mapping[str, tuple[float, float]],
             options: PredictOptions, sources: dict[str, str], trace: bool) -> SimJob:
    spec = dag.nodes[name]
    job = SimJob(name, priority=spec.priority, category=spec.category, noop=spec.noop)
    if record is None:
        key = name
        job.runtimes, job.spread = _runtimes_of(key, 1, None, history, options, sources, trace)
        return job
    job.site = record.site if isinstance(record.site, str) else None
    job.level = record.level if isinstance(record.level, int) else 0
    profiles = record.profiles
    job.cpus = max(1, _int(_profile(profiles, ("pegasus", "cores"), ("condor", "request_cpus"))) or 1)
    job.memory = float(_int(_profile(profiles, ("pegasus", "memory"), ("condor", "request_memory"))))
    if record.aggregator == "mpiexec":
        job.parallel = job.cpus
    kind = str(record.type)
    tasks = record.tasks if isinstance(record.tasks, list) else []
    if kind in DATA_KINDS and _number(record.bytes) > 0:
        job.bytes = _number(record.bytes)
        sources.setdefault(kind, "sizes")
        return job
    if kind in DATA_KINDS or not tasks:
        measured, job.spread = _runtimes_of(kind, 1, None, history, options, sources, trace, data=True)
        job.extra = sum(measured)
        return job
    key = record.transformation if isinstance(record.transformation, str) else kind
    known = record.runtimes if isinstance(record.runtimes, list) else None
    if known is not None and len(known) != len(tasks):
        known = None
    job.runtimes, job.spread = _runtimes_of(key, len(tasks), known, history, options, sources, trace)
    return job


def _runtimes_of(key: str, count: int, known: list[Any] | None, history: Mapping[str, tuple[float, float]],
                 options: PredictOptions, sources: dict[str, str], trace: bool,
                 data: bool = False) -> tuple[tuple[float, ...], float]:
    """``count`` task runtimes for transformation (or data job type) ``key`` and their spread."""
    past = history.get(key)
    fallback, spread, source = (0.0 if data else options.default_runtime), 0.0, "default"
    if past is not None:
        fallback, spread = past
        source = "history"
    if known is not None and any(isinstance(v, int | float) for v in known):
        sources.setdefault(key, "trace" if trace else "profile")
        return tuple(float(v) if isinstance(v, int | float) else fallback for v in known), spread
    if data and past is None:
        return (), 0.0
    sources.setdefault(key, source)
    return (fallback,) * count, spread


def _summaries(history: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, float]]:
    """Per transformation, the median of its past runtimes and their coefficient of variation."""
    out = {}
    for key, past in history.items():
        if past:
            median = statistics.median(past)
            out[key] = (median, statistics.pstdev(past) / median if median > 0 and len(past) > 1 else 0.0)
    return out


def _history(directory: str, options: PredictOptions) -> dict[str, list[float]]:
    """Task runtimes of earlier runs: this directory's siblings with an events database, and the
    calibration runs."""
    here = os.path.abspath(directory)
    parent = os.path.dirname(here)
    names = sorted(os.listdir(parent)) if os.path.isdir(parent) else []
    candidates = [os.path.join(parent, name) for name in names]
    runs = [path for path in candidates if path != here and os.path.isdir(path)]
    runs += [os.path.abspath(path) for path in options.calibrate]
    return task_history(runs)


def _profile(profiles: PlanProfiles | None, *keys: tuple[str, str]) -> Any:
    for namespace, key in keys:
        entries = getattr(profiles, namespace, None)
        if isinstance(entries, dict) and key in entries:
            return entries[key]
    return None


def _number(value: Any) -> float:
    """``value`` when it is a finite number >= 0 (not a boolean), else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0 else 0.0


def _int(value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return int(number) if math.isfinite(number) and number > 0 else 0




