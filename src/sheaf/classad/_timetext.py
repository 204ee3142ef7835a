"""Text forms of absolute and relative times, as HTCondor writes and reads them.

Reading follows the official library's grammar, field by field, so that a text reads the same in
both (what it refuses is a syntax error here, where the official parser refuses it too):

* Absolute: ``D* dddd [D* dd [D* dd [D* dd [D* dd [D* dd D*]]]]] [Z | +dd:dd | +dddd]`` where ``D``
  is any non-digit: ISO 8601 ``2020-06-01T12:00:00+02:00``, ``20200601T120000``, the functional
  tests' ``1970-01-01T:00:00:01Z``, ``2020/06/01``, the short ``2020-06`` and ``2020``.  A field is
  read as C's ``atoi`` of the next two (four for the year) characters, so ``2020-6-01`` is June 1;
  a digit left over after the seconds refuses the text.  Fields out of range carry over
  (``2020-13-01`` is January 2021, a missing day is day 0, the last of the month before).  The zone
  must end the text (``Z`` may have blanks after it); without one the local zone applies.
  HTCondor writes a zero offset as ``-00:00``.
* Relative: read from the end, ``[-] [days (d|+)] [hours (h|:)] [minutes (m|:)] [seconds [s]]``
  with blanks anywhere between: ``1+02:03:04``, ``1d2h3m4s``, ``1 d``, ``90``, ``4.5``; only the
  seconds may have a fraction; an empty text is 0 and a unit without digits counts 0
  (``1+`` is a day).  Each field is a C int (a longer run of digits reads as 0).

``format_reltime`` is the text of ``string()`` (whole seconds, as HTCondor converts);
``format_reltime_literal`` is the text of a ``relTime("...")`` literal, which HTCondor writes with
its fraction (``1+02:03:4.5``: ``%02g``, so unpadded); where that loses digits sheaf writes all of
them, so that what it prints reads back the same.

``absTime("...")`` and ``relTime("...")`` with a literal string are read by the parser (bad text is a
syntax error there, as in the official parser).
"""

from __future__ import annotations

__all__ = [
    "format_abstime", "format_reltime", "format_reltime_literal", "local_offset", "parse_abstime",
    "parse_reltime",
]

import decimal
import math
import time
from typing import Final

from ._values import c_int32

# C's isspace and isdigit: the official library reads bytes in the C locale
_SPACE: Final = " \t\n\v\f\r"
_DIGITS: Final = "0123456789"
_INT_MAX: Final = (1 << 31) - 1


def local_offset(secs: float) -> int:
    """Seconds east of UTC of the local zone at ``secs`` (0 outside the platform's range)."""
    try:
        return int(time.localtime(secs).tm_gmtoff)
    except (OverflowError, OSError, ValueError):
        return 0


def parse_abstime(text: str) -> tuple[int, int] | None:
    """(seconds since the epoch, offset) or None (see the module docstring)."""
    text, zone = _split_zone(text)
    fields = _date_fields(text)
    if fields is None:
        return None
    year, month, day, hour, minute, sec = fields
    # mktime-style carry: month 13 is January of the next year, day 0 the last of the month before;
    # on the proleptic calendar with a year 0 on the way ("001:0032", month 0 of year 1 and its 32nd
    # day, is 0001-01-01 to the library)
    months = year * 12 + month - 1
    wall = _days_from_civil(months // 12, months % 12 + 1) * 86400
    wall += (day - 1) * 86400 + hour * 3600 + minute * 60 + sec
    local = local_offset(wall)
    if wall - local == -1:  # the library reads the fields with mktime, whose -1 is its failure
        return None
    offset = local if zone is None else zone
    return wall - offset, offset


def _days_from_civil(year: int, month: int) -> int:
    """Days from 1970-01-01 to the first of ``month`` of ``year`` (proleptic Gregorian, any year)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _split_zone(text: str) -> tuple[str, int | None]:
    """The text without its zone, and the zone's offset in seconds (None: no zone)."""
    end = len(text.rstrip(_SPACE)) - 1
    if end > 0 and text[end] in "zZ":
        return text[:end] + text[end + 1:], 0
    size = len(text)
    if size > 6 and text[size - 6] in "+-" and text[size - 3] == ":" and text[size - 5] not in "+-":
        text = text[:size - 3] + text[size - 2:]  # the library drops the colon before it looks
    elif not (size > 5 and text[size - 5] in "+-"):
        return text, None
    sign, digits = text[-5], text[-4:]
    if len(digits) < 4 or not all(c in _DIGITS for c in digits):
        return text, None
    secs = int(digits[:2]) * 3600 + int(digits[2:]) * 60
    return text[:-5], -secs if sign == "-" else secs


def _date_fields(text: str) -> list[int] | None:
    """Year, month, day, hours, minutes, seconds of a zone-less date (absent: month 1, others 0)."""
    size = len(text)
    pos = _next_digit(text, 0)
    if pos > size - 4:
        return None
    fields = [_atoi(text[pos:pos + 4]), 1, 0, 0, 0, 0]
    pos += 4
    for index in range(1, 6):
        pos = _next_digit(text, pos)
        if pos <= size - 2:
            fields[index] = _atoi(text[pos:pos + 2])
            pos += 2
    pos = _next_digit(text, pos)
    return None if pos < size else fields


def _next_digit(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] not in _DIGITS:
        pos += 1
    return pos


def _atoi(text: str) -> int:
    """C's ``atoi`` of a text that starts with a digit: its leading digits."""
    end = 0
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return int(text[:end])


def parse_reltime(text: str) -> float | None:
    """Seconds of a relative time's text (see the module docstring), or None."""
    pos = _skip_back(text, len(text) - 1)
    secs = 0.0
    if pos >= 0 and (text[pos] in "sS" or text[pos] in _DIGITS):
        if text[pos] in "sS":
            pos = _skip_back(text, pos - 1)
        end = pos + 1
        pos = _digits_back(text, pos)
        if pos >= 0 and text[pos] == ".":
            pos = _digits_back(text, pos - 1)
        number = text[pos + 1:end]
        secs = float(number) if number.strip(".") else 0.0
    whole = 0
    for units, scale in (("mM:", 60), ("hH:", 3600), ("dD+", 86400)):
        pos = _skip_back(text, pos)
        if pos >= 0 and text[pos] in units:
            pos = _skip_back(text, pos - 1)
            start = _digits_back(text, pos)
            whole = _wrap32(whole + _wrap32(_field(text[start + 1:pos + 1]) * scale))
            pos = start
    pos = _skip_back(text, pos)
    negative = pos >= 0 and text[pos] == "-"
    if negative:
        pos = _skip_back(text, pos - 1)
    if pos >= 0:
        return None
    total = whole + secs
    return -total if negative else total


def _skip_back(text: str, pos: int) -> int:
    while pos >= 0 and text[pos] in _SPACE:
        pos -= 1
    return pos


def _digits_back(text: str, pos: int) -> int:
    while pos >= 0 and text[pos] in _DIGITS:
        pos -= 1
    return pos


def _field(digits: str) -> int:
    """A relative time's field as the library reads it into a C int: out of range (or none) is 0."""
    value = int(digits) if digits else 0
    return value if value <= _INT_MAX else 0


def _wrap32(value: int) -> int:
    """C int arithmetic: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


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
    sign = ""
    if secs < 0:  # the sign is the double's; a value past INT_MAX then casts to INT_MIN, as in C
        sign = "-"
        secs = -secs
    total = c_int32(secs)
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


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // b
    q = -q if a < 0 else q
    return q, a - q * b
