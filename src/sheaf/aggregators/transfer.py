"""``sheaf-transfer``: what a stage-in job runs (FIRST SLICE of data staging: local files only).

Usage::

    sheaf-transfer [--link] --root DIR PAIRS_FILE

``PAIRS_FILE`` (UTF-8) holds one transfer per line -- lines end at LF only, so a file name may hold
any other character -- two or three words quoted with POSIX shell rules (``sheaf.formats._shellwords``,
never run through a shell): the source, a ``file://`` URL (host empty or ``localhost``), an
``http://``/``https://`` URL or an absolute path; the destination, an absolute path; and optionally
``x``, to make the copy executable (a stageable executable: ``chmod +x``, for whoever may read it).
Blank lines and lines starting with ``#`` are skipped.

Policy:

- Every destination must lie inside ``--root`` (the site's working directory), after ``..`` and
  symbolic links in its existing part are resolved: a path escaping it is refused before anything is
  copied (exit 2).  So is any other URL scheme, and a malformed line.
- A missing or unreadable source is a failure (exit 1, the source named on stderr); the transfers
  before it stay done and the job's retry redoes the rest.  So is a URL that cannot be fetched (the
  URL and the reason named); a URL is fetched with a 60 s timeout per read.
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
    if src.startswith(("http://", "https://")):
        return src
    if "://" in src or not os.path.isabs(src):
        raise FormatError("not a local file", rule="sources are file:// or http(s):// URLs or absolute paths",
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


Pair = tuple[str, str, bool]  # source, destination, make it executable


def read_pairs(path: str, root: str) -> list[Pair]:
    """The transfers of ``path``, every line checked before any transfer starts."""
    pairs = []
    text = _read_text(path)
    if text.lstrip().startswith("["):  # the data pass's JSON list (hook: _transfer_json)
        from sheaf.aggregators._transfer_json import pairs_of
        from sheaf.formats._shellwords import join_words

        text = "".join(join_words(words) + "\n" for words in pairs_of(text, path))
    for number, line in enumerate(text.split("\n"), start=1):
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


def transfer(src: str, dst: str, link: bool, executable: bool = False) -> None:
    remote = src.startswith(("http://", "https://"))
    if not remote and not os.path.isfile(src):
        raise ToolExit(1, f"source missing: {src}")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = f"{dst}.sheaf-transfer-{os.getpid()}"
    try:
        if remote:
            _fetch(src, tmp)
        elif link and not executable:  # an executable is copied: its mode is changed
            os.symlink(os.path.abspath(src), tmp)
        else:
            shutil.copy2(src, tmp)
        if executable:
            mode = os.stat(tmp).st_mode
            os.chmod(tmp, mode | (mode & 0o444) >> 2 | 0o100)  # +x wherever +r, and for the owner
        os.replace(tmp, dst)
    except OSError as exc:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise ToolExit(1, f"cannot transfer {src} to {dst}: {exc.strerror or exc}") from None


def _fetch(url: str, target: str) -> None:
    """``url``'s content into ``target`` (``OSError`` naming the URL when it cannot be fetched)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OSError(f"cannot fetch {url}: {reason}") from None


def _main(argv: list[str]) -> int:
    parser = _Parser(prog=PROG, description="Copy local files into a job's working directory.")
    parser.add_argument("--root", required=True, help="the working directory every destination lies in")
    parser.add_argument("--link", action="store_true", help="make symbolic links instead of copies")
    for option in ("--threads", "--integrity", "--meta-dir"):  # the full tool's; accepted (hook)
        parser.add_argument(option, help=argparse.SUPPRESS)
    parser.add_argument("pairs", help="file of 'src dst' lines")
    args = parser.parse_args(argv)
    pairs = read_pairs(args.pairs, args.root)
    for src, dst, executable in pairs:
        transfer(src, dst, args.link, executable)
    print(f"{PROG}: {len(pairs)} file(s) {'linked' if args.link else 'copied'} into {args.root}")
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
