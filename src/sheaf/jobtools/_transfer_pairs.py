"""The older "pairs" input of ``sheaf-transfer`` (what the first staging slice of codegen writes).

One transfer per line -- lines end at LF only, so a file name may hold any other character -- two or
three words quoted with POSIX shell rules (``sheaf._shellwords``, never run through a shell):
the source, a ``file://`` URL (host empty or ``localhost``), an ``http://``/``https://`` URL or an
absolute path; the destination, an absolute path inside ``--root``; and optionally ``x``, to make the
copy executable.  Blank lines and lines starting with ``#`` are skipped.  Every line is checked before
any transfer starts; ``pairs_to_transfers`` turns the pairs into the transfer list's records, so both
inputs run through one runner.
"""

from __future__ import annotations

__all__ = ["Pair", "pairs_to_transfers", "read_pairs", "source_path"]

import os
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from sheaf._shellwords import split_words
from sheaf.errors import FormatError
from sheaf.jobtools._transfer_list import Endpoint, Transfer, read_utf8
from sheaf.jobtools._transfer_run import inside

Pair = tuple[str, str, bool]  # source, destination, make it executable


def source_path(src: str, path: str, line: int) -> str:
    """The local path a source names (``file://`` URL or absolute path); an http(s) URL as it is."""
    if src.startswith("file://"):
        parts = urlsplit(src)
        if parts.netloc not in ("", "localhost"):
            raise FormatError("a file:// URL on another host", rule="sources are local files",
                              value=src, path=path, line=line)
        return unquote(parts.path)
    if src.startswith(("http://", "https://")):
        return src
    if "://" in src or not os.path.isabs(src):
        raise FormatError("not a local file", rule="sources are file:// or http(s):// URLs or absolute paths",
                          value=src, path=path, line=line)
    return src


def read_pairs(path: str, root: str) -> list[Pair]:
    """The transfers of ``path``, every line checked before any transfer starts."""
    pairs = []
    for number, line in enumerate(read_utf8(path, "pairs file").split("\n"), start=1):
        raw = line.removesuffix("\r")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            words = split_words(raw)
        except ValueError as exc:
            raise FormatError(f"cannot split the line ({exc})", rule="POSIX shell quoting",
                              value=raw, path=path, line=number) from None
        if len(words) not in (2, 3) or (len(words) == 3 and words[2] != "x"):
            raise FormatError("a transfer is two words, and 'x' for an executable", rule="src dst [x]",
                              value=raw, path=path, line=number)
        if "\0" in raw:
            raise FormatError("a file name holds a NUL byte", rule="file names hold no NUL", value=raw,
                              path=path, line=number)
        src, dst = source_path(words[0], path, number), words[1]
        if not os.path.isabs(dst) or not inside(root, dst):
            raise FormatError("the destination escapes the working directory", rule=f"destinations "
                              f"lie inside --root {root}", value=dst, path=path, line=number)
        pairs.append((src, dst, len(words) == 3))
    return pairs


def _file_url(path: str) -> str:
    # Percent-encoding only what would change the reading back (``%``); the runner decodes ``%xx``
    # and takes every other character of a file URL literally.
    return "file://" + path.replace("%", "%25")


def pairs_to_transfers(pairs: list[Pair]) -> list[Transfer]:
    return [Transfer(lfn=PurePosixPath(dst).name, id=number,
                     sources=(Endpoint(src if src.startswith(("http://", "https://")) else _file_url(src)),),
                     dest=Endpoint(_file_url(dst)), executable=executable)
            for number, (src, dst, executable) in enumerate(pairs, start=1)]
