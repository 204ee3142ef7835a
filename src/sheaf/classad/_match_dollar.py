"""Finding ``$$(...)`` references in the text of a job attribute (condor_schedd's scanner).

The schedd expands ``$$()`` *textually*: it unparses a job attribute (a string keeps its quotes and
escapes), replaces each reference with text, and parses the result back.  Three forms are found:

    $$(Name)            the matched resource's attribute ``Name``
    $$(Name:default)    the same, with ``default`` (raw text, up to the ``)``) when the resource lacks it
    $$([expression])    ``expression`` evaluated with the job as MY and the resource as TARGET

The characters allowed are condor_schedd's (``next_dollardollar_macro``): ``Name`` is letters,
digits, ``_``, ``.`` and ``/``; a default is those characters plus ``$``, space, ``,``, ``\\`` and
``:``, and a parenthesised group ``(...)``.  ``$$(...)`` with anything else (a quote, ``-``, ``=``...)
is not a reference and stays as it is.  A name the scanner accepts may still be one the schedd
refuses to look up -- a dotted name, see ``_match_expand``.  ``[expression]`` ends at the ``]``
that balances the opening ``[`` followed by ``)``; brackets inside string literals do not count.
The scan resumes *after* the text substituted for a reference, so a value that itself contains
``$$(`` is never expanded again.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Reference", "find_reference"]

_NAME = re.compile(r"([A-Za-z0-9_./]*)(?::((?:[A-Za-z0-9_./$ ,\\:]|\([^)]*\))*))?\)")


class Reference(NamedTuple):
    """One ``$$(...)`` found in ``text[start:end]``; ``body`` is what stands between the parentheses."""

    start: int
    end: int
    body: str
    name: str | None          # the attribute name, or None for ``$$([expression])``
    default: str | None       # the text after ``:``, or None without one
    expression: str | None    # the text between ``[`` and ``]`` of ``$$([expression])``


def find_reference(text: str, pos: int = 0) -> Reference | None:
    """The first well-formed ``$$(...)`` at or after ``pos``, or None."""
    while (start := text.find("$$(", pos)) >= 0:
        found = _at(text, start)
        if found is not None:
            return found
        pos = start + 1
    return None


def _at(text: str, start: int) -> Reference | None:
    inner = start + 3
    if text.startswith("[", inner):
        close = _closing_bracket(text, inner)
        if close is None:
            return None
        body = text[inner:close + 1]
        return Reference(start, close + 2, body, None, None, body[1:-1])
    match = _NAME.match(text, inner)
    if match is None:
        return None
    return Reference(start, match.end(), text[inner:match.end() - 1], match[1], match[2], None)


def _closing_bracket(text: str, open_at: int) -> int | None:
    """Index of the ``]`` balancing ``text[open_at]`` when a ``)`` follows it; strings are skipped."""
    depth, pos, quote = 0, open_at, ""
    while pos < len(text):
        char = text[pos]
        if quote:
            if char == "\\":
                pos += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return pos if text.startswith(")", pos + 1) else None
        pos += 1
    return None
