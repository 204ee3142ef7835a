"""Slurm's ``srun --multi-prog`` configuration: one line per MPI rank, what a Decaf cluster runs.

Grammar, as slurmstepd reads it (``src/slurmd/slurmstepd/multi_prog.c``), one record per line::

    line   := ranks WS word { WS word }      -- ranks: "*", or a comma list of N and N-M
    word   := { plain | "'" anything but "'" "'" | "\\" char | "%t" | "%o" }
    WS     := C isspace: space, tab, LF, VT, FF, CR

- Lines end at LF (empty lines vanish); a line whose first non-blank character is ``#`` is a
  comment; a line whose *last* character is a backslash continues on the next one, which every other
  rank then skips.
- Outside quotes a backslash takes the next character literally and ``%t``/``%o`` become the task's
  rank/offset; ``%`` before any other character is dropped together with it.  Single quotes keep
  everything literally (there are no double quotes).  At most 127 words (``MAX_ARGC`` 128) are kept;
  the rest are dropped with a log line.

What ``write_multiprog`` writes, so that every rank gets back exactly its argv: rank ``i`` on line
``i``; a word of ASCII letters, digits and ``_@+=:,./-`` as is, any other word in single quotes with
a ``'`` written ``'\\''`` (so no line ends in a backslash, and ``%``, white space and non-ASCII text
are literal).  What it cannot carry is a ``ValueError`` naming the value: a newline or NUL anywhere
(the file is split at LF, the words are C strings), an empty argv, more than 127 words.
``parse_multiprog`` reads a rank's argv back as slurmstepd does (for tests and checks).
"""

from __future__ import annotations

__all__ = ["MAX_WORDS", "parse_multiprog", "write_multiprog"]

import re
from collections.abc import Iterable, Iterator, Sequence

MAX_WORDS = 127  # slurmstepd keeps at most MAX_ARGC - 1 words
_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")
_C_SPACE = " \t\n\v\f\r"


def quote_multiprog(word: str) -> str:
    if "\n" in word or "\0" in word:
        raise ValueError(f"an srun --multi-prog line cannot carry a newline or NUL: {word!r}")
    if _PLAIN.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def write_multiprog(ranks: Iterable[Sequence[str]]) -> str:
    """The configuration file running ``ranks[i]`` as MPI rank ``i``."""
    lines = []
    for rank, argv in enumerate(ranks):
        if not argv:
            raise ValueError(f"rank {rank} has no executable")
        if len(argv) > MAX_WORDS:
            raise ValueError(f"rank {rank} has {len(argv)} words; srun --multi-prog keeps {MAX_WORDS}")
        lines.append(f"{rank} " + " ".join(quote_multiprog(word) for word in argv) + "\n")
    return "".join(lines)


def parse_multiprog(text: str, rank: int) -> list[str]:
    """The argv rank ``rank`` runs (slurmstepd's reading); ``ValueError`` where slurmstepd fails."""
    continued = False
    lines = iter([part for part in text.split("\n") if part])
    for line in lines:
        skip, continued = continued, line.endswith("\\")
        body = line.lstrip(_C_SPACE)
        if skip or not body or body.startswith("#"):
            continue
        spec, _, rest = _cut(body)
        if not _:
            raise ValueError(f"invalid configuration line: {line!r}")
        offset = _offset(spec, rank)
        if offset is not None:
            return _words(rest.lstrip(_C_SPACE), rank, offset, lines)
    raise ValueError(f"no program for rank {rank}")


def _cut(body: str) -> tuple[str, bool, str]:
    for i, char in enumerate(body):
        if char in _C_SPACE:
            return body[:i], True, body[i + 1:]
    return body, False, ""


def _offset(spec: str, rank: int) -> int | None:
    if spec == "*":
        return rank
    passed = 0
    for part in spec.split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            continue  # slurmstepd logs and ignores a malformed range
        top = int(high) if dash else int(low)
        if int(low) <= rank <= top:
            return passed + rank - int(low)
        passed += top - int(low) + 1
    return None


def _words(args: str, rank: int, offset: int, more: Iterator[str]) -> list[str]:
    words: list[str] = []
    word: list[str] | None = None
    i = 0
    while i < len(args):
        char = args[i]
        if char in _C_SPACE:
            if word is not None:
                words.append("".join(word))
                word = None
            i += 1
            continue
        word = [] if word is None else word
        if char == "'":
            close = args.find("'", i + 1)
            if close < 0:
                raise ValueError(f"no closing quote: {args!r}")
            word.append(args[i + 1:close])
            i = close + 1
        elif char == "\\":
            if i + 1 < len(args):
                word.append(args[i + 1])
                i += 2
            else:  # a continuation: the word goes on with the next line
                args, i = next(more, ""), 0
        elif char == "%":
            nxt = args[i + 1:i + 2]
            word.append(str(rank) if nxt == "t" else str(offset) if nxt == "o" else "")
            i += 2
        else:
            word.append(char)
            i += 1
    if word is not None:
        words.append("".join(word))
    return words[:MAX_WORDS]
