"""Backend names (``sheaf run --backend NAME``) to factories, and the choice of a backend per launch.

:data:`BACKENDS` is a plain table, ``name -> "module:function"``: the function takes
:class:`BackendOptions` and returns a backend; the module is imported only when the backend is
chosen (a Dask or HTCondor client is not loaded for a local run).  A new backend adds one line.

Per-site choice (``make_backend``): Pegasus users pick a batch system per site in their site catalog
(``pegasus.style = glite`` with ``condor.grid_resource = batch slurm``); the site's condor profiles
reach each of its jobs' submit descriptions, and the job ad's ``GridResource`` says ``batch slurm``.
Such launches go to that backend; every other launch goes to the one ``--backend`` names
(``_routing.RoutingBackend``), so local, Slurm and Dask mix in one run.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sheaf.engine import Backend
from sheaf.errors import UsageError

__all__ = ["BACKENDS", "BATCH_SYSTEMS", "BackendOptions", "factory", "make_backend", "state_dir"]

BACKENDS: dict[str, str] = {
    "local": "sheaf.backends.local:from_options",
    "slurm": "sheaf.backends.slurm:from_options",
}

# ``grid_resource = batch <system>`` (BLAHP's names) -> the backend that runs it
BATCH_SYSTEMS: dict[str, str] = {"slurm": "slurm"}


@dataclass(frozen=True, slots=True)
class BackendOptions:
    directory: str                      # the planned submit directory (a backend keeps its state under it)
    pool_config: str | None = None      # the local pool's configuration file
    scheduler: str | None = None        # a scheduler's address (Dask)
    env: Mapping[str, str] = field(default_factory=dict)  # the settings a backend reads (SHEAF_SLURM_...)


def factory(name: str) -> Callable[[BackendOptions], Backend]:
    where = BACKENDS.get(name)
    if where is None:
        raise UsageError(f"unknown backend {name!r}; one of: {', '.join(sorted(BACKENDS))}")
    module, _, function = where.partition(":")
    made: Callable[[BackendOptions], Backend] = getattr(importlib.import_module(module), function)
    return made


def make_backend(name: str, options: BackendOptions) -> Backend:
    """The backend ``name``, with launches whose ``GridResource`` names a batch system routed to it."""
    from sheaf.backends._routing import RoutingBackend

    routes = {system: (lambda backend=backend: factory(backend)(options))
              for system, backend in BATCH_SYSTEMS.items() if backend != name}
    # a route is asked to adopt a killed engine's jobs only if it kept state in this directory
    stateful = {system for system, backend in BATCH_SYSTEMS.items()
                if os.path.isdir(state_dir(options.directory, backend))}
    default = factory(name)(options)
    return RoutingBackend(default, routes, stateful) if routes else default


def state_dir(directory: str, backend: str) -> str:
    """Where backend ``backend`` keeps the records of runs of the submit directory ``directory``."""
    return os.path.join(directory, f"sheaf-{backend}")
