"""Find where a value sits in a YAML source text -- on the error path only.

The YAML loader gives plain Python data without positions (that is what makes it fast), so a
semantic error (a duplicate job id, a dependency naming an unknown job, a file produced on two sites)
knows the offending *value* but not its line.  ``locate`` finds it back by scanning the text for the
value as a whole YAML scalar (plain, single- or double-quoted), optionally right after a given key
(``id: ID0000002``), and returns its 1-based line and column.

A *whole scalar* starts at the start of a line or after white space or one of ``[{,:-``, and ends
where, past blanks, the line ends or one of ``,]}#`` or ``: `` follows.

Policy: this runs only when an error or a warning is being reported, never while reading valid
input, so it may rescan the text -- but in linear time, whatever the value and the text, which a
regular expression built from the value does not guarantee.  So candidates are found with
``str.find`` on the first ``_HEAD`` characters of the value form, each is checked at its two ends
(constant time) before the whole form is compared, white space is scanned at most once per
whole-scalar match, and the comparisons together may cost at most ``_BUDGET``
times the text's length: past that (a pathological, self-overlapping value), the search stops with
what it found.  Values that are empty or all white space are not looked for.  It is a best effort:
when the value cannot be found the caller reports the file without a line.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator

Position = tuple[int, int]

_OPENERS = "[{,:-"
_CLOSERS = ",]}#"
_HEAD = 64
_BUDGET = 8


def _forms(value: str) -> list[str]:
    """The value as a plain, a double-quoted and a single-quoted YAML scalar."""
    double = value.replace("\\", "\\\\").replace('"', '\\"')
    single = value.replace("'", "''")
    return [value, f'"{double}"', f"'{single}'"]


def _starts(text: str, at: int) -> bool:
    if at == 0:
        return True
    before = text[at - 1]
    return before.isspace() or before in _OPENERS


class _Budget:
    """What the comparisons and white-space scans of one search may still cost (module docstring)."""

    __slots__ = ("left",)

    def __init__(self, text: str, value: str) -> None:
        self.left = _BUDGET * (len(text) + len(value)) + 4096

    def skip_blanks(self, text: str, at: int, *, newlines: bool) -> int:
        """The first offset from ``at`` on that is not white space (nor, unless ``newlines``, a newline)."""
        found = (_SPACE if newlines else _BLANK).match(text, at)
        end = found.end() if found else at
        self.left -= end - at
        return end

    def skip_blanks_back(self, text: str, at: int) -> int:
        """The first offset of the white space that ends at ``at``."""
        before = at
        while before > 0 and text[before - 1].isspace() and self.left > 0:
            before -= 1
            self.left -= 1
        return before


_BLANK = re.compile(r"[^\S\n]*")
_SPACE = re.compile(r"\s*")


def _ends(text: str, at: int, budget: _Budget) -> bool:
    """A whole scalar may end at ``at``: blanks, then the end of the line, ``,]}#`` or ``: ``."""
    at = budget.skip_blanks(text, at, newlines=False)
    if at >= len(text) or text[at] == "\n" or text[at] in _CLOSERS:
        return True
    return text[at] == ":" and at + 1 < len(text) and text[at + 1].isspace()


def _colon_follows(text: str, at: int, budget: _Budget) -> bool:
    at = budget.skip_blanks(text, at, newlines=True)
    return at < len(text) and text[at] == ":" and (at + 1 == len(text) or text[at + 1].isspace())


def _found(text: str, form: str, budget: _Budget) -> Iterator[int]:
    """Offsets of ``form`` preceded by a line start, white space or ``[{,:-``, in order."""
    head = form[:_HEAD]
    at = 0
    while budget.left > 0:
        found = text.find(head, at)
        if found < 0:
            return
        budget.left -= found - at + len(head)
        at = found + 1
        if _starts(text, found):
            yield found


def _scalars(text: str, form: str, budget: _Budget) -> Iterator[int]:
    """Offsets where ``form`` stands as a whole scalar, in order, not overlapping."""
    size = len(form)
    after = 0
    for found in _found(text, form, budget):
        if found < after or not _ends(text, found + size, budget):
            continue
        budget.left -= size
        if text.startswith(form, found):
            yield found
            after = found + size


def _keys(text: str, form: str, budget: _Budget) -> Iterator[int]:
    """Offsets where ``form`` stands as a mapping key (``key:``), in order."""
    size = len(form)
    for found in _found(text, form, budget):
        budget.left -= size
        if text.startswith(form, found) and _colon_follows(text, found + size, budget):
            yield found


