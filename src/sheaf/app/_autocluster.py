"""``--cluster auto`` in the application layer: the model it optimises under, and the whole plan's
prediction clustered and not.

The model is the one ``sheaf predict`` would use for the backend (``PlanRequest.backend``): the
defaults, the saved calibration, ``--overheads FILE``, ``--overhead S``; ``slots`` per site (default:
the backend's platform's, as ``sheaf predict`` finds them: ``sheaf.app._platform``, the local pool's
configuration from ``--pool-config``); runtime estimates per transformation for tasks without a
runtime profile, from the earlier runs of the same workflow under the same base (their events
databases).

After planning, the executable workflow is simulated as planned and as planned without ``--cluster
auto`` (for a ``clusters.* = auto`` profile: with every cluster undone, its tasks as jobs of their
own with the cluster's parents and children).  When that plan is predicted to finish sooner, it is
the plan (a warning says so): ``auto`` never chooses a plan the model says is slower.
"""

from __future__ import annotations

__all__ = ["auto_model", "auto_record", "sim_workflow"]

import os
import statistics
from collections.abc import Mapping

from sheaf.app._platform import platform_slots
from sheaf.app._predict import PredictOptions, load_model
from sheaf.model import profile_float
from sheaf.monitor import task_history
from sheaf.planner import DATA_KINDS, ExecJob, ExecutableWorkflow
from sheaf.predict import AutoModel, Platform, SimJob, SimWorkflow, simulate


def auto_model(backend: str, slots: int | None, overhead: float | None, overheads_file: str | None,
               runs_dir: str | None, pool_config: str | None = None) -> AutoModel:
    """The model automatic clustering optimises under (module docstring)."""
    options = PredictOptions(slots=slots, backend=backend, overhead=overhead, overheads_file=overheads_file)
    model = load_model(options)
    if overhead is not None:
        model = model.flat(overhead)
    estimates: dict[str, float] = {}
    if runs_dir is not None and os.path.isdir(runs_dir):
        runs = [os.path.join(runs_dir, name) for name in sorted(os.listdir(runs_dir))]
        history = task_history([run for run in runs if os.path.isdir(run)])
        estimates = {name: statistics.median(values) for name, values in history.items() if values}
    found = platform_slots(backend, slots, pool_config)
    return AutoModel(model, backend, found.cpus, None, estimates, found.source)


def _runtime(job: ExecJob, index: int, estimates: Mapping[str, float]) -> float:
    task = job.tasks[index]
    value = profile_float(task.profiles, "pegasus", "runtime", subject=f"job '{task.id}'")
    return value if value is not None else estimates.get(task.transformation, 0.0)


def sim_workflow(exec_wf: ExecutableWorkflow, estimates: Mapping[str, float], *,
                 undo_clusters: bool = False) -> SimWorkflow:
    """``exec_wf`` as the simulation sees it; with ``undo_clusters`` every cluster's tasks are jobs of
    their own, each with the cluster's parents and children."""
    jobs: list[SimJob] = []
    first: list[list[int]] = []  # executable job -> its simulated jobs
    for job in exec_wf.jobs:
        runtimes = tuple(_runtime(job, i, estimates) for i in range(len(job.tasks)))
        if undo_clusters and job.type == "cluster":
            first.append(list(range(len(jobs), len(jobs) + len(runtimes))))
            jobs += [SimJob(task.id, level=job.level, runtimes=(runtime,), site=job.site)
                     for task, runtime in zip(job.tasks, runtimes, strict=True)]
            continue
        first.append([len(jobs)])
        cores = int(profile_float(job.profiles, "pegasus", "cores", subject=f"job '{job.id}'") or 1)
        jobs.append(SimJob(job.id, level=job.level, runtimes=() if job.type in DATA_KINDS else runtimes,
                           site=job.site, parallel=cores if job.aggregator == "mpiexec" else 1,
                           bytes=float(exec_wf.transfer_bytes.get(job.id, (0, 0))[0])))
    edges = [(a, b) for parent, child in exec_wf.edges for a in first[parent] for b in first[child]]
    return SimWorkflow(jobs, edges)


def auto_record(exec_wf: ExecutableWorkflow, auto: AutoModel,
                baseline: ExecutableWorkflow | None = None) -> tuple[float, float]:
    """The predicted makespans of ``exec_wf`` as planned and without automatic clustering -- the
    ``baseline`` plan, else ``exec_wf`` with its clusters undone -- also recorded in its
    ``autocluster`` (plan.json's)."""
    platform = Platform({None: auto.slots}, backend=auto.backend)
    chosen = simulate(sim_workflow(exec_wf, auto.estimates), platform, auto.model, replicates=0)
    other = sim_workflow(baseline, auto.estimates) if baseline is not None else \
        sim_workflow(exec_wf, auto.estimates, undo_clusters=True)
    single = simulate(other, platform, auto.model, replicates=0)
    exec_wf.autocluster.update(backend=auto.backend, slots=auto.slots, slots_source=auto.slots_source,
                               overheads=auto.model.for_site(None, auto.backend).to_json(),
                               predicted_makespan_s=chosen.makespan_s,
                               unclustered_makespan_s=single.makespan_s)
    return chosen.makespan_s, single.makespan_s
