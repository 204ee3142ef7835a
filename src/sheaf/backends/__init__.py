"""sheaf.backends: where node attempts run.  Each backend implements ``sheaf.engine.Backend``.

- ``LocalBackend`` (``sheaf.backends.local``): this machine's slots, as configured for the local pool
  (``Pool``: ``_pool``, laid out by ``_slotlayout`` from ``_slotconfig``), with machine-wide concurrency
  limits (``MachineLimits``: ``_limits``).
- ``SlurmBackend`` (``sheaf.backends.slurm``): one Slurm batch job per attempt, run by the job wrapper
  ``slurm._job``.
- ``BACKENDS``, ``make_backend`` (``_registry``): backend names (``sheaf run --backend NAME``) to
  factories; ``_routing`` sends each launch to the backend of its site.

The package imports its backends lazily (``__getattr__``): the Slurm job wrapper imports a module of
it at the start of every job, and the local pool's configuration readers cost ~0.2 s to import.

Every backend passes the shared contract test, ``tests/backends/contract.py``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: the Slurm job wrapper imports this package, and typing costs it
if TYPE_CHECKING:
    from sheaf.backends._limits import MachineLimits
    from sheaf.backends._pool import Pool
    from sheaf.backends._registry import BACKENDS, make_backend
    from sheaf.backends._slotconfig import load_config as load_pool_config
    from sheaf.backends.local import LocalBackend

__all__: list[str] = [
    "BACKENDS", "LocalBackend", "MachineLimits", "Pool", "load_pool_config", "make_backend",
]

# name -> "module" or "module:attribute" it is found as there
_HOMES = {
    "MachineLimits": "sheaf.backends._limits", "LocalBackend": "sheaf.backends.local",
    "Pool": "sheaf.backends._pool", "BACKENDS": "sheaf.backends._registry",
    "make_backend": "sheaf.backends._registry", "load_pool_config": "sheaf.backends._slotconfig:load_config",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sheaf.backends' has no attribute {name!r}")
    module, _, attribute = home.partition(":")
    return getattr(importlib.import_module(module), attribute or name)
