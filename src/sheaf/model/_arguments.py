"""A job's arguments as its program receives them: Pegasus's joining and HTCondor's splitting.

Pegasus 5 joins a job's argument list with single spaces into one string (its YAML reader; a DAX
``<argument>`` is one string already), quotes that string for HTCondor (``CondorQuoteParser``)
and HTCondor splits it into the argv the program (through pegasus-kickstart) receives.  So
``arguments: ["-a preprocess", "-T", "60"]`` reaches the program as ``-a``, ``preprocess``, ``-T``,
``60``; a workflow that needs one argument holding a blank quotes it *inside* the string:
``"'hello world'"`` or ``'"hello world"'``.  ``split_arguments`` computes that argv directly:

- runs of white space (space, tab, CR, LF) separate words; an empty argument disappears;
- ``'...'`` and ``"..."`` group characters literally (white space, the other quote and ``\\``
  included); quoted pieces and plain text without white space between them form one word, and a
  quoted empty string is an empty word;
- outside quotes a backslash takes the next character literally (``\\\\`` is one ``\\``, ``\\"``
  a ``"``, ``\\'`` a ``'``);
- an unclosed quote or a backslash at the very end is an error (Pegasus refuses the plan too).

One deliberate difference: Pegasus's quoter turns ``\\'`` outside quotes into HTCondor's empty
quoted string, so the program never sees the quote; sheaf gives the ``'`` the user escaped.

``quote_words`` is the inverse: arguments whose split is the given argv.

File references (DAX ``<filename file="f.a"/>``) are their lfn: the job runs in the site's working
directory, where staged files have their lfn as name.  Time is linear in the text (one regex match
per run of plain text, quoted string or escape).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sheaf.errors import ValidationError
from sheaf.model._workflow import FileRef

__all__ = ["job_argv", "join_arguments", "needs_splitting", "quote_words", "split_arguments"]

# Possessive quantifiers: an unclosed quote fails without backtracking, so the scan stays linear.
_PIECE = re.compile(r"""[^ \t\r\n'"\\]++|'[^']*+'|"[^"]*+"|\\.|[ \t\r\n]++|['"\\]""", re.DOTALL)
#: a character that makes the joined string differ from the list split on nothing
_SPECIAL = re.compile(r"""[ \t\r\n'"\\]""")


def join_arguments(arguments: Sequence[str | FileRef]) -> str:
    """Pegasus's argument string: every argument (a file reference as its lfn) joined by one space."""
    return " ".join(a.lfn if isinstance(a, FileRef) else a for a in arguments)


def needs_splitting(arguments: Sequence[str]) -> bool:
    """Whether ``split_arguments`` could give anything but the list itself (a blank, a quote, a
    backslash or an empty argument somewhere) -- the cheap test taken for every job."""
    return _SPECIAL.search("".join(arguments)) is not None or "" in arguments


def job_argv(job_id: str, arguments: Sequence[str | FileRef]) -> tuple[str, ...]:
    """The argv the program of job ``job_id`` receives for its ``arguments``; a ``ValidationError``
    naming the job where a quote is not closed."""
    try:
        if not needs_splitting(arguments):  # type: ignore[arg-type]  # all str and plain: the common case
            return arguments  # type: ignore[return-value]  # the tuple is already the argv
    except TypeError:  # a FileRef among them (DAX)
        pass
    try:
        return split_arguments(join_arguments(arguments))
    except ValueError as exc:
        raise ValidationError(f"the arguments of job '{job_id}' cannot be split into words: {exc}",
                              rule="quotes in a job's arguments are closed, as HTCondor needs them",
                              value=job_id, detail="arguments: " + join_arguments(arguments)) from None


def split_arguments(text: str) -> tuple[str, ...]:
    """The argv a program receives for the argument string ``text`` (module docstring).

    Raises ``ValueError`` naming the problem for an unclosed quote or a trailing backslash."""
    words: list[str] = []
    current: list[str] = []
    started = False
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first in " \t\r\n":
            if started:
                words.append("".join(current))
                current, started = [], False
            continue
        started = True
        if first in {"'", '"'}:
            if len(piece) == 1:
                raise ValueError(f"unclosed {first} quote at offset {match.start()}")
            current.append(piece[1:-1])
        elif first == "\\":
            if len(piece) == 1:
                raise ValueError("a backslash ends the arguments (it escapes nothing)")
            current.append(piece[1])
        else:
            current.append(piece)
    if started:
        words.append("".join(current))
    return tuple(words)


def quote_words(words: Sequence[str]) -> tuple[str, ...]:
    """Arguments that ``split_arguments`` splits into ``words`` again: a plain word as it is, any
    other in single quotes, a ``'`` in it written as ``"'"`` beside them."""
    return tuple(word if word and _SPECIAL.search(word) is None else _quoted(word) for word in words)


def _quoted(word: str) -> str:
    if "'" not in word:
        return f"'{word}'"
    return "\"'\"".join(f"'{piece}'" if piece else "" for piece in word.split("'"))
