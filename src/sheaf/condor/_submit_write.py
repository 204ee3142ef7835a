"""Writing the submit language: values that condor_submit reads back as they were.

``quote_arguments``/``quote_environment`` produce the *new* syntax (the whole value in double
quotes; white space separates; a word holding white space, a single quote or nothing is single
quoted with ``''`` for a quote; ``""`` is a double quote), ``escape_macros`` writes a ``$`` that
condor_submit would expand as ``$(DOLLAR)``, ``classad_string`` a ClassAd string literal.  The new
syntax's *reader* is HTCondor's V2 argument splitter, which lives in ``sheaf.classad`` (its
``argsToList`` is the same code in HTCondor): the engine reads arguments through it, and the
round-trip tests run this writer against that reader.  No value holding a NUL or a line break
(anything ``str.splitlines`` splits at) can be written: such a value is :class:`Unwritable`.
"""

from __future__ import annotations

__all__ = ["Unwritable", "check_line", "classad_string", "escape_macros", "quote_arguments",
           "quote_environment", "quote_word"]

import re
from collections.abc import Iterable

_MACRO_START = re.compile(r"\$+(?=\(|[A-Za-z_][A-Za-z0-9_]*\()")
_LITERAL_DOLLAR_MACRO = re.compile(r"\$\(dollar\)", re.IGNORECASE)
_NEEDS_SINGLE = re.compile(r"[\s']")
_BAD = re.compile("[\n\r\0\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SAFE_WORD = re.compile(r"[^\s'\"$\0]+")
_UNSAFE_CHAR = re.compile(r"[\s'\"$\0]")


class Unwritable(ValueError):
    """A value that cannot appear on one line of a submit description or DAG file."""


def check_line(text: str, what: str) -> str:
    if _BAD.search(text):
        raise Unwritable(f"{what} holds a line break or NUL: {text!r}")
    return text


def escape_macros(text: str) -> str:
    """``$`` that condor_submit would take as a macro start becomes ``$(DOLLAR)``.

    Two or more dollars before a macro-like name (``$$(attr)``) cannot be written: condor_submit
    leaves ``$$(...)`` for the execute side to expand, whatever precedes it; nor can ``$(DOLLAR)``
    itself (condor_submit replaces it until none is left).
    """
    if "$" not in text:
        return text
    if _LITERAL_DOLLAR_MACRO.search(text):
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
    argv = tuple(argv)
    if "" not in argv and not _UNSAFE_CHAR.search("".join(argv)):  # most need no quoting: one regex for all
        return '"' + " ".join(argv) + '"'
    safe = _SAFE_WORD.fullmatch
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
