"""Quoting for HTCondor submit descriptions and DAG files.

HTCondor's *new* argument syntax (``condor_submit`` manual, ``arguments``), which is also the
syntax of ``environment``:

- the whole value is surrounded by double quotes;
- white space separates arguments;
- an argument holding white space (or nothing at all, or a single quote) is surrounded by single
  quotes, and a single quote inside it is written twice (``'don''t'``);
- a double quote anywhere is written twice (``""``); the backslash has no special meaning.

condor_submit also expands macros in every value: ``$(name)``, ``$$(attr)`` and the function forms
``$ENV(x)``, ``$INT(x)``...  A ``$`` that could start one of those is written ``$(DOLLAR)``, the
predefined macro that expands to a literal dollar sign; any other ``$`` (``$HOME``) is literal already.
Two texts cannot be written at all: ``$$(`` (left for the execute side to expand) and ``$(DOLLAR)``
itself (condor_submit replaces it until none is left).

Nothing here accepts a NUL or a line break -- LF, CR, and every other character ``str.splitlines``
ends a line at (VT, FF, FS, GS, RS, NEL, U+2028, U+2029), because sheaf's own readers of submit and
DAG files split lines that way: a submit description is line based, so such a value cannot be
written and the caller reports the job it belongs to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MACRO_START = re.compile(r"\$+(?=\(|[A-Za-z_][A-Za-z0-9_]*\()")
_LITERAL_DOLLAR_MACRO = re.compile(r"\$\(dollar\)", re.IGNORECASE)
_NEEDS_SINGLE = re.compile(r"[\s']")
_BAD = re.compile("[\n\r\0\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SAFE_WORD = re.compile(r"[^\s'\"$\0]+")


class Unwritable(ValueError):
    """A value that cannot appear on one line of a submit description or DAG file."""


def check_line(text: str, what: str) -> str:
    if _BAD.search(text):
        raise Unwritable(f"{what} holds a line break or NUL: {text!r}")
    return text


def escape_macros(text: str) -> str:
    """``$`` that condor_submit would take as a macro start becomes ``$(DOLLAR)``.

    Two or more dollars before a macro-like name (``$$(attr)``) cannot be written: condor_submit
    leaves ``$$(...)`` for the execute side to expand, whatever precedes it.
    """
    if "$" not in text:
        return text
    if _LITERAL_DOLLAR_MACRO.search(text):  # condor_submit replaces $(DOLLAR) until none is left
        raise Unwritable(f"'$(DOLLAR)' cannot be written literally: {text!r}")
    return _MACRO_START.sub(_dollar, text)


def _dollar(match: re.Match[str]) -> str:
    if len(match.group()) > 1:
        raise Unwritable(f"'$$(' cannot be written literally (HTCondor expands it at match time): "
                         f"{match.string!r}")
    return "$(DOLLAR)"


def quote_word(word: str) -> str:
    """One argument in the new syntax (without the surrounding double quotes)."""
    check_line(word, "an argument")
    word = escape_macros(word)
    if word and not _NEEDS_SINGLE.search(word):
        return word.replace('"', '""')
    return "'" + word.replace("'", "''").replace('"', '""') + "'"


def quote_arguments(argv: Iterable[str]) -> str:
    """A whole ``arguments`` value, e.g. ``["a", "b c"]`` -> ``"a 'b c'"``."""
    safe = _SAFE_WORD.fullmatch  # most arguments need no quoting at all: one regex, no copy
    return '"' + " ".join(arg if safe(arg) else quote_word(arg) for arg in argv) + '"'


def quote_environment(env: Iterable[tuple[str, str]]) -> str:
    """A whole ``environment`` value in the new syntax: ``"A=1 B='x y'"`` (values quoted as arguments)."""
    words = []
    for name, value in env:
        if not name or "=" in name or _NEEDS_SINGLE.search(name):
            raise Unwritable(f"not an environment variable name: {name!r}")
        words.append(f"{quote_word(name)}={quote_word(value)}")
    return '"' + " ".join(words) + '"'


def classad_string(text: str) -> str:
    """A ClassAd string literal, for ``+attr = <literal>`` lines."""
    check_line(text, "a ClassAd string")
    return '"' + escape_macros(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
