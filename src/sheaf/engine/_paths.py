"""Where a run's files are: the DAG file of a planned directory and the engine's state beside it.

Kept apart from the loop so that the readers of a run's records (the events loader, ``sheaf
status``) find the journal without importing the engine that writes it.  The state directory is
``.sheaf/`` beside the DAG file: ``<dag>.journal`` (the durable record of the run), ``<dag>.lock``
(one engine per DAG) and ``<dag>.scripts.log``.  Rescue DAGs are beside the DAG file:
``<primary dag>.rescueNNN`` (``<primary dag>_multi.rescueNNN`` for a run of several DAG files), the
newest of which a rescue run reads and the next of which a failed run writes -- up to
``DAGMAN_MAX_RESCUE_NUM`` (default 100), whose number a later failure overwrites, as DAGMan does.
"""

from __future__ import annotations

__all__ = ["MAX_RESCUE_DEFAULT", "find_dag", "named_rescue", "newest_rescue", "next_rescue",
           "rescue_dag_number", "rescue_number", "retire_rescues", "save_file", "state_paths"]

import glob
import os
import re

from sheaf.condor import save_point_path
from sheaf.errors import UsageError
from sheaf.model import STATE_DIR, lock_path

_RESCUE_RE = re.compile(r"\.rescue(\d{3,})$")


def find_dag(directory: str, dag_file: str | None = None) -> str:
    """The DAG file of a planned directory: ``dag_file`` or the one ``*.dag`` in ``directory``."""
    if dag_file:
        path = dag_file if os.path.isabs(dag_file) else os.path.join(directory, dag_file)
        if not os.path.isfile(path):
            raise UsageError(f"no DAG file {path}")
        return os.path.abspath(path)
    if os.path.isfile(directory):
        return os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise UsageError(f"no such directory: {directory}")
    dags = sorted(n for n in os.listdir(directory) if n.endswith(".dag"))
    if len(dags) != 1:
        found = ", ".join(dags) or "none"
        raise UsageError(f"{directory}: expected exactly one *.dag file (found {found}); use --dag")
    return os.path.abspath(os.path.join(directory, dags[0]))


def state_paths(dag_path: str) -> dict[str, str]:
    """The engine's state files of the DAG ``dag_path`` (see the module docstring)."""
    base = os.path.basename(dag_path)
    state = os.path.join(os.path.dirname(dag_path), STATE_DIR)
    return {"dir": state, "journal": os.path.join(state, base + ".journal"),
            "lock": lock_path(dag_path), "scripts": os.path.join(state, base + ".scripts.log")}


def _rescues(dag_path: str, multi: bool) -> list[tuple[int, str]]:
    base = dag_path + ("_multi" if multi else "")
    return sorted((int(m.group(1)), p) for p in glob.glob(glob.escape(base) + ".rescue*")
                  if (m := _RESCUE_RE.search(p)))


def newest_rescue(dag_path: str, multi: bool = False) -> str | None:
    found = _rescues(dag_path, multi)
    return found[-1][1] if found else None


def retire_rescues(dag_path: str, multi: bool = False, after: int = 0) -> list[str]:
    """Rename the rescue DAGs numbered above ``after`` to ``<name>.old``, as condor_submit_dag's
    ``-force`` (all) and ``-DoRescueFrom N`` (those after N) do; the names given."""
    retired = [path for number, path in _rescues(dag_path, multi) if number > after]
    for path in retired:
        os.replace(path, path + ".old")
    return retired


def rescue_number(dag_path: str, multi: bool, number: int) -> str:
    """Rescue DAG ``number`` of the DAG (``-DoRescueFrom``), which must exist."""
    path = f"{dag_path}{'_multi' if multi else ''}.rescue{number:03d}"
    if not os.path.isfile(path):
        raise UsageError(f"-DoRescueFrom {number}: no rescue DAG {path}")
    return path


def named_rescue(directory: str, dag_path: str, multi: bool, name: str) -> tuple[str, int]:
    """The rescue DAG file ``name`` (condor_submit_dag ``-RescueFile``; a relative name from the run's
    ``directory``), which must exist, and its number: N for ``<primary dag>.rescueNNN``, else 0."""
    path = os.path.abspath(os.path.join(directory, name))
    if not os.path.isfile(path):
        raise UsageError(f"-RescueFile {name}: no rescue DAG {path}")
    return path, rescue_dag_number(path, dag_path, multi)


def rescue_dag_number(path: str, dag_path: str, multi: bool = False) -> int:
    """The number of the rescue DAG ``path`` of the DAG ``dag_path``, as DAGMan reads it: the digits after
    ``<primary dag>.rescue`` (``<primary dag>_multi.rescue`` for several DAG files); 0 for a file not
    named so (a ``-RescueFile`` of another name, a save point file)."""
    base = dag_path + ("_multi" if multi else "") + ".rescue"
    digits = re.match(r"\d+", path[len(base):]) if path.startswith(base) else None
    return int(digits.group()) if digits else 0


def save_file(dag_path: str, name: str) -> str:
    """The save point file ``name`` of the DAG (condor_submit_dag ``-load_save``), which must exist:
    found where ``SAVE_POINT_FILE`` writes it (``sheaf.condor.save_point_path``)."""
    path = save_point_path(dag_path, name)
    if not os.path.isfile(path):
        raise UsageError(f"-load_save {name}: no save file {path}")
    return path


#: DAGMAN_MAX_RESCUE_NUM's default
MAX_RESCUE_DEFAULT = 100


def next_rescue(dag_path: str, multi: bool = False, limit: int = MAX_RESCUE_DEFAULT) -> str:
    """The rescue DAG a run writes: numbered one more than the newest, at most ``limit`` (see the
    module docstring)."""
    newest = newest_rescue(dag_path, multi)
    number = int(_RESCUE_RE.search(newest).group(1)) + 1 if newest else 1  # type: ignore[union-attr]
    number = min(number, limit)
    return f"{dag_path}{'_multi' if multi else ''}.rescue{number:03d}"