def _after_key(text: str, at: int, keys: list[str], budget: _Budget) -> bool:
    """``at`` follows ``key:`` and white space (``key`` in one of its forms, as a whole scalar)."""
    before = budget.skip_blanks_back(text, at)
    if before in (at, 0) or text[before - 1] != ":":
        return False
    before = budget.skip_blanks_back(text, before - 1)
    return any(before >= len(k) and text.startswith(k, before - len(k)) and _starts(text, before - len(k))
               for k in keys)


def _offsets(text: str, value: object, key: str | None) -> Iterator[int]:
    wanted = str(value)
    if not wanted.strip():
        return iter(())
    budget = _Budget(text, wanted)
    found = heapq.merge(*(_scalars(text, form, budget) for form in _forms(wanted)))
    if key is None:
        return found
    keys = _forms(key)
    return (at for at in found if _after_key(text, at, keys, budget))


def locate(text: str, value: object, *, key: str | None = None, nth: int = 1) -> Position | None:
    """The ``nth`` (1-based; ``-1`` the last) position of ``value``, after ``key:`` when given, or
    ``None``."""
    offsets = _offsets(text, value, key)
    chosen: int | None = None
    for count, offset in enumerate(offsets, 1):
        chosen = offset
        if count == nth:
            break
    else:
        if nth != -1:
            chosen = None
    if chosen is not None:
        return position(text, chosen)
    if key is not None and nth in (1, -1):
        return locate(text, value, nth=nth)
    return None


def locate_key(text: str, key: str, *, nth: int = 1) -> Position | None:
    """The ``nth`` position of ``key`` used as a mapping key (``key:``)."""
    if not key.strip():
        return None
    budget = _Budget(text, key)
    for count, found in enumerate(heapq.merge(*(_keys(text, form, budget) for form in _forms(key))), 1):
        if count == nth:
            return position(text, found)
    return None


def locate_xml(text: str, value: object, name: str | None = None) -> Position | None:
    """The first position of ``value`` in XML text: as the value of attribute ``name`` (``name="value"``),
    or without ``name`` of any attribute, else as an element's whole text (``<k>value</k>``); ``None``."""
    wanted = str(value)
    if not wanted.strip():
        return None
    escaped = re.escape(wanted).replace("&", "&amp;").replace("<", "&lt;")
    attribute = re.escape(name) if name else r"[\w:.-]+"
    found = re.search(rf"(?<![\w:.-]){attribute}\s*=\s*([\"'])({escaped})\1", text)
    if found is None and name is None:
        found = re.search(rf">\s*()({escaped})\s*</", text)
    return position(text, found.start(2)) if found else None


def locate_duplicate_key(text: str, key: str) -> Position | None:
    """Where ``key`` stands a second time as a key of one block mapping: its occurrences grouped by
    column and by the mapping holding them (the nearest line above at a smaller indentation, the
    ``- `` item the key opens, or the flow mapping on its line); else its second occurrence anywhere."""
    if not key.strip():
        return None
    budget = _Budget(text, key)
    seen: set[tuple[int, int]] = set()
    for found in heapq.merge(*(_keys(text, form, budget) for form in _forms(key))):
        start = text.rfind("\n", 0, found) + 1
        column = found - start
        head = text[start:found]
        if head.strip(" -") == "" and "-" in head:  # ``- key:``: the key opens its item's mapping
            group = (column, start)
        elif "{" in head:  # a flow mapping: one a line
            group = (-1 - head.rindex("{"), start)
        elif head.strip():
            return locate_key(text, key, nth=2)
        else:
            group = (column, _holder(text, start, column))
        if group in seen:
            return position(text, found)
        seen.add(group)
    return None


def _holder(text: str, start: int, column: int) -> int:
    """The offset of the nearest line above ``start`` indented less than ``column`` (-1: none), blank
    and comment lines passed over."""
    end = start - 1
    while end > 0:
        begin = text.rfind("\n", 0, end) + 1
        line = text[begin:end]
        stripped = line.lstrip(" ")
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) < column:
            return begin
        end = begin - 1
    return -1


def positions(text: str, offsets: Iterable[int]) -> list[Position]:
    """1-based (line, column) of increasing character offsets, counted in one pass."""
    result: list[Position] = []
    line, last, line_start = 1, 0, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        newline = text.rfind("\n", last, offset)
        if newline >= 0:
            line_start = newline + 1
        last = offset
        result.append((line, offset - line_start + 1))
    return result


def position(text: str, offset: int) -> Position:
    """1-based (line, column) of a character offset."""
    return positions(text, (offset,))[0]
