"""Backends by the name ``sheaf run --backend NAME`` takes: a plain dict, name -> factory.

A factory takes the run's backend options as keywords (``pool_config``, ``scheduler``) and ignores
the ones it has no use for.  It is called once per run, by the engine, after the run lock is taken.
Backends import their optional libraries (distributed, htcondor2) only when made.  A backend whose
product has ``whole_dag = True`` takes the whole DAG (``submit_dag``): sheaf's engine does not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BACKENDS"]


def _local(*, pool_config: str | None = None, **_: Any) -> Any:
    from sheaf.backends._pool import Pool
    from sheaf.backends.local import LocalBackend

    return LocalBackend(Pool.from_config(pool_config))


def _dask(*, scheduler: str | None = None, **_: Any) -> Any:
    from sheaf.backends.dask import DaskBackend

    return DaskBackend(scheduler)


def _htcondor(**_: Any) -> Any:
    from sheaf.backends.htcondor import HTCondorBackend

    return HTCondorBackend()


BACKENDS: dict[str, Callable[..., Any]] = {"local": _local, "dask": _dask, "htcondor": _htcondor}
