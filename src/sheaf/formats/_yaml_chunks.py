"""Reading a large workflow's ``jobs`` in slices: raw YAML data and the model never both exist in full.

Loaded YAML costs many times the file's size in Python objects, so a 10^6-job workflow cannot be
loaded in one piece within 2 GB.  For files of
the layout that the Pegasus Python API and sheaf write -- a top-level block sequence under
``jobs:``, each job starting on a line ``<indent>- `` -- the jobs are cut at item boundaries into
slices of about ``SLICE_CHARS`` characters, each slice is parsed on its own and converted, and its
raw data is dropped before the next.  The rest of the document (header, catalogs,
``jobDependencies``) is parsed with ``jobs: []`` in place of the block.

Safety: any doubt falls back to parsing the whole document, which gives the same result or the
located syntax error:

- the layout is not recognized (flow-style ``jobs: [...]``, several documents, ``jobs:`` twice);
- a line may nest too deep (``_nesting.may_be_deep``): the whole-document path refuses it with its
  line before the YAML library, which would overflow its stack, sees any of it;
- a slice or the rest does not parse, or is not what it should be (a list of jobs; a mapping whose
  ``jobs`` is empty) -- an alias to an anchor in another slice fails this way.

Where the block ends is found by looking for the top-level keys a workflow may have after
``jobs``; an unexpected top-level line inside the block makes its slice fail to parse, and so falls
back too.

With two or more CPUs and more than one slice, the slices are parsed on two cores
(``_slice_worker``): a second process parses seven slices in eight while this one parses the rest
and converts every slice in order; the worker's frames are read by a thread into a short queue, so
it runs ahead without holding more than a few slices.  ``SHEAF_LOAD_WORKER=0`` turns this off.
Anything wrong with the worker (it cannot start, it dies, it cannot carry a slice) means that
slice, or the rest, is parsed here: the result never depends on the worker.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import msgspec
import yaml_rs

from sheaf.formats._common import BOM, TextSource
from sheaf.formats._nesting import may_be_deep
from sheaf.model import Workflow

SLICE_CHARS = 4 << 20
#: one slice in WORKER_SHARE is parsed here, the others by the worker (parsing costs about twice
#: what decoding and converting a slice cost, so this keeps both cores about equally busy)
WORKER_SHARE = 8
_WORKER = str(Path(__file__).with_name("_slice_worker.py"))
_FRAME_HEAD = 9  # _slice_worker.FRAME: status byte + 8-byte little-endian length
_AFTER_JOBS = (b"pegasus:", b"name:", b"hooks:", b"profiles:", b"metadata:", b"siteCatalog:",
               b"replicaCatalog:", b"transformationCatalog:", b"jobDependencies:", b"x-")
_MARKS = re.compile(rb"\n(?:(---|\.\.\.)|(jobs:)|" + b"|".join(map(re.escape, _AFTER_JOBS)) + rb")")
_PAGE = mmap.PAGESIZE
Buffer = bytes | mmap.mmap


class _Fallback(Exception):
    """The slices cannot be trusted: parse the whole document instead."""


def plan_slices(data: Buffer, slice_chars: int | None = None) -> tuple[bytes, list[tuple[int, int]]] | None:
    """``(rest of the document with 'jobs: []', [(start, end) byte offsets of each slice])``, or ``None``."""
    slice_chars = SLICE_CHARS if slice_chars is None else slice_chars
    if len(data) <= slice_chars:
        return None
    marks = _marks(data)
    if marks is None:
        return None
    jobs_keys, after_keys = marks
    if data[:5] == b"jobs:":
        key = 0
        if jobs_keys:
            return None  # a second 'jobs:'
    elif len(jobs_keys) != 1:
        return None  # no 'jobs:', or a second one
    else:
        key = jobs_keys[0] + 1
    line_end = data.find(b"\n", key)
    after = data[key + 5:line_end].strip() if line_end != -1 else b"?"
    if after and not after.startswith(b"#"):
        return None  # flow style (jobs: [...])
    start = line_end + 1
    indent = _item_indent(data, start)
    if indent is None:
        return None
    end = next((p for p in after_keys if p >= start), len(data))
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


def _marks(data: Buffer) -> tuple[list[int], list[int]] | None:
    """Offsets of the newlines before each top-level ``jobs:`` and each key that may follow the
    jobs (``_AFTER_JOBS``), in one regex pass (a ``find`` per key would read the file a dozen
    times); ``None`` for a document marker (``---`` after the start, ``...``): several documents."""
    jobs: list[int] = []
    after: list[int] = []
    for match in _MARKS.finditer(data):
        marker = match.group(1)
        if marker is not None:
            if marker == b"..." or match.start() >= 1:
                return None
        elif match.group(2) is not None:
            jobs.append(match.start())
        else:
            after.append(match.start())
    return jobs, after


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


def read_in_slices(src: TextSource, convert: Any) -> Workflow | None:
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


def _read_mapped(data: mmap.mmap, src: TextSource, convert: Any) -> Workflow | None:
    if data[:3] == BOM:  # a byte-order mark: the whole-document path skips it
        return None
    if may_be_deep(data):  # type: ignore[arg-type]  # a regex searches a mapped file as bytes
        return None
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
        chunks = _two_core_chunks(data, src.path, slices) if _use_worker(slices) else _chunks(data, slices)
        workflow: Workflow = convert(loaded, src, chunks)
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
        items = _parse_slice(data, start, end)
        if items is not None:
            yield items


def _parse_slice(data: mmap.mmap, start: int, end: int) -> list[Any] | None:
    try:
        items = yaml_rs.loads(data[start:end].decode("utf-8"), parse_datetime=False)
    except (ValueError, TypeError, OverflowError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise _Fallback from None
    _drop(data, start, end)
    return _checked(items)


def _checked(items: Any) -> list[Any] | None:
    if items is not None and not isinstance(items, list):
        raise _Fallback
    return items


# --- two cores: a worker process parses most slices (module docstring) -----------------------------

def _use_worker(slices: list[tuple[int, int]]) -> bool:
    return len(slices) > 1 and (os.cpu_count() or 1) > 1 and os.environ.get("SHEAF_LOAD_WORKER", "1") != "0"


def _two_core_chunks(data: mmap.mmap, path: str, slices: list[tuple[int, int]]) -> Iterator[list[Any]]:
    """Like ``_chunks``, with the slices whose index is not a multiple of ``WORKER_SHARE`` parsed by
    the worker."""
    theirs = [i for i in range(len(slices)) if i % WORKER_SHARE]
    worker = _Worker.start(path, [slices[i] for i in theirs])
    try:
        for index, (start, end) in enumerate(slices):
            if worker is not None and index % WORKER_SHARE:
                items = worker.take()
            else:
                items = _parse_slice(data, start, end)
            if items is _LOCAL:  # the worker could not: parse it here
                items = _parse_slice(data, start, end)
            if items is not None:
                yield _checked(items)  # type: ignore[misc]
    finally:
        if worker is not None:
            worker.stop()


_LOCAL: Any = object()  # a frame that says "parse this slice yourself"


class _Worker:
    """The ``_slice_worker`` process, and a thread that reads its frames into a bounded queue."""

    def __init__(self, process: subprocess.Popen[bytes], frames: int) -> None:
        self.process = process
        self.frames: queue.Queue[bytes | None] = queue.Queue(maxsize=3)
        self.reader = threading.Thread(target=self._read, args=(process.stdout, frames), daemon=True)
        self.reader.start()
        self.broken = False
        self.decode = msgspec.msgpack.Decoder().decode

    @classmethod
    def start(cls, path: str, spans: list[tuple[int, int]]) -> _Worker | None:
        argv = [sys.executable, "-P", _WORKER, path, *(f"{start}:{end}" for start, end in spans)]
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL)
        except OSError:
            return None
        return cls(process, len(spans))

    def _read(self, stream: IO[bytes], frames: int) -> None:
        """Runs in the thread: one queue item per frame, ``None`` if the worker died."""
        for _ in range(frames):
            head = stream.read(_FRAME_HEAD)
            size = int.from_bytes(head[1:], "little") if len(head) == _FRAME_HEAD else -1
            payload = stream.read(size) if size > 0 else b""
            if size < 0 or len(payload) != size or head[:1] not in (b"D", b"L"):
                self.frames.put(None)
                return
            self.frames.put(payload if head[:1] == b"D" else b"")

    def take(self) -> Any:
        """The next slice's data, or ``_LOCAL``."""
        if self.broken:
            return _LOCAL
        payload = self.frames.get()
        if payload is None:
            self.broken = True  # every later slice is parsed here
            return _LOCAL
        if not payload:
            return _LOCAL
        try:
            return self.decode(payload)
        except (msgspec.DecodeError, ValueError):
            return _LOCAL

    def stop(self) -> None:
        """End the worker (done, or the reader stopped early on an error) and the thread."""
        if self.process.poll() is None:
            self.process.kill()
        while self.reader.is_alive():
            with contextlib.suppress(queue.Empty):  # unblock a reader waiting for room in the queue
                self.frames.get(timeout=0.05)
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
