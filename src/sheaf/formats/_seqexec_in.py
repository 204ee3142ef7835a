"""The pegasus-cluster (seqexec) input format: the ``.in`` file a seqexec cluster job runs.

Grammar, one record per line (lines end with LF, CR LF or CR LF LF ...; the terminators are dropped)::

    file     := { blank | comment | meta | command }
    blank    := whitespace only
    comment  := "#" anything          (not "#@")
    meta     := "#@" WS n WS transformation WS job-id     -- describes the NEXT command
    command  := a command line, split with POSIX shell quoting rules (``shlex.split``'s rules,
                read in linear time by ``_shellwords``)

Policy and invariants:

- A command line is tokenised with POSIX shell quoting (one level of quotes and backslashes removed,
  as pegasus-cluster's own state machine does) but is never given to a shell: ``argv[0]`` is exec'd.
- ``#`` starts a comment only as the first character of a line; inside a command it is literal.
- A ``#@`` record belongs to the command that follows it; a ``#@`` with no command after it, a
  ``#@`` with fewer than three fields or a non-positive ``n`` is an error, and so is a command with
  an unterminated quote or a dangling backslash.  Nothing is skipped silently: a bad file is
  rejected as a whole (``FormatError`` with path, line and rule) before any task runs.
- ``write_seqexec_input`` is the inverse of ``parse_seqexec_input`` on argv and metadata (line
  numbers are assigned by position); it refuses arguments that cannot live on one line.
"""

from __future__ import annotations

__all__ = ["SeqexecTask", "parse_seqexec_input", "write_seqexec_input"]

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sheaf._shellwords import join_words, split_words
from sheaf.errors import FormatError


@dataclass(frozen=True, slots=True)
class SeqexecTask:
    """One command of a ``.in`` file; ``line`` is the 1-based line of the command (0 if unknown)."""

    argv: tuple[str, ...]
    number: int | None = None  # the n of "#@ n transformation job-id"
    transformation: str | None = None
    job_id: str | None = None
    line: int = 0


def _logical_lines(text: str) -> list[str]:
    # pegasus-cluster reads with fgets and strips trailing CR/LF; a bare CR inside a line stays.
    return [raw.rstrip("\r") for raw in text.split("\n")]


def _parse_meta(body: str, path: str | None, lineno: int) -> tuple[int, str, str]:
    fields = body[2:].split()
    if len(fields) < 3:
        raise FormatError("incomplete task record", rule="'#@' needs: n transformation job-id",
                          value=body, path=path, line=lineno)
    number, transformation, job_id = fields[0], fields[1], " ".join(fields[2:])
    if not number.isdigit() or int(number) < 1:
        raise FormatError("bad task number", rule="the n of '#@ n transformation job-id' is an "
                          "integer >= 1", value=number, path=path, line=lineno, column=4)
    return int(number), transformation, job_id


def _split_command(body: str, path: str | None, lineno: int) -> tuple[str, ...]:
    try:
        return tuple(split_words(body))
    except ValueError as exc:  # "No closing quotation" / "No escaped character"
        raise FormatError(f"cannot split command line ({exc})",
                          rule="POSIX shell quoting: quotes balanced, no dangling backslash",
                          value=body, path=path, line=lineno) from None


def parse_seqexec_input(text: str, path: str | None = None) -> list[SeqexecTask]:
    """Parse a whole ``.in`` file; raise ``FormatError`` on the first broken line."""
    tasks: list[SeqexecTask] = []
    meta: tuple[int, str, str] | None = None
    meta_line = 0
    lines = _logical_lines(text)
    for lineno, body in enumerate(lines, start=1):
        if not body.strip():
            continue
        if body.startswith("#@"):
            if meta is not None:
                raise FormatError("task record without a command", rule="each '#@' record is "
                                  "followed by its command line", value=body, path=path, line=meta_line)
            meta, meta_line = _parse_meta(body, path, lineno), lineno
            continue
        if body.startswith("#"):
            continue
        argv = _split_command(body, path, lineno)
        if not argv:
            continue  # e.g. a line of tabs and spaces only after quote removal: nothing to run
        number, transformation, job_id = meta if meta is not None else (None, None, None)
        tasks.append(SeqexecTask(argv, number, transformation, job_id, lineno))
        meta = None
    if meta is not None:
        raise FormatError("task record without a command", rule="each '#@' record is followed by "
                          "its command line", value=lines[meta_line - 1], path=path, line=meta_line)
    return tasks


_NOT_ONE_LINE = re.compile(r"[\n\r\0]")
_NOT_A_WORD = re.compile(r"[\s\0]")


def _check_writable(task: SeqexecTask) -> None:
    if not task.argv:
        raise ValueError("a seqexec task needs at least an executable")
    for arg in task.argv:
        if _NOT_ONE_LINE.search(arg):
            raise ValueError(f"argument cannot be written on one line: {arg!r}")
    _check_fields(task)


def _check_fields(task: SeqexecTask) -> None:
    for field in (task.transformation, task.job_id):
        if field is not None and (not field or _NOT_A_WORD.search(field)):
            raise ValueError(f"'#@' fields are non-empty words without NUL: {field!r}")


#: characters ``shlex.quote`` leaves unquoted, plus the unit separator used to test a whole argv at once
_ALL_PLAIN = re.compile(r"[\w@%+=:,./\x1f-]*", re.ASCII)


def write_seqexec_input(tasks: Iterable[SeqexecTask]) -> str:
    """Render tasks as a ``.in`` file: an optional ``#@`` line, then the quoted command line."""
    out: list[str] = []
    for index, task in enumerate(tasks, start=1):
        if task.number is not None or task.transformation is not None or task.job_id is not None:
            _check_fields(task)
            out.append(f"#@ {task.number or index} {task.transformation or '-'} {task.job_id or '-'}")
        out.append(_command_line(task))
    return "".join(line + "\n" for line in out)


def _command_line(task: SeqexecTask) -> str:
    """``shlex.join(task.argv)``; one regex match over the whole argv when nothing needs quoting
    (the common case: a cluster's ``.in`` file holds up to 10^6 command lines)."""
    argv = task.argv
    joined = "\x1f".join(argv)
    if argv and "" not in argv and joined.count("\x1f") == len(argv) - 1 and _ALL_PLAIN.fullmatch(joined):
        return " ".join(argv)  # no argument needs quotes (nor holds the separator), and none spans lines
    _check_writable(task)
    return join_words(argv)
