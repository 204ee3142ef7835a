"""Values of the ClassAd language as Python sees them.

``UNDEFINED`` and ``ERROR`` are the two distinguished values (singletons: compare with ``is``).
Booleans, integers, reals and strings are Python's ``bool``, ``int``, ``float`` and ``str``; a list is a
``list``; a nested ad is a ``ClassAd``.  Times have their own types: ``AbsTime`` (seconds since the epoch
plus the UTC offset, in seconds, it is shown in) and ``RelTime`` (a signed duration in seconds).

Integers are 64-bit two's complement, as in HTCondor: every arithmetic result goes through ``wrap``.
HTCondor's strings are bytes read as UTF-8: a function that counts or cuts a string (``size``,
``substr``) works on ``utf8(text)`` and makes text of the bytes again with ``text_of_bytes``, where a
byte that is no part of a valid sequence stays the character of its value.
"""

from __future__ import annotations

__all__ = [
    "ERROR", "UNDEFINED", "AbsTime", "ClassAdSyntaxError", "Error", "RelTime", "Undefined", "excerpt",
    "text_of_bytes", "utf8", "wrap",
]

import math
import re
from typing import Final, NamedTuple, Self


class Undefined:
    """The type of ``UNDEFINED``: a reference that names nothing, or an operand that does."""

    __slots__ = ()
    _instance: Self | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __str__(self) -> str:
        return "undefined"

    def __reduce__(self) -> str:
        return "UNDEFINED"


class Error:
    """The type of ``ERROR``: the value of an expression that makes no sense (``1/0``, ``"a" + 1``)."""

    __slots__ = ()
    _instance: Self | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ERROR"

    def __str__(self) -> str:
        return "error"

    def __reduce__(self) -> str:
        return "ERROR"


UNDEFINED: Final = Undefined()
ERROR: Final = Error()


class AbsTime(NamedTuple):
    """An absolute time: ``secs`` since the Unix epoch (UTC) and the ``offset`` (seconds east of UTC)."""

    secs: float
    offset: int = 0


class RelTime(NamedTuple):
    """A relative time (a duration) in seconds."""

    secs: float


class ListValue(list):  # type: ignore[type-arg]
    """A list made by a list literal: it remembers its source, because HTCondor turns such a list
    into text (``string({a, 1})``) by unparsing the expressions, not their values."""

    __slots__ = ("node",)


class SharedListValue(ListValue):
    """A list literal's value read through ``ad["name"]``: it still turns into text by its source,
    but HTCondor hands it back as a shared list, so for ``is`` it is of the built-ins' kind."""

    __slots__ = ()


class SelectedList(list):  # type: ignore[type-arg]
    """The list ``.name`` makes of a list (``({[a = 1]}).a``).  HTCondor holds it as it holds a list
    literal's value, and unlike the lists built-ins make: ``is`` between it and a literal list is
    ERROR, against a built-in's list false; it turns into text by its values."""

    __slots__ = ()


_EXCERPT: Final = 60  # characters shown on each side of the caret: a 1 MB line is not echoed whole


def excerpt(source: str, pos: int) -> tuple[str, int]:
    """The part of ``pos``'s line shown under an error (at most ``_EXCERPT`` characters either side,
    ``...`` where it is cut) and the caret's offset in it."""
    start = source.rfind("\n", 0, pos) + 1
    end = source.find("\n", pos)
    end = len(source) if end < 0 else end
    left, right = max(start, pos - _EXCERPT), min(end, pos + _EXCERPT)
    head = "..." if left > start else ""
    return head + source[left:right] + ("..." if right < end else ""), len(head) + pos - left


class ClassAdSyntaxError(ValueError):
    """Text that is not ClassAd syntax; the message shows line, column and a caret under the spot."""

    def __init__(self, message: str, source: str = "", pos: int = 0) -> None:
        self.reason = message
        self.source = source
        self.pos = pos
        self.line = source.count("\n", 0, pos) + 1
        self.column = pos - (source.rfind("\n", 0, pos) + 1) + 1
        text, caret = excerpt(source, pos)
        super().__init__(f"line {self.line}, column {self.column}: {message}\n  {text}\n  {' ' * caret}^")


_MASK: Final = (1 << 64) - 1
_SIGN: Final = 1 << 63


def c_int32(value: float) -> int:
    """A number as C converts a double to ``int``: truncated; NaN, infinities and values out of range are
    ``INT_MIN`` (x86's ``cvttsd2si``)."""
    if math.isnan(value) or math.isinf(value):
        return -(1 << 31)
    result = int(value)
    return result if -(1 << 31) <= result < (1 << 31) else -(1 << 31)


def wrap32(value: int) -> int:
    """An integer as C narrows a ``long long`` to ``int``: its low 32 bits, signed."""
    return (value + 0x80000000) % 0x100000000 - 0x80000000


def wrap(value: int) -> int:
    """Reduce ``value`` to a signed 64-bit integer, as C arithmetic on ``long long`` does."""
    if -_SIGN <= value < _SIGN:
        return value
    value &= _MASK
    return value - (1 << 64) if value & _SIGN else value


_RAW_BYTE: Final = re.compile("[\udc80-\udcff]")


def utf8(text: str) -> bytes:
    """The bytes HTCondor holds for ``text``."""
    return text.encode("utf-8", "surrogatepass")


def text_of_bytes(data: bytes) -> str:
    """``data`` read as UTF-8; a byte of no valid sequence is the character of its value."""
    text = data.decode("utf-8", "surrogateescape")
    return _RAW_BYTE.sub(lambda m: chr(ord(m.group()) - 0xDC00), text) if _RAW_BYTE.search(text) else text
