"""Time built-ins: ``time``, ``currentTime``, ``timeZoneOffset``, ``dayTime``, ``absTime``, ``relTime``,
the ``get*`` field accessors, ``splitTime`` and ``formatTime`` (fields and formatting in the local
zone of the machine, as HTCondor does; ``splitTime`` of an absolute time uses its own offset)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any, Final

from ._builtins import Library
from ._coerce import c_int
from ._timetext import gmtime, local_offset
from ._values import ERROR, UNDEFINED, AbsTime, RelTime, c_int32

Value = Any
Fn = Callable[[Any, Any], Value]
LIBRARY = Library()
builtin, strict = LIBRARY.builtin, LIBRARY.strict


@strict("time")
def time_(args: list[Value]) -> Value:
    return ERROR if args else int(time.time())


def _now() -> AbsTime:
    now = int(time.time())
    return AbsTime(now, local_offset(now))


@strict("currentTime")
def current_time(args: list[Value]) -> Value:
    return ERROR if args else _now()


@strict("timeZoneOffset")
def time_zone_offset(args: list[Value]) -> Value:
    return ERROR if args else RelTime(float(local_offset(time.time())))


@strict("dayTime")
def day_time(args: list[Value]) -> Value:
    if args:
        return ERROR
    now = time.localtime()
    return RelTime(float(now.tm_hour * 3600 + now.tm_min * 60 + now.tm_sec))


def _offset_arg(value: Value) -> Value:
    kind = type(value)
    if kind is int:
        return value
    if kind is float:
        return c_int(value)
    if kind is RelTime:
        return c_int(value.secs)
    return ERROR


def _low32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@strict("absTime")
def abs_time(args: list[Value]) -> Value:
    if not args:
        return _now()
    if len(args) > 2:
        return ERROR
    offset = _offset_arg(args[1]) if len(args) == 2 else None
    if offset is ERROR:
        return ERROR
    value = args[0]
    kind = type(value)
    if kind is int or kind is float or kind is RelTime:
        secs = _low32(value) if kind is int else c_int32(value.secs if kind is RelTime else value)
        return AbsTime(secs, local_offset(secs) if offset is None else offset)
    if kind is AbsTime or kind is str:
        return value
    return UNDEFINED if value is UNDEFINED else ERROR


@strict("relTime")
def rel_time(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    value = args[0]
    kind = type(value)
    if kind is int:
        return RelTime(float(_low32(value)))  # HTCondor reads the integer into a C int
    if kind is float:
        return RelTime(value)
    if kind is AbsTime:
        return RelTime(float(value.secs))
    if kind is RelTime:
        return value
    if kind is str:
        return RelTime(0.0)  # the official library reads no number out of a computed string
    return UNDEFINED if value is UNDEFINED else ERROR


_ABS_FIELDS: Final = {
    "getYear": lambda t: t.tm_year, "getMonth": lambda t: t.tm_mon, "getDayOfYear": lambda t: t.tm_yday - 1,
    "getDayOfMonth": lambda t: t.tm_mday, "getDayOfWeek": lambda t: (t.tm_wday + 1) % 7,
    "getHours": lambda t: t.tm_hour, "getMinutes": lambda t: t.tm_min, "getSeconds": lambda t: t.tm_sec,
}
_REL_FIELDS: Final = {
    "getDays": lambda s: s // 86400, "getHours": lambda s: (s % 86400) // 3600,
    "getMinutes": lambda s: (s % 3600) // 60, "getSeconds": lambda s: s % 60,
}


def _localtime(secs: float) -> time.struct_time:
    try:
        return time.localtime(int(secs))
    except (OverflowError, OSError, ValueError):
        return gmtime(secs)


def _c_rem(a: int, b: int) -> int:
    r = abs(a) % b
    return -r if a < 0 else r


def _c_quot(a: int, b: int) -> int:
    q = abs(a) // b
    return -q if a < 0 else q


def _field(name: str) -> Any:
    def field(args: list[Value]) -> Value:
        if len(args) != 1:
            return ERROR
        value = args[0]
        if type(value) is AbsTime:
            get = _ABS_FIELDS.get(name)
            return ERROR if get is None else get(_localtime(value.secs))
        if type(value) is RelTime:
            secs = c_int(value.secs)
            if name == "getDays":
                return _c_quot(secs, 86400)
            if name == "getHours":
                return _c_quot(_c_rem(secs, 86400), 3600)
            if name == "getMinutes":
                return _c_quot(_c_rem(secs, 3600), 60)
            if name == "getSeconds":
                return _c_rem(secs, 60)
        return ERROR
    return field


for _name in ("getYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDayOfWeek", "getDays", "getHours",
              "getMinutes", "getSeconds"):
    strict(_name)(_field(_name))


def _split(value: Value) -> dict[str, Value] | None:
    """The attributes of ``splitTime``'s ad (None when the value has no time in it)."""
    kind = type(value)
    if kind is int or kind is float:
        # doSplitTime reads a real into a C int: out of 32-bit range it is INT_MIN (1901)
        secs = value if kind is int else c_int32(value)
        value, kind = AbsTime(secs, local_offset(secs)), AbsTime
    if kind is AbsTime:
        wall = gmtime(int(value.secs) + value.offset)
        return {"Type": "AbsoluteTime", "Year": wall.tm_year, "Month": wall.tm_mon,
                "Day": wall.tm_mday, "Hours": wall.tm_hour, "Minutes": wall.tm_min,
                "Seconds": wall.tm_sec, "Offset": value.offset}
    if kind is RelTime:
        return _split_rel(value.secs)
    return None


