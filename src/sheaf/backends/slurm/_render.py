"""What the Slurm backend submits for one attempt: a pure ``render`` of the ``sbatch`` command line.

Resources are evaluated from the launch's job ad *per attempt* (the ad carries ``DAGNodeRetry``, so a
``request_memory`` that grows with retries asks for more on each retry, as on HTCondor):

==========================================  ===============================================
job ad attribute                            sbatch option
==========================================  ===============================================
``RequestCpus``                              ``--cpus-per-task``, unless the job asks for tasks
                                             (then it is the CPUs of all its tasks together)
``RequestMemory`` (MB)                       ``--mem`` (MB)
``MaxWallTime`` (minutes, HTCondor-CE's),    ``--time`` (minutes, rounded up; the smallest
``pegasus_runtime`` (s), ``globus_maxwalltime``  of those given; a cluster's are summed by the planner)
(min), ``BatchRuntime`` (s, BLAHP's)
``HostNumber`` (BLAHP's, written by codegen)  ``--nodes``
/ ``pegasus_nodes`` / ``globus_host_xcount``
``SMPGranularity`` (BLAHP's) / ``pegasus_ppn``  ``--ntasks-per-node``
``NodeNumber`` (BLAHP's) / ``globus_xcount``    ``--ntasks``
``pegasus_queue`` / ``BatchQueue`` /          ``--partition``
``globus_queue``
``pegasus_project`` / ``BatchProject`` /      ``--account``
``globus_project``
``BatchExtraSubmitArgs`` (``glite.arguments``)  split as a shell would and passed through,
                                             after sheaf's own options (the user's win)
==========================================  ===============================================

Always: ``--job-name`` (``sheaf-<stem>``: the attempt, found by name after a crash), ``--comment``
naming run, node and attempt, ``--no-requeue`` (a requeued job would run the attempt twice behind the
engine's back), ``--export=ALL`` (the wrapper gives the job exactly the launch's environment
whatever the batch script gets; ``NONE`` or a list of names would make slurmd load the user's login
environment first, which delays every job's start), ``--output``/
``--error`` for the wrapper's own diagnostics (the job's files are opened by the wrapper),
``--parsable``.  An attribute that does not evaluate to a positive number is left out.

A job whose ``sheaf_launcher`` is ``"mpiexec"`` (a PMC cluster, ``codegen``) and that asks for
several tasks is started by the wrapper as ``mpiexec -n <tasks> <argv>`` inside its allocation
(:func:`launcher`): rank 0 is PMC's master, the others its workers, placed by OpenMPI on the nodes
Slurm allocated.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from sheaf.classad import ClassAd
from sheaf.engine import Launch

__all__ = ["launcher", "memory_request", "multi_task", "render"]

_TASK_OPTIONS = ("--ntasks", "--nodes", "--ntasks-per-node", "-n", "-N")


def _number(ad: ClassAd, *names: str) -> float | None:
    for name in names:
        if ad.get_expr(name) is None:
            continue
        try:
            value = ad.eval(name)
        except Exception:  # noqa: BLE001, S112 - an expression that cannot be evaluated asks for nothing
            continue
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                continue
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _text(ad: ClassAd, *names: str) -> str | None:
    for name in names:
        if ad.get_expr(name) is not None:
            value = ad.eval(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def memory_request(ad: ClassAd) -> int | None:
    """The attempt's ``RequestMemory`` in MB (the wrapper's limit), or None."""
    value = _number(ad, "RequestMemory")
    return math.ceil(value) if value is not None else None


_NODES = ("HostNumber", "pegasus_nodes", "globus_host_xcount")
_PER_NODE = ("SMPGranularity", "pegasus_ppn")
_TASKS = ("NodeNumber", "globus_xcount")


def multi_task(ad: ClassAd) -> bool:
    """Whether the job asks Slurm for several tasks or nodes (a Decaf or PMC cluster): then ``srun``
    or ``mpiexec`` inside it must find the allocation, so the wrapper adds the allocation's
    ``SLURM_*`` variables to the job's environment (``_job``)."""
    counts = (_number(ad, *_TASKS), _number(ad, *_NODES), _number(ad, *_PER_NODE))
    if any(count is not None and count > 1 for count in counts):
        return True
    extra = _text(ad, "BatchExtraSubmitArgs", "pegasus_glite_arguments") or ""
    return any(word.split("=", 1)[0] in _TASK_OPTIONS for word in shlex.split(extra))


def launcher(ad: ClassAd) -> str | None:
    """``"mpiexec"`` for a job to be started by mpiexec across the tasks of its allocation (a PMC
    cluster asking for several tasks), else None."""
    return "mpiexec" if _text(ad, "sheaf_launcher") == "mpiexec" and multi_task(ad) else None


def _minutes(ad: ClassAd) -> int | None:
    limits = [v for v in (_number(ad, "MaxWallTime"), _number(ad, "globus_maxwalltime"),
                          _divide(_number(ad, "pegasus_runtime"), 60.0),
                          _divide(_number(ad, "BatchRuntime"), 60.0)) if v is not None]
    return math.ceil(min(limits)) if limits else None


def _divide(value: float | None, by: float) -> float | None:
    return None if value is None else value / by


def _options(ad: ClassAd) -> list[str]:
    options: list[str] = []
    per_node, tasks = _number(ad, *_PER_NODE), _number(ad, *_TASKS)
    table: list[tuple[str, float | None]] = [
        ("--cpus-per-task", _number(ad, "RequestCpus") if per_node is None and tasks is None else None),
        ("--mem", _number(ad, "RequestMemory")),
        ("--time", _minutes(ad)),
        ("--nodes", _number(ad, *_NODES)),
        ("--ntasks-per-node", per_node),
        ("--ntasks", tasks),
    ]
    for option, value in table:
        if value is not None:
            options.append(f"{option}={math.ceil(value)}")
    for option, names in (("--partition", ("pegasus_queue", "BatchQueue", "globus_queue")),
                          ("--account", ("pegasus_project", "BatchProject", "globus_project"))):
        text = _text(ad, *names)
        if text is not None:
            options.append(f"{option}={text}")
    return options


def render(launch: Launch, *, stem: str, run_id: str, script: str, spec: str, log: str,
           extra: Sequence[str] = ()) -> list[str]:
    """The ``sbatch`` argv for ``launch`` (see the module docstring); never run through a shell."""
    ad = launch.job_ad
    passthrough = _text(ad, "BatchExtraSubmitArgs", "pegasus_glite_arguments")
    return ["sbatch", "--parsable", f"--job-name=sheaf-{stem}",
            f"--comment=sheaf run={run_id} node={launch.node} attempt={launch.attempt} key={launch.key}",
            "--no-requeue", "--export=ALL", f"--output={log}", f"--error={log}",
            *_options(ad), *extra, *(shlex.split(passthrough) if passthrough else ()), script, spec]
