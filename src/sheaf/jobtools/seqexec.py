"""``sheaf-cluster``: what a seqexec cluster job runs (sheaf's pegasus-cluster).

Usage, as pegasus-cluster's::

    sheaf-cluster [-d] [-e | -f] [-S ec]... [-s fn] [-R fn] [-n nr|auto] [inputfile]

    -d      more debug output (on stderr)
    -e      run everything and always exit 0 (the old default)
    -f      fail hard: start nothing new after the first failed task
    -S ec   also count exit code ec (1..255) as success; repeatable
    -s fn   write everything that would go to stdout (records and task output) to fn
    -R fn   append progress lines to fn (default $SEQEXEC_PROGRESS_REPORT)
    -n nr   run nr tasks at once; "auto" = the CPUs this process may use (default $SEQEXEC_CPUS or 1)
    inputfile   the .in file (default stdin)

Exit status: 0 all tasks succeeded (or ``-e``); 5 a task failed; 2 usage error or a malformed input
file (checked whole, before any task runs); 3 the input file cannot be read; 2 the ``-s`` file
cannot be opened; 1 the ``-R`` file cannot be opened (pegasus-cluster's codes for those three).
"""

from __future__ import annotations

import os
import sys

from sheaf.jobtools._cli import ToolExit, run_guarded
from sheaf.jobtools._seqexec_run import SeqexecRun, SeqexecRunTask, Settings

# Start-up is part of every clustered job's cost (a cluster of short tasks runs in little more time than the
# interpreter takes to start), so this module and what it imports at start-up use the standard library's
# already-loaded modules only: no dataclasses, typing, shlex/re or ``sheaf.formats`` (whose package imports
# the model).  A plain ``.in`` file (ASCII, no quotes or backslashes: what codegen writes for ordinary argv)
# is read by ``_quick_tasks``, which accepts only files on which it provably agrees with
# ``sheaf.formats._seqexec_in.parse_seqexec_input``; anything else goes to that parser (a test pins the
# agreement).
TYPE_CHECKING = False  # typing is not imported at start-up; mypy honours the name
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

    from sheaf.jobtools._seqexec_run import TaskLike

PROG = "sheaf-cluster"
SYNOPSIS = "sheaf-cluster [-d] [-e | -f] [-S ec] [-s fn] [-R fn] [-n nr|auto] [inputfile]"


class _Options:
    __slots__ = ("cpus", "debug", "input", "mode", "progress_file", "status_file", "success")

    def __init__(self) -> None:
        self.debug = 0
        self.mode = ""  # "", "e" or "f"
        self.success = {0}
        self.status_file: str | None = None
        self.progress_file = os.environ.get("SEQEXEC_PROGRESS_REPORT")
        self.cpus = os.environ.get("SEQEXEC_CPUS")
        self.input: str | None = None


def _usage(message: str) -> ToolExit:
    """A usage error: exit 2 with one line, as ``sheaf.errors.UsageError`` renders at the boundary."""
    return ToolExit(2, f"error: {message}")


def _cpus(text: str | None) -> int:
    if text is None:
        return 1
    if text.lower() == "auto":
        return max(1, len(os.sched_getaffinity(0)))
    if not text.isdigit() or int(text) < 1:
        raise _usage(f"-n takes a number of CPUs >= 1 or 'auto', not {text!r}")
    return int(text)


