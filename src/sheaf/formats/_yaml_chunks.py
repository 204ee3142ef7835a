"""Reading a large workflow's ``jobs`` in slices: raw YAML data and the model never both exist in full.

Loaded YAML costs about fifteen times the file's size in Python objects (600 MB for a 40 MB,
10^5-job file), so a 10^6-job workflow cannot be loaded in one piece within 2 GB.  For files of
the layout that the Pegasus Python API and sheaf write -- a top-level block sequence under
``jobs:``, each job starting on a line ``<indent>- `` -- the jobs are cut at item boundaries into
slices of about ``SLICE_CHARS`` characters, each slice is parsed on its own and converted, and its
raw data is dropped before the next.  The rest of the document (header, catalogs,
``jobDependencies``) is parsed with ``jobs: []`` in place of the block.

Safety: any doubt falls back to parsing the whole document, which gives the same result or the
located syntax error:

- the layout is not recognized (flow-style ``jobs: [...]``, several documents, ``jobs:`` twice);
- a slice or the rest does not parse, or is not what it should be (a list of jobs; a mapping whose
  ``jobs`` is empty) -- an alias to an anchor in another slice fails this way.

Where the block ends is found by looking for the top-level keys a workflow may have after
``jobs``; an unexpected top-level line inside the block makes its slice fail to parse, and so falls
back too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml_rs

from sheaf.formats._common import Source
from sheaf.model import Workflow

SLICE_CHARS = 4 << 20
_AFTER_JOBS = ("pegasus:", "name:", "hooks:", "profiles:", "metadata:", "siteCatalog:", "replicaCatalog:",
               "transformationCatalog:", "jobDependencies:", "x-")


class _Fallback(Exception):
    """The slices cannot be trusted: parse the whole document instead."""


def plan_slices(text: str, slice_chars: int | None = None) -> tuple[str, list[tuple[int, int]]] | None:
    """``(rest of the document with 'jobs: []', [(start, end) of each slice])``, or ``None``."""
    slice_chars = SLICE_CHARS if slice_chars is None else slice_chars
    if len(text) <= slice_chars or text.find("\n---", 1) != -1 or "\n..." in text:
        return None
    if text.startswith("jobs:"):
        key = 0
    else:
        found = text.find("\njobs:")
        if found == -1:
            return None
        key = found + 1
    line_end = text.find("\n", key)
    after = text[key + 5:line_end].strip() if line_end != -1 else "?"
    if (after and not after.startswith("#")) or text.find("\njobs:", key) != -1:
        return None  # flow style (jobs: [...]) or a second 'jobs:'
    start = line_end + 1
    indent = _item_indent(text, start)
    if indent is None:
        return None
    end = min((p for p in (text.find("\n" + k, start) for k in _AFTER_JOBS) if p != -1), default=len(text))
    separator = "\n" + " " * indent + "- "
    slices: list[tuple[int, int]] = []
    at = start
    while at < end:
        cut = text.find(separator, at + slice_chars, end)
        cut = end if cut == -1 else cut + 1
        slices.append((at, cut))
        at = cut
    rest = text[:key] + "jobs: []\n" + text[end + 1:]
    return rest, slices


def _item_indent(text: str, start: int) -> int | None:
    """The indentation of the first job item (``<indent>- ``) after ``start``, skipping comments."""
    at = start
    while at < len(text):
        line_end = text.find("\n", at)
        line = text[at:line_end if line_end != -1 else len(text)]
        stripped = line.lstrip(" ")
        if stripped and not stripped.startswith("#"):
            return len(line) - len(stripped) if stripped.startswith("- ") else None
        if line_end == -1:
            return None
        at = line_end + 1
    return None


def read_in_slices(src: Source, convert: Any) -> Workflow | None:
    """The workflow read slice by slice (module docstring), or ``None`` to parse it whole.

    ``convert(data, src, chunks)`` is ``workflow_from_data``; ``chunks`` yields lists of raw jobs.
    """
    plan = plan_slices(src.text)
    if plan is None:
        return None
    rest, slices = plan
    try:
        data = yaml_rs.loads(rest, parse_datetime=False)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None
    del rest
    if not isinstance(data, dict) or data.get("jobs") != []:
        return None
    try:
        workflow: Workflow = convert(data, src, _chunks(src.text, slices))
    except _Fallback:
        return None
    return workflow


def _chunks(text: str, slices: list[tuple[int, int]]) -> Iterator[list[Any]]:
    for start, end in slices:
        try:
            items = yaml_rs.loads(text[start:end], parse_datetime=False)
        except (ValueError, TypeError, OverflowError, RecursionError):
            raise _Fallback from None
        if items is None:
            continue
        if not isinstance(items, list):
            raise _Fallback
        yield items
