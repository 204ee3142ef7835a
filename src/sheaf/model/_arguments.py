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

File references (DAX ``<filename file="f.a"/>``) are their lfn: the job runs in the site's working
directory, where staged files have their lfn as name.  Time is linear in the text (one regex match
per run of plain text, quoted string or escape).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sheaf.model._workflow import FileRef

__all__ = ["join_arguments", "needs_splitting", "split_arguments"]

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