def _success_code(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 255:
        raise _usage(f"-S takes an exit code 1..255, not {text!r}")
    return int(text)


def _getopt(args: list[str], spec: str) -> tuple[list[tuple[str, str]], list[str]]:
    """POSIX getopt: options end at the first operand or "--"; "-ab" and "-nVALUE" allowed.

    (The standard module pulls in gettext, a third of sheaf-cluster's start-up.)"""
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return pairs, args[i + 1:]
        j, word = 1, args[i]
        while j < len(word):
            flag = word[j]
            where = spec.find(flag)
            if flag == ":" or where < 0:
                raise _usage(f"option -{flag} not recognized (usage: {SYNOPSIS})")
            if spec[where + 1:where + 2] != ":":
                pairs.append((f"-{flag}", ""))
                j += 1
                continue
            if j + 1 < len(word):
                pairs.append((f"-{flag}", word[j + 1:]))
            elif i + 1 < len(args):
                i += 1
                pairs.append((f"-{flag}", args[i]))
            else:
                raise _usage(f"option -{flag} requires an argument (usage: {SYNOPSIS})")
            break
        i += 1
    return pairs, args[i:]


def _parse(args: list[str]) -> _Options:
    pairs, rest = _getopt(args, "R:S:defhn:s:")
    opts = _Options()
    for flag, value in pairs:
        if flag == "-h":
            print(__doc__ or SYNOPSIS)
            raise ToolExit(0)
        if flag in ("-e", "-f"):
            if opts.mode and opts.mode != flag[1]:
                raise _usage(f"-e and -f are mutually exclusive (usage: {SYNOPSIS})")
            opts.mode = flag[1]
        opts.debug += flag == "-d"
        if flag == "-S":
            opts.success.add(_success_code(value))
        opts.status_file = value if flag == "-s" else opts.status_file
        opts.progress_file = value if flag == "-R" else opts.progress_file
        opts.cpus = value if flag == "-n" else opts.cpus
    if len(rest) > 1:
        raise _usage(f"at most one input file, got {len(rest)} (usage: {SYNOPSIS})")
    opts.input = rest[0] if rest else None
    return opts


def _redirect_stdout(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as exc:
        raise ToolExit(2, f"open status {path}: {exc.errno}: {exc.strerror}") from None
    sys.stdout.flush()
    os.dup2(fd, 1)
    os.close(fd)


def _read_input(path: str | None) -> str:
    if path is None:
        return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    try:
        with open(path, "rb") as stream:
            return stream.read().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise ToolExit(3, f"open input {path}: {exc.errno}: {exc.strerror}") from None


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


# Characters that shlex (POSIX mode, whitespace_split) and str.split()/str.strip() treat differently,
# or that need shlex at all.  Outside them, shlex.split(line) == line.split().
_NOT_QUICK = frozenset("'\"\\\x0b\x0c\x1c\x1d\x1e\x1f")


def _quick_meta_ok(body: str) -> bool:
    fields = body[2:].split()
    return len(fields) >= 3 and fields[0].isdigit() and int(fields[0]) >= 1


def _quick_tasks(text: str) -> list[TaskLike] | None:
    """The tasks of a plain ``.in`` file, or None: then the full parser decides (and reports errors).

    Accepts only ASCII text without quotes, backslashes and the whitespace that shlex and ``str.split``
    disagree on, whose ``#@`` records are well formed and each followed by a command."""
    if not text.isascii() or not _NOT_QUICK.isdisjoint(text):
        return None
    tasks: list[TaskLike] = []
    pending = False
    for lineno, raw in enumerate(text.split("\n"), start=1):
        argv = raw.split()
        if not argv:
            continue
        if raw.startswith("#@"):
            if pending or not _quick_meta_ok(raw):
                return None
            pending = True
        elif not raw.startswith("#"):
            tasks.append(SeqexecRunTask(tuple(argv), lineno))
            pending = False
    return None if pending else tasks


def _read_tasks(text: str, path: str) -> Sequence[TaskLike]:
    quick = _quick_tasks(text)
    if quick is not None:
        return quick
    from sheaf.formats import parse_seqexec_input

    return parse_seqexec_input(text, path)


def _main(args: list[str]) -> int:
    # The compiled sheaf-cluster hands inputs it does not take over to this program; its own argv[0]
    # comes along, so the records name the program that was run (and tasks never see the variable).
    argv0 = os.environ.pop("SHEAF_CLUSTER_ARGV0", None) or (sys.argv[0] if sys.argv else "")
    opts = _parse(args)
    cpus = _cpus(opts.cpus)
    if opts.status_file is not None:
        _redirect_stdout(opts.status_file)
    progress = None
    if opts.progress_file:
        from sheaf.jobtools._progress import ProgressReport  # imported only with -R

        try:
            progress = ProgressReport(opts.progress_file)
        except OSError as exc:
            raise ToolExit(1, f"open progress {opts.progress_file}: {exc.errno}: {exc.strerror}") from None
    text = _read_input(opts.input)
    tasks = _read_tasks(text, opts.input or "<stdin>")
    if opts.debug:
        print(f"{PROG}: {len(tasks)} tasks, {cpus} at once", file=sys.stderr)
    settings = Settings(cpus, opts.mode == "f", opts.mode == "e", frozenset(opts.success),
                        argv0 or PROG, (argv0, *sys.argv[1:]), progress)
    return SeqexecRun(tasks, _line_count(text), settings).run()


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point of ``sheaf-cluster``."""
    run_guarded(PROG, _main, argv)
