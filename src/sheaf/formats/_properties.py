"""Java properties files (``pegasus.properties``), read and written.

The grammar is ``java.util.Properties.load``'s:

- a *natural line* ends at ``\\n``, ``\\r`` or ``\\r\\n``; a *logical line* joins natural lines whose
  ending backslash is not itself escaped (an odd number of trailing backslashes); the leading
  whitespace of each continuation line is dropped;
- a line whose first non-blank character is ``#`` or ``!`` is a comment; blank lines are skipped;
- the key runs to the first unescaped ``=``, ``:`` or whitespace; then blanks, at most one ``=`` or
  ``:``, and blanks again are skipped; the rest of the logical line is the value;
- escapes in keys and values: ``\\t \\n \\r \\f``, ``\\uXXXX`` (a malformed one is an error with its
  line), and ``\\x`` for any other ``x`` is ``x`` (so ``\\ `` is a space, ``\\=`` an equals sign).

Files are read as UTF-8 (Java 9+ ``PropertyResourceBundle``), falling back to ISO-8859-1, which
``Properties.load(InputStream)`` uses.  The writer escapes what needs it and writes non-ASCII as
``\\uXXXX``, so its output reads back the same under both encodings; a later key wins, as in Java.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from sheaf.errors import FormatError
from sheaf.formats._common import PathLike, read_bytes

_SIMPLE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LINES = re.compile(r"\r\n|\r|\n")


def read_properties(path: PathLike, lines: dict[str, int] | None = None) -> dict[str, str]:
    """The key -> value mapping of a Java properties file (module docstring); ``lines``, when given,
    gets each key's line number (its last setting's first line)."""
    data = read_bytes(path)  # a device refused, an unreadable file named
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_properties(text, str(path), lines)


#: a replica catalog's line, which no properties file holds: Pegasus's text format (``lfn pfn site="x"``,
#: attributes ``name="value"`` after the pfn) or a YAML catalog's top-level ``replicas:`` key
_REPLICA_LINE = re.compile(r'^(?:replicas[ \t]*:|[ \t]*[^\s#!]\S*[ \t]+\S+'
                           r'(?:[ \t]+[\w.]+[ \t]*=[ \t]*(?:"[^"]*"|\S+))*[ \t]+(?:site|pool)[ \t]*=)',
                           re.MULTILINE)


def replica_catalog_line(path: PathLike) -> tuple[int, str] | None:
    """(number, text) of the first line of the file at ``path`` that is a replica catalog's rather than
    a property's (``_REPLICA_LINE``); None when there is none."""
    text = read_bytes(path).decode("utf-8", "replace")
    match = _REPLICA_LINE.search(text)
    if match is None:
        return None
    end = text.find("\n", match.start())
    return text.count("\n", 0, match.start()) + 1, text[match.start():end if end >= 0 else None].strip()


def parse_properties(text: str, path: str | None = None,
                     lines: dict[str, int] | None = None) -> dict[str, str]:
    result: dict[str, str] = {}
    for line_no, logical in _logical_lines(text):
        key, value = _split(logical, path, line_no)
        result[key] = value
        if lines is not None:
            lines[key] = line_no
    return result


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first line number, logical line)`` for every non-blank, non-comment logical line."""
    found: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, natural in enumerate(_LINES.split(text), start=1):
        stripped = natural.lstrip(" \t\f")
        if not pending:
            if not stripped or stripped[0] in "#!":
                continue
            start = number
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        found.append((start, "".join(pending)))
        pending = []
    if pending:
        found.append((start, "".join(pending)))
    return found


def _split(line: str, path: str | None, line_no: int) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key_end = min(i, n)
    while i < n and line[i] in " \t\f":
        i += 1
    if i < n and line[i] in "=:":
        i += 1
        while i < n and line[i] in " \t\f":
            i += 1
    return _unescape(line[:key_end], path, line_no), _unescape(line[i:], path, line_no)


def _unescape(raw: str, path: str | None, line_no: int) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= n:
            break  # a lone backslash at the very end (end of file mid-continuation) is dropped
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2:i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise FormatError("malformed \\uXXXX escape", rule="\\u is followed by four hex digits",
                                  value=raw[i:i + 6], path=path, line=line_no)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_SIMPLE.get(nxt, nxt))
        i += 2
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    """Java writes characters beyond the BMP as two ``\\u`` escapes (a surrogate pair)."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def format_properties(mapping: Mapping[str, str]) -> str:
    lines = [f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}" for key, value in mapping.items()]
    return "\n".join(lines) + ("\n" if lines else "")


def write_properties(mapping: Mapping[str, str], path: PathLike) -> None:
    """Write ``mapping`` as ``key=value`` lines (escaped; module docstring), atomically."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(format_properties(mapping), encoding="ascii")
    tmp.replace(target)


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch == " " and (is_key or index == 0):
            out.append("\\ ")
        elif ch in "=:#!" and (is_key or index == 0):
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
