"""The engine's input files as text: one reading rule for every reader.

A DAG file (and its INCLUDE and SPLICE targets), its CONFIG file, a rescue DAG, a submit description
and the pool configuration are UTF-8 text without NUL bytes (HTCondor reads them as C strings: a
NUL would silently end a line there).  ``read_text`` returns such a file's text or raises one
``FormatError`` naming the file, the line of the first bad byte and the rule: a file that cannot be
read, a name holding a NUL byte, bytes that are not UTF-8, a NUL byte in the text.  Nothing else
escapes, so every reader turns a damaged file into one message and exit code 2.
"""

from __future__ import annotations

__all__ = ["did_you_mean", "logical_lines", "read_text"]

import os
from collections.abc import Iterable

from sheaf.errors import FormatError


def _read_bytes(path: str) -> bytes:
    """The file's bytes (os-level reads cost a third of ``open``'s: one submit file per node)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str, what: str) -> str:
    """The text of ``path``, the ``what`` (``"DAG file"``, ``"submit description"``...)."""
    if "\0" in path:
        raise FormatError(f"the {what}'s name holds a NUL byte", rule="file names hold no NUL byte",
                          value=path)
    try:
        data = _read_bytes(path)
    except OSError as exc:
        raise FormatError(f"cannot read the {what}", rule=f"the {what} exists and is readable",
                          value=f"{path}: {exc.strerror}", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"the {what} is not UTF-8 text", rule=f"a {what} is UTF-8 text",
                          value=data[exc.start:exc.start + 4], path=path,
                          line=data.count(b"\n", 0, exc.start) + 1) from None
    nul = text.find("\0")
    if nul >= 0:
        raise FormatError(f"the {what} holds a NUL byte", rule=f"a {what} holds no NUL byte",
                          path=path, line=text.count("\n", 0, nul) + 1)
    return text


def logical_lines(text: str) -> list[tuple[int, str]]:
    """HTCondor's line reading for submit descriptions: lines stripped, a line ending in ``\\``
    continues on the next (``\\`` and line break become one space), blank lines and ``#`` comment
    lines dropped.  Each logical line comes with the number of its first physical line.  A comment
    line inside a continuation ends nothing: it is skipped, as HTCondor's reader skips it.  (A DAG
    file is read by its own rule: ``sheaf.condor._dagman_file.read_lines``.)"""
    comment = "#"
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending:
            if not line or line.startswith(comment):
                continue
            if line[-1] != "\\":  # the common case, a line of its own: no joining
                out.append((number, line))
                continue
            start = number
        elif line.startswith(comment):
            continue
        if line.endswith("\\"):
            pending.append(line[:-1].rstrip())
            continue
        pending.append(line)
        joined = " ".join(p for p in pending if p)
        pending = []
        if joined:
            out.append((start, joined))
    if pending:
        joined = " ".join(p for p in pending if p)
        if joined:
            out.append((start, joined))
    return out


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` naming the known word nearest ``word``, or ``""`` when none is near."""
    import difflib  # imported here: only a refusal or a warning needs it

    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
