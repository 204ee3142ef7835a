"""A second process that parses YAML slices while the first converts: loading on two cores.

``yaml_rs`` holds the GIL while it parses, so threads cannot overlap parsing with conversion;
a process can.  ``_yaml_chunks`` starts this file as a script (``python -P <this file> <path>
<start:end>...``; it imports no part of sheaf, so it starts in tens of milliseconds), and the
script maps the workflow file, parses each slice it is given, in order, and writes one frame per
slice to stdout: a status byte, an 8-byte length, and the slice's data as msgpack (decoding
msgpack costs a third of parsing the YAML).

Status ``D`` carries data; status ``L`` says "parse this slice yourself" -- the slice did not
parse, its data has something msgpack cannot carry (an integer past 64 bits), or it may nest too
deep for the YAML library's stack (``_nesting``, loaded by path: the reader then refuses it).  The reader then
parses the slice in-process, which gives the same data or the same error as the one-process path:
the worker never decides what a slice means, so it cannot change the result.
"""

from __future__ import annotations

import gc
import importlib.util
import mmap
import struct
import sys
from pathlib import Path
from types import ModuleType

FRAME = struct.Struct("<cQ")  # status, payload length


def _drop(data: mmap.mmap, start: int, end: int) -> None:
    """Let the kernel drop a parsed slice's pages (else the whole mapped file counts in our RSS)."""
    aligned = start - start % mmap.PAGESIZE
    if end > aligned and hasattr(data, "madvise"):
        data.madvise(mmap.MADV_DONTNEED, aligned, end - aligned)


def _nesting() -> ModuleType:
    """``sheaf.formats._nesting`` without importing sheaf (it imports only ``re``)."""
    spec = importlib.util.spec_from_file_location("_sheaf_nesting", Path(__file__).with_name("_nesting.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> None:
    """Parse the slices ``argv[1:]`` (``start:end`` byte offsets) of the file ``argv[0]``."""
    import msgspec
    import yaml_rs

    may_be_deep = _nesting().may_be_deep
    gc.disable()  # parsing builds acyclic data only
    out = sys.stdout.buffer
    encode = msgspec.msgpack.Encoder().encode
    with open(argv[0], "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for span in argv[1:]:
            start, end = map(int, span.split(":"))
            try:
                chunk = data[start:end]
                if may_be_deep(chunk):
                    raise ValueError("the reader refuses this slice itself")
                payload = encode(yaml_rs.loads(chunk.decode("utf-8"), parse_datetime=False))
                _drop(data, start, end)
            except Exception:  # noqa: BLE001 -- any doubt: the reader parses this slice itself
                out.write(FRAME.pack(b"L", 0))
            else:
                out.write(FRAME.pack(b"D", len(payload)))
                out.write(payload)
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
