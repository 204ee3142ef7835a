"""sheaf.backends: where node attempts run.  Each backend implements ``sheaf.engine.Backend``.

One subpackage per backend, each holding its own private modules:

- ``LocalBackend`` (``sheaf.backends.local``): this machine's slots, as configured for the local pool.
- ``SlurmBackend`` (``sheaf.backends.slurm``): one Slurm batch job per attempt, run by the job wrapper
  ``slurm._job``.
- ``DaskBackend`` (``sheaf.backends.dask``): one Dask task per attempt, run by the local backend on
  the worker.
- ``HTCondorBackend`` (``sheaf.backends.htcondor``): the whole DAG handed to DAGMan on a pool.
- ``GridBackend`` (``sheaf.backends.grid``): group DAGs matched to grid sites, with the collector
  and the site ads.

What several backends share is a private module of this package: the local pool (``Pool``: ``_pool``,
laid out by ``_slotlayout`` from ``_slotconfig``, slot attributes ``_slotattrs``, shapes
``_poolsig``), the launch queue (``_queue``), machine-wide concurrency limits (``MachineLimits``:
``_limits``), starting a process (``_spawn``), the job guard (``_jobguard``), the memory watch
(``_memwatch``), file-transfer sandboxes (``_sandbox``), ``periodic_*`` policies (``_periodic``),
the state directory of attempt records (``_records``); ``BACKENDS``, ``make_backend``
(``_registry``): backend names (``sheaf run --backend NAME``) to factories; ``_routing`` sends each
launch to the backend of its site.

The package imports its backends lazily (``__getattr__``), and so does each backend's package: the
Slurm job wrapper imports a module of it at the start of every job, and the local pool's
configuration readers are slow to import.

The local, Slurm and Dask backends pass the shared contract test, ``tests/backends/contract.py``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: the Slurm job wrapper imports this package, and typing costs it
if TYPE_CHECKING:
    from sheaf.backends._limits import MachineLimits
    from sheaf.backends._pool import Pool
    from sheaf.backends._registry import BACKENDS, BATCH_SYSTEMS, make_backend
    from sheaf.backends._slotconfig import load_config as load_pool_config
    from sheaf.backends.local import LocalBackend

__all__: list[str] = [
    "BACKENDS", "BATCH_SYSTEMS", "LocalBackend", "MachineLimits", "Pool", "load_pool_config", "make_backend",
]

# name -> "module" or "module:attribute" it is found as there
_HOMES = {
    "MachineLimits": "sheaf.backends._limits", "LocalBackend": "sheaf.backends.local",
    "Pool": "sheaf.backends._pool", "BACKENDS": "sheaf.backends._registry",
    "BATCH_SYSTEMS": "sheaf.backends._registry",
    "make_backend": "sheaf.backends._registry", "load_pool_config": "sheaf.backends._slotconfig:load_config",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sheaf.backends' has no attribute {name!r}")
    module, _, attribute = home.partition(":")
    return getattr(importlib.import_module(module), attribute or name)