def _split_rel(rsecs: float) -> dict[str, Value]:
    negative = rsecs < 0
    rsecs = abs(rsecs)
    whole = int(rsecs)
    days, hours, minutes = whole // 86400, (whole % 86400) // 3600, (whole % 3600) // 60
    secs = float(whole % 60) + (rsecs - float(int(rsecs)))
    if negative:
        if days > 0:
            days = -days
        elif hours > 0:
            hours = -hours
        elif minutes > 0:
            minutes = -minutes
        else:
            secs = -secs
    return {"Type": "RelativeTime", "Days": days, "Hours": hours, "Minutes": minutes,
            "Seconds": secs}


@builtin("splitTime")
def split_time(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
    if len(args) != 1:
        return ERROR
    value = args[0](env, scope)
    if value is UNDEFINED:
        return UNDEFINED
    split = _split(value)
    return ERROR if split is None else env.ad_type(split)  # a new ad of the evaluation's ad class


def _strftime(fields: tuple[int, int, int, int, int, int], fmt: str) -> str:
    year, month, day, hour, minute, sec = fields
    try:
        wday = datetime.date(year, month, day).weekday()
        yday = datetime.date(year, month, day).timetuple().tm_yday
    except ValueError:
        wday, yday = 0, 1
    try:
        return time.strftime(fmt, (year, month, day, hour, minute, sec, wday, yday, 0))[:1023]
    except (ValueError, OverflowError):
        return ""


def _int_field(split: Any, name: str) -> int:
    value = split.get(name, 0) if isinstance(split, dict) else split.eval(name)
    return value if type(value) is int else int(value) if type(value) in (float, bool) else 0


@strict("formatTime")
def format_time(args: list[Value]) -> Value:
    if not args:
        return time.strftime("%c", time.localtime())
    if len(args) > 2 or type(args[0]) is RelTime:
        return ERROR
    value = args[0]
    split = value if hasattr(value, "_ex") else _split(value)
    if split is None:
        return ERROR
    fields = (_int_field(split, "Year"), _int_field(split, "Month"), _int_field(split, "Day"),
              _int_field(split, "Hours"), _int_field(split, "Minutes"), _int_field(split, "Seconds"))
    if len(args) == 1:
        return _strftime(fields, "%c")
    return _strftime(fields, args[1]) if type(args[1]) is str else ERROR


