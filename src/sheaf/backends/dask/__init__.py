"""sheaf.backends.dask: node attempts as tasks of a Dask cluster (``sheaf run DIR --backend dask``).

``DaskBackend`` (``_backend``; its docstring has the design) hands each attempt to Dask as one task,
``_task.run_attempt``, which runs it through the local backend on a one-slot pool of the worker; the
task's start and exit records (``_records``) are what an engine resumed after a crash reads.

Imported lazily: every Dask worker imports ``_task`` to run a task, and needs nothing of the backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.backends.dask._backend import DaskBackend, pool_config

__all__: list[str] = ["DaskBackend", "pool_config"]

__getattr__ = lazy_exports(__name__, {"DaskBackend": "_backend", "pool_config": "_backend"})
