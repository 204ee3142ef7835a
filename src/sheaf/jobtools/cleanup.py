"""``sheaf-cleanup``: what a cleanup job runs -- remove the files the plan lists.

Usage::

    sheaf-cleanup [--rmdir DIR] [--list LIST_FILE [--slice OFFSET:LENGTH]] [--] [PATH...]

The paths to remove are the absolute ``PATH`` arguments and those of ``LIST_FILE``, a JSON list of
absolute paths (the planner's ``_cleanup`` writes one for a job with many files; with ``--slice``,
those bytes of it are the list: ``_lists``).  Each is removed
if it is there (a file or a symbolic link -- never followed); one already gone is not an error (a
retried cleanup job finds its earlier work done).  A directory among them is refused: the plan lists
files only.  ``--rmdir DIR`` then removes DIR if it is empty (the ``leaf`` strategy), and leaves it
quietly when something else lives there.

Exit status: 0 done; 1 a file could not be removed (named on stderr); 2 usage or bad input.
"""

from __future__ import annotations

import argparse
import errno
import os
from collections.abc import Sequence
from typing import NoReturn

from sheaf.errors import FormatError, UsageError
from sheaf.jobtools._cli import ToolExit, run_guarded
from sheaf.jobtools._lists import Span, parse_slice, read_json_list

PROG = "sheaf-cleanup"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (usage: {PROG} [--rmdir DIR] [--list LIST_FILE [--slice OFFSET:LENGTH]] "
                         "[--] [PATH...])")


def read_list(path: str, span: Span | None = None) -> list[str]:
    """The JSON list of absolute paths in ``path`` (``span``: in those bytes of it; ``FormatError``
    otherwise)."""
    data = read_json_list(path, "a JSON list of absolute paths", span)
    paths = [p for p in data if isinstance(p, str) and os.path.isabs(p)]
    if len(paths) != len(data):
        raise FormatError("not a list of absolute paths", rule="a JSON list of absolute paths", path=path)
    return paths


def remove(path: str) -> bool:
    """Remove ``path`` if it is there; whether it was."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        raise ToolExit(1, f"refusing to remove a directory: {path}") from None
    except OSError as exc:
        raise ToolExit(1, f"cannot remove {path}: {exc.strerror}") from None
    return True


def _main(argv: list[str]) -> int:
    parser = _Parser(prog=PROG, description="Remove the files a cleanup job lists.")
    parser.add_argument("--rmdir", metavar="DIR", help="then remove DIR if it is empty")
    parser.add_argument("--list", metavar="LIST_FILE", help="JSON list of absolute paths")
    parser.add_argument("--slice", type=parse_slice,
                        help="OFFSET:LENGTH: the list is those bytes of LIST_FILE")
    parser.add_argument("paths", nargs="*", help="absolute paths")
    args = parser.parse_args(argv)
    if args.slice is not None and not args.list:
        raise UsageError("--slice names bytes of the --list file: give --list")
    relative = [p for p in args.paths if not os.path.isabs(p)]
    if relative:
        raise UsageError(f"not an absolute path: {relative[0]}")
    paths = [*args.paths, *(read_list(args.list, args.slice) if args.list else [])]
    removed = sum(remove(path) for path in paths)
    if args.rmdir:
        try:
            os.rmdir(args.rmdir)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise ToolExit(1, f"cannot remove {args.rmdir}: {exc.strerror}") from None
    print(f"{PROG}: {removed} file(s) removed")
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
