"""Node ids of the executable workflow (DAGMan JOB names), Pegasus style.

- compute and sub-workflow jobs: ``<name>_<id>`` (``preprocess_ID0000001``), ``name`` being the
  transformation name (a sub-workflow job's file);
- horizontal clusters: ``merge_<ns-name-version>_PID<level>_ID<n>``, absent parts left out, ``n``
  counting 1.. per level (``merge_diamond-findrange-4_0_PID2_ID1``);
- label clusters ``merge_<label>``, whole-workflow clustering ``merge_whole-wf``.

Characters DAGMan cannot take in a node name (anything but ``A-Z a-z 0-9 _ . -``; ``+`` is its
splice separator) become ``_``, and a cluster's ``<ns-name-version>`` also loses ``.``, ``+`` and
``=`` as the reference planner does.  ``unique`` makes ids unique deterministically: the first
holder keeps its id, a later one gets ``_2``, ``_3``, ... (skipping ids already taken).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_UNSAFE_IN_MERGE = re.compile(r"[^A-Za-z0-9_\-]")


def safe(text: str) -> str:
    return _UNSAFE.sub("_", text) if _UNSAFE.search(text) else text


def job_id(name: str, abstract_id: str) -> str:
    return f"{safe(name)}_{safe(abstract_id)}"


def horizontal_id(namespace: str | None, name: str, version: str | None, level: int, n: int) -> str:
    base = "-".join(part for part in (namespace, name, version) if part)
    return f"merge_{_UNSAFE_IN_MERGE.sub('_', base)}_PID{level}_ID{n}"


def label_id(label: str) -> str:
    return f"merge_{safe(label)}"


WHOLE_ID = "merge_whole-wf"
WHOLE_LABEL = "whole-wf"


def unique(names: Sequence[str]) -> list[str]:
    """``names`` made unique (module docstring); order kept."""
    taken = set(names)
    if len(taken) == len(names):
        return list(names)
    seen: set[str] = set()
    result: list[str] = []
    for name in names:
        unique = name
        if name in seen:
            n = 2
            while f"{name}_{n}" in taken:
                n += 1
            unique = f"{name}_{n}"
            taken.add(unique)
        seen.add(unique)
        result.append(unique)
    return result
