"""sheaf.backends.htcondor: ``--backend htcondor``, the whole planned DAG handed to DAGMan on a pool.

``HTCondorBackend`` and :func:`submit_dag` (``_backend``; its docstring has the design) go through
the official ``htcondor2`` bindings, imported only when a DAG is handed over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.backends.htcondor._backend import (
        DagmanSubmission,
        HTCondorBackend,
        find_schedd,
        render_dag_submit,
        submit_dag,
    )

__all__: list[str] = ["DagmanSubmission", "HTCondorBackend", "find_schedd", "render_dag_submit", "submit_dag"]

__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, "_backend"))
