"""Reading and writing the formats users bring: the workflow by content (YAML, DAX, WfCommons), the
three catalogs and properties; writers replace their target atomically.  ``sheaf.formats``
re-exports these (the package docstring is the policy)."""


from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sheaf._gc import freeze, gc_paused
from sheaf.errors import FormatError, InputError, ValidationError
from sheaf.formats._common import PathLike, TextSource, locate_error, located_in, read_text
from sheaf.formats._expand import Variables, expand_text
from sheaf.formats._file_rc import looks_like_file_rc, parse_file_rc
from sheaf.formats._yaml_catalogs import (
    rc_from_data,
    rc_to_data,
    sc_from_data,
    sc_to_data,
    tc_from_data,
    tc_to_data,
)
from sheaf.formats._yaml_chunks import read_in_slices
from sheaf.formats._yaml_emit import dumps as _emit
from sheaf.formats._yaml_workflow import workflow_from_data, workflow_yaml
from sheaf.model import ReplicaCatalog, SiteCatalog, TransformationCatalog, Workflow, check_names, nul_problem

#: from this many jobs on, the loaded model is frozen out of the cyclic collector (``read_workflow``)
_FREEZE_JOBS = 10_000


def _first_char(text: str) -> str:
    stripped = text.lstrip("\ufeff \t\r\n")
    return stripped[:1]


def read_workflow(path: PathLike, *, warnings: list[str] | None = None,
                  variables: Variables | None = None) -> Workflow:
    """A workflow from Pegasus 5.0 YAML, DAX 3 XML or WfCommons JSON (by content).

    Whatever the format, names that become file names are checked here (``check_names``), so that
    ``sheaf plan`` refuses what ``sheaf validate`` refuses, with the line.  With ``variables``,
    ``${NAME}`` in a YAML or DAX workflow is expanded first (``_expand``)."""
    head = _head(path)
    first = _first_char(head)
    if variables is not None and not (first == "{" and '"schemaVersion"' in head) and _has_reference(path):
        return _read_expanded_workflow(path, warnings, variables, first)
    if first == "<" or (first == "{" and ('"schemaVersion"' in head or '"workflow"' in head)):
        module, what = ("_dax", "DAX XML") if first == "<" else ("_wfcommons", "WfCommons JSON")
        other: Workflow = _other(f"sheaf.formats.{module}", f"read{module}", what, path, warnings)
        return _names_checked(other, path)
    src = TextSource(str(path), None, warnings)  # the text is read only if it is needed
    with gc_paused():
        with located_in(str(path)):
            workflow = read_in_slices(src, workflow_from_data)
            if workflow is None:
                data = src.load_yaml()
                src.release()
                workflow = workflow_from_data(data, src)
        src.release()
        _refuse_nul(workflow, path)
        _names_checked(workflow, path)
        if len(workflow.jobs) >= _FREEZE_JOBS:
            # The model is millions of long-lived, acyclic objects built with the collector off:
            # left tracked, the next collections (in validation, planning) would rescan them all
            # (a third of validation time at 10^5 jobs).  Frozen, they are still freed by reference
            # counting; only cyclic garbage alive at this moment is kept, which is little.
            freeze()
        return workflow


#: the YAML escapes that make a NUL (a raw NUL byte is not YAML: the loader refuses it)
_NUL_ESCAPE = re.compile(rb"\\(?:0|x00|u0000|U00000000)")


def _has_reference(path: PathLike) -> bool:
    """Whether the file holds ``${`` (one search over the mapped file)."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"${") >= 0
    except (OSError, ValueError):  # empty, or not a regular file: the readers report it
        return False


def _read_expanded_workflow(path: PathLike, warnings: list[str] | None, variables: Variables,
                            first: str) -> Workflow:
    """A YAML or DAX workflow read from its text with ``${NAME}`` expanded (whole, not in slices)."""
    text = expand_text(read_text(path), variables, str(path))
    if first == "<":
        from sheaf.formats._dax import loads_dax

        return _names_checked(loads_dax(text, source=str(path), warnings=warnings), path)
    src = TextSource(str(path), text, warnings)
    with gc_paused(), located_in(str(path)):
        workflow = workflow_from_data(src.load_yaml(), src)
    _refuse_nul(workflow, path)
    return _names_checked(workflow, path)


def _refuse_nul(workflow: Workflow, path: PathLike) -> None:
    """Refuse an lfn, argument or stream holding a NUL -- looked for only when the file has an
    escape that can make one (one regex pass over the mapped file)."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if _NUL_ESCAPE.search(data) is None:
                return
    except (OSError, ValueError):  # an empty file cannot be mapped (and holds no NUL)
        return
    found = nul_problem(workflow)
    if found is not None:
        job_id, problem = found
        # the NUL is escaped in the text: find the job instead
        where = locate_error(ValidationError("", value=job_id), [str(path)])
        raise problem.located(str(path), where.line, where.column)


