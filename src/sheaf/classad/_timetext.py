"""Text forms of absolute and relative times, as HTCondor writes and reads them.

Absolute: ISO 8601 ``2020-06-01T12:00:00+02:00`` (also ``20200601T120000``, a space or nothing for
``T``, minutes and seconds optional, ``Z``, ``+0200``), and the shorter forms the official library
reads: ``2020-06``, ``2020``, ``2020-06-01T12``, fields that carry over (``2020-13-01``); without a
zone the local zone applies.  Other junk the library reads somehow (``2020/06/01``, two- or five-digit
years) stays a syntax error.  HTCondor writes a zero offset as ``-00:00``.

Relative: ``[-][D+]HH:MM:SS`` with empty leading fields dropped (``90`` seconds is ``01:30``, none is
``00``), or fields with units ``1d2h3m4s``; the seconds may have a fraction (``2+25:14:16.123``,
``1d2h3m4.5s``, ``4.5``, ``.5``), no other field may.  ``format_reltime`` is the text of ``string()``
(whole seconds, as HTCondor converts); ``format_reltime_literal`` is the text of a ``relTime("...")``
literal, which HTCondor writes with its fraction (``1+02:03:4.5``: ``%02g``, so unpadded); where that
loses digits sheaf writes all of them, so that what it prints reads back the same.

``absTime("...")`` and ``relTime("...")`` with a literal string are read by the parser (bad text is a
syntax error there, as in the official parser).
"""

from __future__ import annotations

__all__ = [
    "format_abstime", "format_reltime", "format_reltime_literal", "local_offset", "parse_abstime",
    "parse_reltime",
]

import calendar
import decimal
import math
import re
import time
from typing import Final

_ABS: Final = re.compile(
    r"\s*(\d{4})(?:-?(\d\d)(?:-?(\d\d)(?:[T ]?(\d\d)(?::?(\d\d)(?::?(\d\d))?)?|T)?)?)?"
    r"\s*(Z|[+-]\d\d:?\d\d)?\s*\Z", re.IGNORECASE)
# the last field of either form may have a fraction: seconds
_SECS: Final = r"(\d+(?:\.\d+)?|\.\d+)"
_REL_CLOCK: Final = re.compile(
    r"\s*([-+])?\s*(?:(\d+)\+)?(?:(\d+):)??(?:(\d+):)?" + _SECS + r"\s*\Z")
_REL_UNITS: Final = re.compile(
    r"\s*([-+])?\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:" + _SECS + r"s?)?\s*\Z", re.IGNORECASE)


def local_offset(secs: float) -> int:
    """Seconds east of UTC of the local zone at ``secs`` (0 outside the platform's range)."""
    try:
        return int(time.localtime(secs).tm_gmtoff)
    except (OverflowError, OSError, ValueError):
        return 0


def parse_abstime(text: str) -> tuple[int, int] | None:
    """(seconds since the epoch, offset) or None."""
    m = _ABS.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, sec, zone = m.groups()
    # fields out of range carry over as HTCondor's mktime-style reading does (month 13 is January of
    # the next year, day 0 the last day of the month before); a missing month is January and a
    # missing day 0, as in the official library
    months = int(year) * 12 + int(month or 1) - 1
    try:
        wall = calendar.timegm((months // 12, months % 12 + 1, 1, 0, 0, 0, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    wall += (int(day or 0) - 1) * 86400 + int(hour or 0) * 3600 + int(minute or 0) * 60 + int(sec or 0)
    if zone is None:
        offset = local_offset(wall)
    elif zone.upper() == "Z":
        offset = 0
    else:
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * (-1 if zone[0] == "-" else 1)
    return wall - offset, offset


def parse_reltime(text: str) -> float | None:
    """Seconds of a relative time's text (see the module docstring), or None."""
    m = _REL_CLOCK.match(text) or _REL_UNITS.match(text)
    if m is None or not any(m.groups()[1:]):
        return None
    sign, days, hours, minutes, secs = m.groups()
    whole = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
    total = whole + float(secs or 0) if secs is not None and "." in secs else float(whole + int(secs or 0))
    return -total if sign == "-" else total


def gmtime(secs: float) -> time.struct_time:
    """``time.gmtime`` that clamps instead of failing outside the platform's range."""
    try:
        return time.gmtime(secs)
    except (OverflowError, OSError, ValueError):
        return time.gmtime(0 if secs < 0 else 253402300799)


def format_abstime(secs: float, offset: int) -> str:
    wall = gmtime(int(secs) + offset)
    sign = "+" if offset > 0 else "-"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return time.strftime("%Y-%m-%dT%H:%M:%S", wall) + f"{sign}{hours:02d}:{minutes:02d}"


def format_reltime(secs: float) -> str:
    """HTCondor's text for a relative time, computed as it does in 32-bit C ints (so that huge
    values come out as it writes them, e.g. ``--24855+-3:-14:-8``)."""
    total = _int32(secs)
    sign = ""
    if total < 0:
        sign = "-"
        total = _int32(-total)  # negating INT_MIN leaves it negative, as in C
    days, rest = _c_divmod(total, 86400)
    hours, rest = _c_divmod(rest, 3600)
    minutes, seconds = _c_divmod(rest, 60)
    if days:
        return f"{sign}{days}+{hours:02d}:{minutes:02d}:{seconds:02d}"
    if hours:
        return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    if minutes:
        return f"{sign}{minutes:02d}:{seconds:02d}"
    return f"{sign}{seconds:02d}"


def format_reltime_literal(secs: float) -> str:
    """The text of a ``relTime("...")`` literal: HTCondor's, with the fraction of a second; more
    digits where HTCondor's six significant ones (or its exponent) would not read back as ``secs``."""
    if secs == int(secs) or math.isinf(secs) or math.isnan(secs):
        return format_reltime(secs)
    sign = "-" if secs < 0 else ""
    whole = int(abs(secs))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    head = (f"{days}+{hours:02d}:{minutes:02d}:" if days else f"{hours:02d}:{minutes:02d}:" if hours
            else f"{minutes:02d}:" if minutes else "")
    fraction = abs(secs) - (whole - seconds)
    # HTCondor's text; else the shortest decimal of the seconds, written without an exponent (the
    # grammar has none); else as many digits as it takes
    candidates = [f"{fraction:02g}", format(decimal.Decimal(repr(fraction)), "f")]
    candidates += [f"{fraction:.{digits}f}" for digits in range(1, 21)]
    texts = (f"{sign}{head}{text}" for text in candidates)
    return next((text for text in texts if parse_reltime(text) == secs), f"{sign}{head}{candidates[1]}")


def _int32(value: float) -> int:
    if math.isnan(value) or abs(value) == float("inf"):
        return -(1 << 31)
    result = int(value)
    return result if -(1 << 31) <= result < (1 << 31) else -(1 << 31)


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // b
    q = -q if a < 0 else q
    return q, a - q * b
