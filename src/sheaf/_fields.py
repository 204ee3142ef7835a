"""``check_fields``: a frozen option record refuses a field whose value is not of its annotated type.

The application layer's option records (``PlanRequest``, ``RunOptions``, ``DagmanOptions``,
``PredictOptions``) are handed values by Python callers, whom no type checker need stop; a value of
the wrong type would otherwise travel deep into the plan or the run and surface there as a raw
``TypeError``.  Each record's ``__post_init__`` calls :func:`check_fields`, which reads the annotations
(``str``, ``int``, ``float``, ``bool``, ``X | None``, ``tuple[X, ...]``, fixed tuples, classes) and
raises one ``UsageError`` naming the field, the type expected and the value; a path object
(``pathlib.Path``) where text is expected is taken as its text.  ``bool`` is not taken
for ``int`` or ``float``; an ``int`` is taken for ``float``; a ``str`` is not a ``tuple[str, ...]``
(it would be read one character at a time).  No text, alone or in a tuple, may hold a NUL: no file
name, option or job attribute can.  :func:`check_path` does the same for a directory argument, and
:func:`long_component` finds a name no file can have on Linux (``ENAMETOOLONG``).  ``INT_MIN`` and
``INT_MAX`` bound a C ``int``: HTCondor keeps DAGMan's numbers (the DAG file's, its knobs', its
command line's) and a hold subcode in one.
"""

from __future__ import annotations

__all__ = ["INT_MAX", "INT_MIN", "NAME_MAX", "check_fields", "check_path", "long_component"]

import dataclasses
import os
import types
import typing
from typing import Any

from sheaf.errors import UsageError

_HINTS: dict[type, tuple[tuple[str, Any], ...]] = {}  # a record class -> its fields' names and types


def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    found = _HINTS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _HINTS[cls] = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
    return found


def _fits(value: object, expected: Any) -> bool:
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return any(_fits(value, arm) for arm in typing.get_args(expected))
    if origin is tuple:
        args = typing.get_args(expected)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(item, args[0]) for item in value)
        return len(value) == len(args) and all(_fits(item, arg)
                                               for item, arg in zip(value, args, strict=True))
    if expected is type(None):
        return value is None
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(origin or expected, type):
        return isinstance(value, origin or expected)
    return True  # a form these records do not use: not checked


def _spelled(expected: Any) -> str:
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(_spelled(arm) for arm in typing.get_args(expected))
    if origin is tuple:
        args = typing.get_args(expected)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of {_spelled(args[0])}"
        return f"a tuple ({', '.join(_spelled(arg) for arg in args)})"
    if expected is type(None):
        return "None"
    return getattr(expected, "__name__", str(expected))


def _paths_as_text(value: object, expected: Any) -> object:
    """``value`` with a path object (``os.PathLike``) where ``expected`` takes ``str`` made that text,
    alone or in a tuple of ``str``: a caller's ``pathlib.Path`` is a file name like any other."""
    takes = typing.get_args(expected) if typing.get_origin(expected) in (typing.Union, types.UnionType) \
        else (expected,)
    if str in takes and isinstance(value, os.PathLike):
        return os.fspath(value)
    for arm in takes:
        args = typing.get_args(arm)
        if typing.get_origin(arm) is tuple and args == (str, Ellipsis) and isinstance(value, tuple):
            return tuple(os.fspath(item) if isinstance(item, os.PathLike) else item for item in value)
    return value


def check_fields(record: object) -> None:
    """Raise ``UsageError`` for the first field of the dataclass ``record`` whose value is not of its
    annotated type (module docstring); a path object where text is expected is made text first."""
    cls = type(record)
    for name, expected in _hints(cls):
        value = getattr(record, name)
        text = _paths_as_text(value, expected)
        if text is not value:
            object.__setattr__(record, name, text)  # the record is frozen: set once, as it is made
            value = text
        if not _fits(value, expected):
            spelled = _spelled(expected)
            hint = f" (write ({value!r},) for one)" if isinstance(value, str) and "tuple" in spelled else ""
            raise UsageError(f"{cls.__name__}.{name}: expected {spelled}, got {value!r}{hint}")
        if "\0" in _text_of(value):
            raise UsageError(f"{cls.__name__}.{name}: holds a NUL character, got {value!r}")


def _text_of(value: object) -> str:
    """The text of a field: a ``str``, or a tuple's ``str`` items joined (the rest: none)."""
    if isinstance(value, str):
        return value
    return "".join(item for item in value if isinstance(item, str)) if isinstance(value, tuple) else ""


def check_path(name: str, value: object) -> None:
    """Raise ``UsageError`` unless ``value`` (the argument ``name``) is a str or an ``os.PathLike``."""
    if not isinstance(value, (str, os.PathLike)):
        raise UsageError(f"{name}: expected a path (str or os.PathLike), got {value!r}")
    if "\0" in os.fsdecode(value):
        raise UsageError(f"{name}: holds a NUL character, got {value!r}")


INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1

#: the longest name of one directory entry on Linux (NAME_MAX), in bytes
NAME_MAX = 255


def long_component(name: str) -> bool:
    """Whether a component of the path ``name`` is longer than ``NAME_MAX`` bytes: no file of that name
    can be read or written (``ENAMETOOLONG``)."""
    return any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX
               for part in name.replace(os.sep, "/").split("/"))
