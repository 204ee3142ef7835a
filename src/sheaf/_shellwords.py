"""POSIX shell words, split in linear time: the quoting of sheaf's line formats.

The seqexec ``.in`` file, the PMC DAG and ``sheaf-transfer``'s pairs file carry argv as words quoted
with POSIX shell rules (never given to a shell).  ``split_words`` reads them exactly as
``shlex.split(text, comments=False, posix=True)`` does; ``shlex`` builds every token one character
at a time (``self.token += c``), which is quadratic in a long word.  Here one regex match consumes a
whole run of plain text, a quoted string or an escape, so the time is linear in the line.

The rules (``shlex``'s POSIX mode with ``whitespace_split``, no comment characters):

- words are separated by runs of space, tab, CR and LF -- only those four;
- ``'...'`` keeps everything up to the next ``'`` literally;
- ``"..."`` keeps everything literally except that a backslash before ``"`` or ``\\`` is removed
  (before any other character it stays: ``shlex`` knows no ``$`` or backquote);
- outside quotes a backslash takes the next character literally, whatever it is;
- pieces without white space between them form one word; a quoted empty string is an empty word.

An unclosed quote raises ``ValueError("No closing quotation")`` and a backslash at the very end
``ValueError("No escaped character")``, the messages ``shlex`` uses (callers turn them into
``FormatError`` with their path and line).  ``quote_word``/``join_words`` are ``shlex.quote`` and
``shlex.join``: ``split_words(join_words(argv)) == argv`` for every argv of ``str``.
"""

from __future__ import annotations

__all__ = ["join_words", "quote_word", "split_words"]

import re
import shlex
from collections.abc import Iterable

_WHITE = " \t\r\n"
# Possessive quantifiers: a failed match (an unclosed quote) gives back nothing, so it stays linear.
_PIECE = re.compile(r"""[^ \t\r\n'"\\]++|'[^']*+'|"(?:[^"\\]|\\.)*+"|\\.|[ \t\r\n]++""", re.DOTALL)
_DOUBLE_ESCAPE = re.compile(r"\\([\\\"])")

quote_word = shlex.quote


def join_words(argv: Iterable[str]) -> str:
    return " ".join(quote_word(arg) for arg in argv)


def _error_at(text: str, pos: int) -> str:
    """``shlex``'s message for the piece that cannot close: a backslash with nothing after it (also
    inside an unclosed double quote) has "No escaped character", anything else "No closing quotation"."""
    if text[pos] == "'":
        return "No closing quotation"
    trailing = len(text) - len(text.rstrip("\\"))
    return "No escaped character" if trailing % 2 else "No closing quotation"


def split_words(text: str) -> list[str]:
    """The words of ``text`` (module docstring); linear in ``len(text)``."""
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    pos, end = 0, len(text)
    match = _PIECE.match
    while pos < end:
        found = match(text, pos)
        if found is None:
            raise ValueError(_error_at(text, pos))
        piece = found.group()
        pos = found.end()
        first = piece[0]
        if first in _WHITE:
            if in_word:
                words.append("".join(parts))
                parts.clear()
                in_word = False
            continue
        in_word = True
        if first == "'":
            parts.append(piece[1:-1])
        elif first == '"':
            parts.append(_DOUBLE_ESCAPE.sub(r"\1", piece[1:-1]))
        elif first == "\\":
            parts.append(piece[1])
        else:
            parts.append(piece)
    if in_word:
        words.append("".join(parts))
    return words
