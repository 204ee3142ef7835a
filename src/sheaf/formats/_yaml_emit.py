"""A small YAML emitter for the files sheaf writes, in the layout of the Pegasus Python API.

Mappings and sequences that hold only scalars are written in flow style (``{lfn: f.a, type:
input}``, ``[-a, preprocess]``), everything else in block style, as PyYAML's
``default_flow_style=None`` does -- the layout of the Pegasus manual's examples.  It is also about half the
bytes of an all-block dump, which halves the parse time of a 10^6-job workflow.

A key longer than YAML's 1024-character limit for implicit keys is written as an explicit
``? key`` / ``: value`` pair.

Scalars: a string is written plain only when it matches a conservative pattern (letters, digits,
``_ . / @ + -``, starting with a letter, ``_`` or ``/``, optionally after one or two ``-``) and
is not a word YAML 1.1 or 1.2 reads as a boolean, null or (yaml_rs drops underscores) a number;
every other string is double-quoted with JSON escapes, non-ASCII as ``\\uXXXX``/``\\UXXXXXXXX``.
So PyYAML (YAML 1.1, what Pegasus uses) and yaml_rs (YAML 1.2) read back the same strings.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_PLAIN = re.compile(r"(?:--?)?[A-Za-z_/][A-Za-z0-9_./@+-]*\Z")
_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "none", "~"})
_ASTRAL = re.compile(r"\\ud([89ab][0-9a-f]{2})\\ud([c-f][0-9a-f]{2})")


def _astral(match: re.Match[str]) -> str:
    high = int("d" + match.group(1), 16)
    low = int("d" + match.group(2), 16)
    return f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08x}"


def scalar(value: Any, _plain: Any = _PLAIN.match, _reserved: frozenset[str] = _RESERVED) -> str:
    if value.__class__ is str:
        if _plain(value) and value.lower() not in _reserved and not (value[0] in "_-" and _numeric(value)):
            return value
        quoted = json.dumps(value)
        return _ASTRAL.sub(_astral, quoted) if "\\ud" in quoted else quoted
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    return scalar(str(value))


_LONG_KEY = 1000
_SHORT_KEY = 150  # a key this long stays under _LONG_KEY even with every character escaped


def _numeric(value: str) -> bool:
    """yaml_rs reads ``_0`` and ``-_1`` as numbers (it drops underscores): such strings are quoted."""
    try:
        float(value.replace("_", ""))
    except ValueError:
        return False
    return True


def _is_flat(value: Any) -> bool:
    if value.__class__ is dict:
        return not any(v.__class__ in (dict, list) or len(str(k)) > _SHORT_KEY for k, v in value.items())
    return not any(v.__class__ in (dict, list) for v in value)


def flow(value: Any) -> str:
    """A flat mapping or sequence in flow style."""
    if value.__class__ is dict:
        return "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(map(scalar, value)) + "]"


def dumps(data: dict[str, Any]) -> str:
    out: list[str] = []
    _mapping(data, "", out)
    out.append("")
    return "\n".join(out)


def dumps_sequence(items: list[Any]) -> str:
    """A block sequence at indentation 0 (the items of a top-level key written just before)."""
    out: list[str] = []
    _sequence(items, "", out)
    out.append("")
    return "\n".join(out)


def _mapping(data: dict[str, Any], indent: str, out: list[str]) -> None:
    append = out.append
    for key, value in data.items():
        head = f"{indent}{scalar(key)}:"
        if len(head) > _LONG_KEY:  # YAML limits implicit keys to 1024 characters: an explicit key
            append(f"{indent}? {scalar(key)}")
            head = f"{indent}:"
        cls = value.__class__
        if cls is dict or cls is list:
            if not value or _is_flat(value):
                append(f"{head} {flow(value)}")
            elif cls is dict:
                append(head)
                _mapping(value, indent + "  ", out)
            else:
                append(head)
                _sequence(value, indent, out)
        else:
            append(f"{head} {scalar(value)}")


def _sequence(items: list[Any], indent: str, out: list[str]) -> None:
    append = out.append
    inner = indent + "  "
    for item in items:
        cls = item.__class__
        if cls is dict and item and not _is_flat(item):
            start = len(out)
            _mapping(item, inner, out)
            out[start] = f"{indent}- {out[start][len(inner):]}"
        elif cls is list and item and not _is_flat(item):
            append(f"{indent}-")
            _sequence(item, inner, out)
        elif cls is dict or cls is list:
            append(f"{indent}- {flow(item)}")
        else:
            append(f"{indent}- {scalar(item)}")
