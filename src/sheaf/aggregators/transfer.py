"""``sheaf-transfer``: what a stage-in job runs (FIRST SLICE of data staging: local files only).

Usage::

    sheaf-transfer [--link] --root DIR PAIRS_FILE

``PAIRS_FILE`` (UTF-8) holds one transfer per line -- lines end at LF only, so a file name may hold
any other character -- two words quoted with POSIX shell rules (``sheaf.formats._shellwords``, never
run through a shell): the source, a ``file://`` URL (host empty or ``localhost``) or an absolute path,
and the destination, an absolute path.  Blank lines and lines starting with ``#`` are skipped.

Policy:

- Every destination must lie inside ``--root`` (the site's working directory), after ``..`` and
  symbolic links in its existing part are resolved: a path escaping it is refused before anything is
  copied (exit 2).  So is any other URL scheme, and a malformed line.
- A missing or unreadable source is a failure (exit 1, the source named on stderr); the transfers
  before it stay done and the job's retry redoes the rest.
- A file is copied (content and mode) to a temporary name beside the destination, then renamed:
  a reader never sees half a file.  ``--link`` makes a symbolic link instead.  Parent directories
  of the destination are created.

Exit status: 0 every transfer done; 1 a source is missing or a copy failed; 2 usage or bad input.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Sequence
from typing import NoReturn
from urllib.parse import unquote, urlsplit

from sheaf.aggregators._cli import ToolExit, run_guarded
from sheaf.errors import FormatError, UsageError
from sheaf.formats._shellwords import split_words

PROG = "sheaf-transfer"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (usage: {PROG} [--link] --root DIR PAIRS_FILE)")


def source_path(src: str, path: str, line: int) -> str:
    """The local path a source names (``file://`` URL or absolute path)."""
    if src.startswith("file://"):
        parts = urlsplit(src)
        if parts.netloc not in ("", "localhost"):
            raise FormatError("a file:// URL on another host", rule="sources are local files",
                              value=src, path=path, line=line)
        return unquote(parts.path)
    if "://" in src or not os.path.isabs(src):
        raise FormatError("not a local file", rule="sources are file:// URLs or absolute paths",
                          value=src, path=path, line=line)
    return src


def inside(root: str, dst: str) -> bool:
    """Whether ``dst`` stays inside ``root`` once ``..`` and existing symbolic links are resolved."""
    real_root = os.path.realpath(root)
    real_dst = os.path.realpath(dst)
    return os.path.commonpath([real_root, real_dst]) == real_root and real_dst != real_root


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read the pairs file {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(f"the pairs file is not UTF-8 (byte {exc.start})", rule="pairs files are UTF-8 "
                          "text", value=data[exc.start:exc.start + 1], path=path, line=line) from None


def read_pairs(path: str, root: str) -> list[tuple[str, str]]:
    """The transfers of ``path``, every line checked before any transfer starts."""
    pairs = []
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        raw = line.removesuffix("\r")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            words = split_words(raw)
        except ValueError as exc:
            raise FormatError(f"cannot split the line ({exc})", rule="POSIX shell quoting",
                              value=raw, path=path, line=number) from None
        if len(words) != 2:
            raise FormatError("a transfer is two words", rule="src dst", value=raw, path=path, line=number)
        if "\0" in raw:
            raise FormatError("a file name holds a NUL byte", rule="file names hold no NUL", value=raw,
                              path=path, line=number)
        src, dst = source_path(words[0], path, number), words[1]
        if not os.path.isabs(dst) or not inside(root, dst):
            raise FormatError("the destination escapes the working directory", rule=f"destinations "
                              f"lie inside --root {root}", value=dst, path=path, line=number)
        pairs.append((src, dst))
    return pairs


def transfer(src: str, dst: str, link: bool) -> None:
    if not os.path.isfile(src):
        raise ToolExit(1, f"source missing: {src}")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = f"{dst}.sheaf-transfer-{os.getpid()}"
    try:
        if link:
            os.symlink(os.path.abspath(src), tmp)
        else:
            shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    except OSError as exc:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise ToolExit(1, f"cannot transfer {src} to {dst}: {exc.strerror}") from None


def _main(argv: list[str]) -> int:
    parser = _Parser(prog=PROG, description="Copy local files into a job's working directory.")
    parser.add_argument("--root", required=True, help="the working directory every destination lies in")
    parser.add_argument("--link", action="store_true", help="make symbolic links instead of copies")
    parser.add_argument("pairs", help="file of 'src dst' lines")
    args = parser.parse_args(argv)
    pairs = read_pairs(args.pairs, args.root)
    for src, dst in pairs:
        transfer(src, dst, args.link)
    print(f"{PROG}: {len(pairs)} file(s) {'linked' if args.link else 'copied'} into {args.root}")
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
