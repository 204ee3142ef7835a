"""Find where a value sits in a YAML source text -- on the error path only.

The YAML loader gives plain Python data without positions (that is what makes it fast), so a
semantic error (a duplicate job id, a dependency naming an unknown job, a file produced by two jobs)
knows the offending *value* but not its line.  ``locate`` finds it back by scanning the text for the
value as a whole YAML scalar (plain, single- or double-quoted), optionally right after a given key
(``id: ID0000002``), and returns its 1-based line and column.

Policy: this runs only when an error or a warning is being reported, never while reading valid
input, so it may rescan the text.  It is a best effort: when the value cannot be found the caller
reports the file without a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

Position = tuple[int, int]

# A scalar ends at a flow indicator, a comment, a ': ' or the end of the line.
_END = r"(?=\s*(?:$|[,\]}#]|:\s))"
_START = r"(?:^|(?<=[\s\[{,:-]))"


def _scalar_pattern(value: str) -> str:
    escaped = re.escape(value)
    double = re.escape(value.replace("\\", "\\\\").replace('"', '\\"'))
    single = re.escape(value.replace("'", "''"))
    return f"(?:{escaped}|\"{double}\"|'{single}')"


def locate_all(text: str, value: object, *, key: str | None = None) -> list[Position]:
    """Every position of ``value`` as a scalar (after ``key:`` when given), in file order."""
    scalar = _scalar_pattern(str(value))
    if key is not None:
        pattern = f"{_START}(?:{_scalar_pattern(key)})\\s*:\\s+({scalar}){_END}"
    else:
        pattern = f"{_START}({scalar}){_END}"
    found: list[Position] = []
    for match in re.finditer(pattern, text, flags=re.MULTILINE):
        found.append(position(text, match.start(1)))
    return found


def locate(text: str, value: object, *, key: str | None = None, nth: int = 1) -> Position | None:
    """The ``nth`` (1-based; ``-1`` the last) position of ``value``, after ``key:`` when given, or ``None``."""
    found = locate_all(text, value, key=key)
    if nth < 0 and found:
        return found[nth]
    if 0 < nth <= len(found):
        return found[nth - 1]
    if key is not None:
        return locate(text, value, nth=nth) if nth in (1, -1) else None
    return None


def locate_key(text: str, key: str, *, nth: int = 1) -> Position | None:
    """The ``nth`` position of ``key`` used as a mapping key (``key:``)."""
    pattern = f"{_START}({_scalar_pattern(key)})\\s*:(?=\\s|$)"
    matches = list(re.finditer(pattern, text, flags=re.MULTILINE))
    if len(matches) >= nth:
        return position(text, matches[nth - 1].start(1))
    return None


def locate_first(text: str, values: Iterable[object], *, key: str | None = None) -> Position | None:
    """The first value of ``values`` that can be found."""
    for value in values:
        found = locate(text, value, key=key)
        if found is not None:
            return found
    return None


def position(text: str, offset: int) -> Position:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column
