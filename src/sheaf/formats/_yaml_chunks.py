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

import mmap
import os
from collections.abc import Iterator
from typing import Any

import yaml_rs

from sheaf.formats._common import Source
from sheaf.model import Workflow

SLICE_CHARS = 4 << 20
_AFTER_JOBS = (b"pegasus:", b"name:", b"hooks:", b"profiles:", b"metadata:", b"siteCatalog:", b"replicaCatalog:",
               b"transformationCatalog:", b"jobDependencies:", b"x-")
_PAGE = mmap.PAGESIZE
Buffer = bytes | mmap.mmap


class _Fallback(Exception):
    """The slices cannot be trusted: parse the whole document instead."""


def plan_slices(data: Buffer, slice_chars: int | None = None) -> tuple[bytes, list[tuple[int, int]]] | None:
    """``(rest of the document with 'jobs: []', [(start, end) byte offsets of each slice])``, or ``None``."""
    slice_chars = SLICE_CHARS if slice_chars is None else slice_chars
    if len(data) <= slice_chars or data.find(b"\n---", 1) != -1 or data.find(b"\n...") != -1:
        return None
    if data[:5] == b"jobs:":
        key = 0
    else:
        found = data.find(b"\njobs:")
        if found == -1:
            return None
        key = found + 1
    line_end = data.find(b"\n", key)
    after = data[key + 5:line_end].strip() if line_end != -1 else b"?"
    if (after and not after.startswith(b"#")) or data.find(b"\njobs:", key) != -1:
        return None  # flow style (jobs: [...]) or a second 'jobs:'
    start = line_end + 1
    indent = _item_indent(data, start)
    if indent is None:
        return None
    found_keys = (data.find(b"\n" + k, start) for k in _AFTER_JOBS)
    end = min((p for p in found_keys if p != -1), default=len(data))
    separator = b"\n" + b" " * indent + b"- "
    slices: list[tuple[int, int]] = []
    at = start
    while at < end:
        cut = data.find(separator, at + slice_chars, end)
        cut = end if cut == -1 else cut + 1
        slices.append((at, cut))
        at = cut
    rest = data[:key] + b"jobs: []\n" + data[end + 1:]
    return rest, slices


def _item_indent(data: Buffer, start: int) -> int | None:
    """The indentation of the first job item (``<indent>- ``) after ``start``, skipping comments."""
    at = start
    while at < len(data):
        line_end = data.find(b"\n", at)
        line = data[at:line_end if line_end != -1 else len(data)]
        stripped = line.lstrip(b" ")
        if stripped.strip() and not stripped.startswith(b"#"):
            return len(line) - len(stripped) if stripped.startswith(b"- ") else None
        if line_end == -1:
            return None
        at = line_end + 1
    return None


def read_in_slices(src: Source, convert: Any) -> Workflow | None:
    """The workflow read slice by slice (module docstring), or ``None`` to parse it whole.

    ``convert(data, src, chunks)`` is ``workflow_from_data``; ``chunks`` yields lists of raw jobs.
    The file is mapped, not read: each slice's pages are dropped from memory once parsed.
    """
    try:
        with open(src.path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size <= SLICE_CHARS:
                return None
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _read_mapped(data, src, convert)
    except (OSError, ValueError):
        return None  # not a regular file, cannot be mapped: the whole-document path reports it


def _read_mapped(data: mmap.mmap, src: Source, convert: Any) -> Workflow | None:
    plan = plan_slices(data)
    _drop(data, 0, len(data))  # planning touched every page
    if plan is None:
        return None
    rest, slices = plan
    try:
        loaded = yaml_rs.loads(rest.decode("utf-8"), parse_datetime=False)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None
    del rest
    if not isinstance(loaded, dict) or loaded.get("jobs") != []:
        return None
    try:
        workflow: Workflow = convert(loaded, src, _chunks(data, slices))
    except _Fallback:
        return None
    return workflow


def _drop(data: mmap.mmap, start: int, end: int) -> None:
    """Let the kernel drop the pages of ``[start, end)``; they are read again only if touched."""
    aligned = start - start % _PAGE
    if end > aligned and hasattr(data, "madvise"):
        data.madvise(mmap.MADV_DONTNEED, aligned, end - aligned)


def _chunks(data: mmap.mmap, slices: list[tuple[int, int]]) -> Iterator[list[Any]]:
    for start, end in slices:
        try:
            items = yaml_rs.loads(data[start:end].decode("utf-8"), parse_datetime=False)
        except (ValueError, TypeError, OverflowError, RecursionError):  # UnicodeDecodeError is a ValueError
            raise _Fallback from None
        _drop(data, start, end)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _Fallback
        yield items
