"""``--backend htcondor``: hand the whole planned DAG to DAGMan on an HTCondor pool.

Policy
    On a pool, DAGMan is the engine: it keeps dependencies, retries, PRE/POST scripts, throttles and
    rescue DAGs itself, so sheaf's engine does not run.  :func:`submit_dag` does what
    ``condor_submit_dag`` does, through the official bindings: ``htcondor2.Submit.from_dag`` writes
    ``<dag>.condor.sub`` beside the DAG (it needs ``condor_dagman`` on PATH, as condor_submit_dag
    does; run in the DAG's directory, whose relative paths the DAG's ``CONFIG`` and ``SUBDAG`` lines
    use; ``update_submit``, so that handing a DAG over again after a rescue rewrites the file, as
    ``condor_submit_dag -update_submit``) and returns that description, which ``Schedd().submit``
    queues.  The description's
    ``initialdir`` is the DAG's directory, so DAGMan finds the node files the plan wrote wherever
    ``sheaf run`` was started.  The user follows the run with HTCondor's tools (``condor_q -dag``,
    the ``<dag>.dagman.out`` log) or ``sheaf status``, which reads the same files.

Detection
    :func:`find_schedd` locates the schedd of the local configuration and asks it one empty query.
    When the bindings are missing, no schedd is configured or it does not answer, the run stops
    with one ``EngineError`` saying that no schedd is reachable and what to do instead: a missing
    pool is a fact of the machine, not bad input (the CLI exits 1, not 2).

Nothing is half-done: the schedd is found before anything is written, and a failed submission
leaves only the ``.condor.sub`` file, which condor_submit_dag would leave too.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from sheaf.engine import find_dag
from sheaf.errors import EngineError, UsageError

__all__ = ["DagmanSubmission", "HTCondorBackend", "find_schedd", "render_dag_submit", "submit_dag"]

_INSTEAD = "run it where a pool is (condor_submit_dag), or use --backend local, slurm or dask"


@dataclass(frozen=True, slots=True)
class DagmanSubmission:
    cluster: int          # the DAGMan job's cluster id in the schedd's queue
    dag: str              # the DAG file handed over
    submit_file: str      # <dag>.condor.sub, as condor_submit_dag writes it


def bindings() -> ModuleType:
    """``htcondor2``, or the reason no schedd can be reached without it."""
    try:
        return importlib.import_module("htcondor2")
    except ImportError:
        raise EngineError(f"no HTCondor schedd is reachable: the htcondor Python bindings are not "
                          f"installed (pip install htcondor); {_INSTEAD}") from None


def find_schedd() -> Any:
    """The schedd of this machine's HTCondor configuration, checked with one empty query."""
    htcondor2 = bindings()
    try:
        schedd = htcondor2.Schedd()
        schedd.query(constraint="false", projection=["ClusterId"], limit=1)
    except Exception as exc:  # noqa: BLE001 - the bindings raise HTCondorException and built-ins alike
        raise EngineError(f"no HTCondor schedd is reachable ({exc}); {_INSTEAD}") from None
    return schedd


def render_dag_submit(dag_path: str, options: Mapping[str, Any] | None = None) -> Any:
    """The DAGMan job's submit description (``htcondor2.Submit``); writes ``<dag>.condor.sub``."""
    htcondor2 = bindings()
    if shutil.which("condor_dagman") is None:
        raise EngineError(f"condor_dagman is not on PATH, so DAGMan cannot run the DAG here; {_INSTEAD}")
    directory = os.path.dirname(os.path.abspath(dag_path))
    try:
        with contextlib.chdir(directory):  # the DAG's own paths (CONFIG, SUBDAGs) are relative to it
            submit = htcondor2.Submit.from_dag(dag_path, {"update_submit": True, **(options or {})})
    except Exception as exc:  # noqa: BLE001 - HTCondorException for a DAG DAGMan refuses
        raise EngineError(f"{dag_path}: DAGMan's submit description could not be made: {exc}") from None
    submit["initialdir"] = directory
    return submit


def submit_dag(dag_path: str, *, options: Mapping[str, Any] | None = None,
               schedd: Any = None) -> DagmanSubmission:
    """Queue DAGMan for ``dag_path`` on ``schedd`` (found when None); see the module docstring."""
    schedd = find_schedd() if schedd is None else schedd
    submit = render_dag_submit(dag_path, options)
    try:
        result = schedd.submit(submit)
    except Exception as exc:  # noqa: BLE001 - the schedd refused: say why, as condor_submit_dag does
        raise EngineError(f"the schedd refused the DAGMan job for {dag_path}: {exc}") from None
    return DagmanSubmission(int(result.cluster()), dag_path, dag_path + ".condor.sub")


class HTCondorBackend:
    """What ``sheaf run --backend htcondor`` makes: the pool's schedd, found at once.  It takes the whole
    DAG (``submit_dag``: the DAG goes to DAGMan, sheaf's engine does not run it)."""

    def __init__(self, schedd: Any = None) -> None:
        self.schedd = find_schedd() if schedd is None else schedd

    def submit_dag(self, directory: str, dag_files: Sequence[str] = (), *,
                   options: Mapping[str, Any] | None = None) -> DagmanSubmission:
        if len(dag_files) > 1:
            raise UsageError("--backend htcondor hands one DAG file to DAGMan; give one --dag")
        dag_path = find_dag(directory, dag_files[0] if dag_files else None)
        return submit_dag(dag_path, options=options, schedd=self.schedd)
