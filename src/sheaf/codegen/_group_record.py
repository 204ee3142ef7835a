"""The record of a grouped plan (``sheaf plan --group-size``), for the tools that read one.

``grid/groups.json`` in the submit directory: ``{"size": N, "dag": "<outer DAG file>", "collector":
path or null, "groups": {"group_NNNN": [node, ...]}}``; group ``group_NNNN`` runs the DAG file
``<wf>.group_NNNN.gdag`` and, after backing out of a site, its rescues ``<wf>.group_NNNN.gdag.rN``.
Kept apart from ``_groups`` (the cutting) so that readers -- the monitor beside ``sheaf run`` --
load nothing of planning.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["GROUPS_RECORD", "group_dag", "group_of", "read_groups"]

GROUPS_RECORD = os.path.join("grid", "groups.json")
_GROUP_DAG = re.compile(r"\.(group_\d+)\.gdag(?:\.r\d+)?$")


def group_dag(stem: str, label: str) -> str:
    """The DAG file of group ``label`` of the outer DAG ``<stem>.dag``."""
    return f"{stem}.{label}.gdag"


def read_groups(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record in ``directory`` (None when it holds no grouped plan)."""
    try:
        record = json.loads((Path(directory) / GROUPS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("groups"), dict) else None


def group_of(dag_file: str) -> str | None:
    """The group a group DAG file (or one of its rescues) runs: ``group_NNNN``."""
    found = _GROUP_DAG.search(os.path.basename(dag_file))
    return found.group(1) if found else None
