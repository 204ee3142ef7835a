"""Backends by the name ``sheaf run --backend NAME`` takes: a plain dict, name -> factory; and the
choice of a backend per launch.

A factory takes the run's backend options as keywords (``directory``, ``pool_config``, ``scheduler``,
``env``) and ignores the ones it has no use for.  It is called once per run, by the engine, after the
run lock is taken.  Backends import their optional libraries (distributed, htcondor2) only when made.
A backend that takes the whole DAG (:class:`WholeDag`: ``submit_dag``) hands it to DAGMan: sheaf's engine
does not run.

Per-site choice (:func:`make_backend`): Pegasus users pick a batch system per site in their site
catalog (``pegasus.style = glite`` with ``condor.grid_resource = batch slurm``); the site's condor
profiles reach each of its jobs' submit descriptions, and the job ad's ``GridResource`` says
``batch slurm``.  Such launches go to that backend (:data:`BATCH_SYSTEMS`); every other launch goes
to the one ``--backend`` names (``_routing.RoutingBackend``), so local, Slurm and Dask mix in one run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from sheaf.errors import UsageError

__all__ = ["BACKENDS", "BATCH_SYSTEMS", "WholeDag", "make_backend", "state_dir"]


@runtime_checkable
class WholeDag(Protocol):
    """A backend that runs a whole DAG itself (DAGMan on an HTCondor pool), not node by node."""

    def submit_dag(self, directory: str, dag_files: Sequence[str] = (), *,
                   options: Mapping[str, Any] | None = None) -> object: ...


def _local(*, pool_config: str | None = None, **_: Any) -> Any:
    from sheaf.backends._pool import Pool
    from sheaf.backends.local import LocalBackend

    return LocalBackend(Pool.from_config(pool_config))


def _dask(*, scheduler: str | None = None, directory: str = ".", **_: Any) -> Any:
    from sheaf.backends.dask import DaskBackend

    return DaskBackend(scheduler, state_dir=state_dir(directory, "dask"))


def _htcondor(**_: Any) -> Any:
    from sheaf.backends.htcondor import HTCondorBackend

    return HTCondorBackend()


def _slurm(*, directory: str = ".", env: Any = None, **_: Any) -> Any:
    from sheaf.backends.slurm import from_options

    return from_options(state_dir=state_dir(directory, "slurm"), env=env)


BACKENDS: dict[str, Callable[..., Any]] = {
    "local": _local, "dask": _dask, "htcondor": _htcondor,
    "slurm": _slurm,
}

# ``grid_resource = batch <system>`` (BLAHP's names) -> the backend that runs it
BATCH_SYSTEMS: dict[str, str] = {"slurm": "slurm"}


def state_dir(directory: str, backend: str) -> str:
    """Where backend ``backend`` keeps the records of runs of the submit directory ``directory``."""
    return os.path.join(directory, f"sheaf-{backend}")


def make_backend(name: str, **options: Any) -> Any:
    """The backend ``name``, with launches whose ``GridResource`` names a batch system routed to it."""
    from sheaf.backends._routing import RoutingBackend

    made = BACKENDS.get(name)
    if made is None:
        raise UsageError(f"unknown backend {name!r}; one of: {', '.join(sorted(BACKENDS))}")
    default = made(**options)
    if isinstance(default, WholeDag):
        return default  # DAGMan runs the DAG: nothing to route
    routes = {system: (lambda backend=backend: BACKENDS[backend](**options))
              for system, backend in BATCH_SYSTEMS.items() if backend != name}
    # a route is asked to adopt a killed engine's jobs only if it kept state in this directory
    directory = options.get("directory") or "."
    stateful = {system for system, backend in BATCH_SYSTEMS.items()
                if os.path.isdir(state_dir(directory, backend))}
    # local and scheduler universe jobs run where the engine does, as the schedd runs them
    submit_host = None if name == "local" else (lambda: BACKENDS["local"](**options))
    return RoutingBackend(default, routes, stateful, submit_host) if routes or submit_host else default
