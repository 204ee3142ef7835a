"""The JSON lists a plan writes for its data jobs (transfer, cleanup, registration), read with one
error rule: an unreadable file is a usage error, one that is not JSON a ``FormatError`` naming the file.

A plan packs the lists of all its data jobs into one file (``<workflow>.lists``), one after another,
and gives each job ``--slice OFFSET:LENGTH``: the job reads those bytes of the file, which are one
whole JSON list.  Without ``--slice`` the whole file is the list.
"""

from __future__ import annotations

import argparse
import json

from sheaf.errors import FormatError, UsageError

Span = tuple[int, int]  # (offset, length) in bytes


def parse_slice(text: str) -> Span:
    """``OFFSET:LENGTH`` (decimal byte counts) -- the ``--slice`` option's value."""
    offset, sep, length = text.partition(":")
    if not (sep and offset.isdigit() and length.isdigit() and offset.isascii() and length.isascii()):
        raise argparse.ArgumentTypeError(f"OFFSET:LENGTH in bytes, not {text!r}")
    return int(offset), int(length)


def read_bytes(path: str, span: Span | None, what: str) -> bytes:
    """The bytes of ``path`` (``span``: only those); unreadable is a ``UsageError``, a file shorter than
    ``span`` a ``FormatError``."""
    try:
        with open(path, "rb") as handle:
            if span is None:
                return handle.read()
            handle.seek(span[0])
            data = handle.read(span[1])
    except OSError as exc:
        raise UsageError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    if len(data) != span[1]:
        raise FormatError(f"the file ends before byte {span[0] + span[1]} (--slice {span[0]}:{span[1]})",
                          rule=f"--slice names bytes of the {what}", path=path)
    return data


def read_json_list(path: str, rule: str, span: Span | None = None) -> list[object]:
    """The JSON list in ``path`` (or in its bytes ``span``); ``rule`` says what it should hold."""
    try:
        data = json.loads(read_bytes(path, span, "list").decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"not JSON: {exc}", rule=rule, path=path) from None
    if not isinstance(data, list):
        raise FormatError("not a JSON list", rule=rule, path=path)
    return data