def _names_checked(workflow: Workflow, path: PathLike) -> Workflow:
    try:
        check_names(workflow)
    except ValidationError as exc:
        raise locate_error(exc, [str(path)]) from None
    return workflow


def looks_like_workflow(path: PathLike) -> bool:
    """Whether ``path`` reads as a workflow (DAX XML, WfCommons JSON, or YAML with Pegasus's top-level
    ``pegasus:`` or ``jobs:``) rather than another text, a DAG file say; an unreadable file does not."""
    try:
        head = _head(path, 4096)
    except InputError:
        return False
    return _first_char(head) in ("<", "{") or re.search(r"(?m)^(pegasus|jobs):", head) is not None


def _head(path: PathLike, size: int = 65536) -> str:
    """The first characters of a file, to tell formats apart (``InputError`` if unreadable)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size).decode("utf-8", "replace")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=str(path)) from None


def _other(module: str, function: str, what: str, path: PathLike, warnings: list[str] | None) -> Any:
    """Call another reader of this package lazily (it may not be built yet)."""
    import importlib

    try:
        reader = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError):
        raise FormatError(f"unsupported format: {what} is not readable by this sheaf",
                          rule="supported formats", path=str(path)) from None
    return reader(path, warnings=warnings)


def _write_atomically(text: str | Iterable[str], path: PathLike) -> None:
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            out.writelines([text] if isinstance(text, str) else text)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def write_workflow(workflow: Workflow, path: PathLike) -> None:
    """Write ``workflow`` as Pegasus 5.0 YAML (a batch of jobs at a time)."""
    _write_atomically(workflow_yaml(workflow), path)


def read_transformation_catalog(path: PathLike, *, warnings: list[str] | None = None,
                                variables: Variables | None = None) -> TransformationCatalog:
    """A transformation catalog from Pegasus 5.0 YAML or the text formats (by content); with
    ``variables``, ``${NAME}`` expanded first."""
    text = expand_text(read_text(path), variables, str(path))
    if _is_text_tc(text):
        from sheaf.formats._text_tc import loads_text_tc

        return loads_text_tc(text, source=str(path), warnings=warnings)
    src = TextSource(str(path), text, warnings)
    with located_in(str(path)):
        return tc_from_data(src.load_yaml(), src)


def _is_text_tc(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(("tr ", "tr\t")):
            return True
        return looks_like_file_rc(text)  # the 4.x one-line form: whitespace-separated words, no 'key:'
    return False


def write_transformation_catalog(tc: TransformationCatalog, path: PathLike) -> None:
    _write_atomically(_emit(tc_to_data(tc)), path)


def read_site_catalog(path: PathLike, *, warnings: list[str] | None = None,
                      variables: Variables | None = None) -> SiteCatalog:
    """A site catalog from Pegasus 5.0 YAML or XML (by content); ``${NAME}`` expanded with ``variables``."""
    src = TextSource(str(path), expand_text(read_text(path), variables, str(path)), warnings)
    if _first_char(src.text) == "<":
        from sheaf.formats._site_xml import loads_site_xml

        return loads_site_xml(src.text, source=str(path), warnings=warnings)
    with located_in(str(path)):
        return sc_from_data(src.load_yaml(), src)


def write_site_catalog(sc: SiteCatalog, path: PathLike) -> None:
    _write_atomically(_emit(sc_to_data(sc)), path)


def read_replica_catalog(path: PathLike, *, warnings: list[str] | None = None,
                         variables: Variables | None = None) -> ReplicaCatalog:
    """A replica catalog from Pegasus 5.0 YAML or the text ``File`` format (by content); ``${NAME}``
    expanded with ``variables``."""
    text = expand_text(read_text(path), variables, str(path))
    if looks_like_file_rc(text):
        return parse_file_rc(text, str(path))
    src = TextSource(str(path), text, warnings)
    with located_in(str(path)):
        return rc_from_data(src.load_yaml(), src)


def write_replica_catalog(rc: ReplicaCatalog, path: PathLike) -> None:
    _write_atomically(_emit(rc_to_data(rc)), path)
