"""Text forms of absolute and relative times, as HTCondor writes and reads them.

Absolute: ISO 8601 ``2020-06-01T12:00:00+02:00`` (also ``20200601T120000``, a space for ``T``,
seconds optional, ``Z``, ``+0200``); without a zone the local zone applies.  HTCondor writes a zero
offset as ``-00:00``.  Relative: ``[-][D+]HH:MM:SS`` with empty leading fields dropped (``90`` seconds
is ``01:30``, none is ``00``), or fields with units ``1d2h3m4s``.  ``absTime("...")`` and
``relTime("...")`` with a literal string are read by the parser (bad text is a syntax error there, as
in the official parser).
"""

from __future__ import annotations

__all__ = ["format_abstime", "format_reltime", "local_offset", "parse_abstime", "parse_reltime"]

import calendar
import math
import re
import time
from typing import Final

_ABS: Final = re.compile(
    r"\s*(\d{4})-?(\d\d)-?(\d\d)(?:[T ](\d\d):?(\d\d)(?::?(\d\d))?)?\s*(Z|[+-]\d\d:?\d\d)?\s*\Z",
    re.IGNORECASE)
_REL_CLOCK: Final = re.compile(r"\s*(-)?\s*(?:(\d+)\+)?(\d+)(?::(\d+))?(?::(\d+))?\s*\Z")
_REL_UNITS: Final = re.compile(r"\s*(-)?\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*\Z",
                               re.IGNORECASE)


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
    try:
        wall = calendar.timegm((int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                                int(sec or 0), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if zone is None:
        offset = local_offset(wall)
    elif zone.upper() == "Z":
        offset = 0
    else:
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * (-1 if zone[0] == "-" else 1)
    return wall - offset, offset


def parse_reltime(text: str) -> float | None:
    m = _REL_CLOCK.match(text)
    if m is not None:
        sign, days, first, second, third = m.groups()
        fields = [int(f) for f in (first, second, third) if f is not None]
        while len(fields) < 3:
            fields.insert(0, 0)
        secs = int(days or 0) * 86400 + fields[0] * 3600 + fields[1] * 60 + fields[2]
        return float(-secs if sign else secs)
    m = _REL_UNITS.match(text)
    if m is None or not any(m.groups()[1:]):
        return None
    sign, days, hours, minutes, secs_text = m.groups()
    secs = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(secs_text or 0)
    return float(-secs if sign else secs)


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


def _int32(value: float) -> int:
    if math.isnan(value) or abs(value) == float("inf"):
        return -(1 << 31)
    result = int(value)
    return result if -(1 << 31) <= result < (1 << 31) else -(1 << 31)


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // b
    q = -q if a < 0 else q
    return q, a - q * b
