"""What every reader shares: reading a file, loading YAML, and reporting problems with a location.

A ``TextSource`` is one input file being read: its path, its text and the caller's warning list.
Readers call ``source.fail(...)`` to raise an ``InputError`` and ``source.warn(...)`` to append a
warning; both take the offending value (and optionally the key it follows) and find its line with
``_locate`` -- only then, never while reading valid input.  Warnings are strings
``file:line: message``; the same message is reported once per file (a profile block repeated on
10^6 jobs warns once).

YAML is loaded with ``yaml_rs`` (YAML 1.2, safe, with alias-expansion limits), dates left as text;
its syntax errors already carry line and column and become ``FormatError`` with the source line
(clipped to a window around the column: a 1 MB line is not echoed) and a caret as detail.  A
duplicate mapping key is an error, located at its second occurrence.  Before the library sees a
text, ``_nesting`` refuses block nesting past ``MAX_DEPTH`` levels (the library would overflow its
stack); its own flow-nesting limit is reported under the same rule.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import yaml_rs

from sheaf._text import did_you_mean
from sheaf.errors import FormatError, InputError, ValidationError
from sheaf.formats._locate import Position, locate, locate_duplicate_key, locate_key, locate_xml, position
from sheaf.formats._nesting import MAX_DEPTH, too_deep
from sheaf.model import EMPTY, normalize_profiles

PathLike = str | os.PathLike[str]

_YAML_AT = re.compile(r"line (\d+), column (\d+)")
_DUPLICATE = re.compile(r"duplicate mapping key: '(.*)'")
# possessive: a line of blanks without a "|" fails in one pass instead of trying every split of it
_GUTTER = re.compile(r"^(\s*+\d*+\s*+\| ?)(.*)$")
#: characters of a source line shown on each side of an error's column
_WINDOW = 60
NESTING_RULE = f"YAML nests at most {MAX_DEPTH} levels deep"


#: the UTF-8 byte-order mark
BOM = b"\xef\xbb\xbf"


def read_bytes(path: PathLike) -> bytes:
    """The bytes of ``path``, without a UTF-8 byte-order mark (an editor's, which YAML, JSON and XML
    readers skip); an unreadable file is an ``InputError`` naming it, and so is a device (``/dev/zero``
    would never end; a pipe is read)."""
    try:
        if stat.S_ISCHR(mode := os.stat(path).st_mode) or stat.S_ISBLK(mode):
            raise InputError("not a regular file but a device", rule="input files are regular files or pipes",
                             path=str(path))
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=str(path)) from None
    return data[3:] if data.startswith(BOM) else data


def read_text(path: PathLike) -> str:
    """The text of ``path`` (UTF-8); an unreadable file is an ``InputError`` naming it."""
    return decode_utf8(read_bytes(path), str(path))


def decode_utf8(data: bytes, path: str | None) -> str:
    """``data`` as UTF-8 text; anything else is a ``FormatError`` with the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError("file is not UTF-8 text", rule="input files are UTF-8", path=path,
                          line=line, value=data[exc.start:exc.start + 4]) from None


def refuse_nul(text: str, path: str | None) -> None:
    """A NUL in a line-based text file is a ``FormatError`` at its line (no program, file name or
    environment can take one)."""
    at = text.find("\x00")
    if at >= 0:
        line, column = position(text, at)
        raise FormatError("the text holds a NUL character", rule="names, lfns and arguments hold no NUL",
                          path=path, line=line, column=column)


def to_text(value: Any) -> str:
    """A YAML scalar as the string the user meant (``version: 4.0`` -> ``"4.0"``, ``true`` -> ``"true"``)."""
    if value.__class__ is str:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        return str(value)
    except ValueError:  # an integer longer than Python writes as text (YAML loads one fine)
        raise ValidationError("an integer of more than 4300 digits",
                              rule="integers have at most 4300 digits") from None


@contextlib.contextmanager
def located_in(path: str) -> Iterator[None]:
    """Errors raised without a file (a value refused deep in a conversion) name ``path``."""
    try:
        yield
    except InputError as exc:
        raise exc.located(path) from None


class TextSource:
    """One input file being read (see the module docstring)."""

    __slots__ = ("_said", "_text", "path", "warnings")

    def __init__(self, path: str, text: str | None, warnings: list[str] | None) -> None:
        self.path = path
        self._text: str | None = text
        self.warnings = warnings
        self._said: set[str] = set()

    @property
    def text(self) -> str:
        """The source text; read again from the file if ``release()`` dropped it (error path only)."""
        if self._text is None:
            self._text = read_text(self.path)
        return self._text

    def release(self) -> None:
        """Drop the text once loaded: at 10^6 jobs it is as large as the file, and the model does not
        need it."""
        self._text = None

    @classmethod
    def open(cls, path: PathLike, warnings: list[str] | None) -> TextSource:
        return cls(str(path), read_text(path), warnings)

    def load_yaml(self) -> Any:
        """The YAML document of this source (``FormatError`` on a syntax error or too deep a nesting)."""
        deep = too_deep(self.text)
        if deep is not None:
            line, column = position(self.text, deep)
            raise FormatError(f"YAML nested more than {MAX_DEPTH} levels deep", rule=NESTING_RULE,
                              path=self.path, line=line, column=column)
        try:
            return yaml_rs.loads(self.text, parse_datetime=False)
        except yaml_rs.YAMLDecodeError as exc:
            raise self._yaml_error(str(exc)) from None
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise FormatError(f"YAML cannot be loaded: {exc}", rule="YAML 1.2", path=self.path) from None

    def _yaml_error(self, message: str) -> FormatError:
        duplicate = _DUPLICATE.search(message)
        if duplicate:
            key = duplicate.group(1)
            where = locate_duplicate_key(self.text, key)
            return FormatError("duplicate mapping key", rule="keys of a YAML mapping are unique",
                               value=key, path=self.path, line=where and where[0],
                               column=where and where[1])
        at = _YAML_AT.search(message)
        lines = message.splitlines()
        what = lines[-1].strip() if lines else message
        if at is None:
            return FormatError(f"YAML syntax error: {what}", rule="YAML 1.2", path=self.path)
        line, column = int(at.group(1)), int(at.group(2))
        detail = clip(lines[1:-1], column)
        if what == "recursion limit exceeded":  # the library's own bound on flow nesting
            return FormatError(f"YAML nested more than {MAX_DEPTH} levels deep", rule=NESTING_RULE,
                               path=self.path, line=line, column=column, detail=detail)
        return FormatError(f"YAML syntax error: {what}{self._indent_hint(line)}", rule="YAML 1.2",
                           path=self.path, line=line, column=column, detail=detail)

    def _indent_hint(self, line: int) -> str:
        """Name a misindented line: one indented deeper than the plain ``key: value`` line above it."""
        lines = self.text.splitlines()
        if not 1 < line <= len(lines):
            return ""
        here = lines[line - 1]
        above = next((t for t in reversed(lines[:line - 1])
                      if t.strip() and not t.lstrip().startswith("#")), "")
        indent_here = len(here) - len(here.lstrip(" "))
        indent_above = len(above) - len(above.lstrip(" "))
        if indent_here > indent_above and not above.rstrip().endswith(":") and ":" in above:
            return (f" (line {line} is indented {indent_here - indent_above} more than the line above it:"
                    " misindented?)")
        return ""

    def where(self, value: Any = None, key: str | None = None, nth: int = 1) -> Position | None:
        if value is None or isinstance(value, (dict, list)):
            return locate_key(self.text, key, nth=nth) if key else None
        return locate(self.text, value, key=key, nth=nth)

    def error(self, cls: type[InputError], message: str, *, rule: str, value: Any = None,
              key: str | None = None, nth: int = 1, show_value: bool = True,
              offending: Any = None) -> InputError:
        """The error located where ``value`` (after ``key``) is; it shows ``offending`` when given (the
        value itself cannot be found in the text: a list, a mapping), else ``value``."""
        pos = self.where(value, key, nth)
        line, column = pos or (None, None)
        if offending is not None:
            return cls(message, rule=rule, value=offending, path=self.path, line=line, column=column)
        if show_value:
            return cls(message, rule=rule, value=value, path=self.path, line=line, column=column)
        return cls(message, rule=rule, path=self.path, line=line, column=column)

    def fail(self, message: str, *, rule: str, value: Any = None, key: str | None = None,
             nth: int = 1, show_value: bool = True, offending: Any = None) -> NoReturn:
        raise self.error(FormatError, message, rule=rule, value=value, key=key, nth=nth,
                         show_value=show_value, offending=offending)

    def warn(self, message: str, *, value: Any = None, key: str | None = None, nth: int = 1) -> None:
        if self.warnings is None or message in self._said:
            return
        self._said.add(message)
        pos = self.where(value, key, nth)
        head = f"{self.path}:{pos[0]}" if pos else self.path
        self.warnings.append(f"{head}: {message}")


def clip(detail: list[str], column: int) -> str | None:
    """The source line and caret line of an error's detail, cut to a window around ``column``."""
    if not detail:
        return None
    if max(map(len, detail)) <= 2 * _WINDOW + 20:
        return "\n".join(detail)
    start, end = max(0, column - 1 - _WINDOW), column - 1 + _WINDOW
    clipped = []
    for text in detail:
        gutter = _GUTTER.match(text)
        head, body = gutter.groups() if gutter else ("", text)
        if not body.strip():
            clipped.append(text)
            continue
        clipped.append(head + ("..." if start else "") + body[start:end] + ("..." if end < len(body) else ""))
    return "\n".join(clipped)


HEADER_KEYS = frozenset({"apiLang", "createdBy", "createdOn"})


def check_header(src: TextSource, data: dict[str, Any]) -> None:
    """Warn about a ``pegasus`` version other than 5.x (sheaf reads Pegasus 5's YAML formats), and
    about ``x-pegasus`` fields found at the top level: a misindented ``x-pegasus:`` block."""
    version = data.get("pegasus")
    if version is not None and not str(version).strip().startswith("5"):
        src.warn(f"'pegasus: {version}' names another format than Pegasus 5's YAML, which sheaf reads; "
                 "reading it as 5.0", value=version, key="pegasus")
    misplaced = [key for key in data if key in HEADER_KEYS]
    if misplaced:
        empty = " and 'x-pegasus' is empty" if "x-pegasus" in data and not data["x-pegasus"] else ""
        src.warn(f"{', '.join(repr(k) for k in misplaced)} at the top level belong under 'x-pegasus'"
                 f"{empty}: the 'x-pegasus' block is misindented", key=misplaced[0])


# --- typed field access for the small, cold parts of a file (catalogs, the workflow header) -------

def mapping(src: TextSource, raw: Any, what: str, keys: frozenset[str], *, required: tuple[str, ...] = (),
            anchor: Any = None, strict: str | None = None) -> dict[str, Any]:
    """``raw`` as a mapping with only ``keys`` (``x-*`` vendor keys allowed); unknown keys warn, or with
    ``strict`` (the rule to name) are refused."""
    if not isinstance(raw, dict):
        src.fail(f"{what} must be a mapping", rule=f"{what} is a YAML mapping",
                 value=shown(raw), key=None)
    for key in raw:
        if not isinstance(key, str):
            src.fail(f"{what} has a key that is not a string", rule="mapping keys are strings", value=key)
        if key not in keys and not key.startswith("x-"):
            unknown(src, key, what, keys, strict)
    for key in required:
        if raw.get(key) is None:
            src.fail(f"{what} is missing the required key '{key}'", rule=f"{what} has '{key}'",
                     value=anchor, show_value=anchor is not None)
    return raw


def unknown(src: TextSource, key: str, what: str, keys: frozenset[str], strict: str | None,
            value: Any = None) -> None:
    """An unknown ``key`` of ``what``: warned about and ignored, or with ``strict`` (the rule) refused;
    the nearest known key suggested; a key that is not a string (``1:``, ``true:``) is refused."""
    if not isinstance(key, str):
        src.fail(f"{what} has a key that is not a string", rule="mapping keys are strings", value=key)
    close = did_you_mean(key, keys)
    if strict is not None:
        src.fail(f"unknown key '{key}' in {what}{close}", rule=strict, value=key if value is None else value)
    src.warn(f"unknown key '{key}' in {what} (ignored){close}", value=key if value is None else value)




def shown(raw: Any) -> Any:
    """A value as an error shows it: a mapping or list by its type's name."""
    return raw if not isinstance(raw, (dict, list)) else type(raw).__name__


def text(src: TextSource, raw: dict[str, Any], key: str, what: str, *, required: bool = False) -> str | None:
    """A scalar field as text; a mapping or list where a scalar belongs is an error."""
    value = raw.get(key)
    if value is None:
        if required:
            src.fail(f"{what} is missing the required key '{key}'", rule=f"{what} has '{key}'",
                     show_value=False)
        return None
    if isinstance(value, (dict, list)):
        src.fail(f"'{key}' of {what} must be a single value, not a {type(value).__name__}",
                 rule=f"'{key}' is a scalar", value=type(value).__name__, key=key)
    return to_text(value)


def flag(src: TextSource, raw: dict[str, Any], key: str, what: str, default: bool = False) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise src.error(FormatError, f"'{key}' of {what} must be true or false", rule=f"'{key}' is a boolean",
                    value=value, key=key)


def integer(src: TextSource, raw: dict[str, Any], key: str, what: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise src.error(FormatError, f"'{key}' of {what} must be an integer", rule=f"'{key}' is an integer",
                    value=value, key=key)


def seq(src: TextSource, raw: dict[str, Any], key: str, what: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        src.fail(f"'{key}' of {what} must be a list", rule=f"'{key}' is a YAML sequence",
                 value=shown(value), key=key if isinstance(value, (dict, list)) else None)
    return value


def texts(src: TextSource, raw: dict[str, Any], key: str, what: str) -> tuple[str, ...]:
    items = seq(src, raw, key, what)
    for item in items:
        if item is None or isinstance(item, (dict, list)):
            src.fail(f"'{key}' of {what} must list single values", rule=f"'{key}' lists scalars",
                     value=shown(item), key=key)
    return tuple(to_text(item) for item in items)


def string_map(src: TextSource, raw: Any, what: str) -> Mapping[str, str]:
    """A ``metadata``/``checksum`` mapping of text to text (the shared ``EMPTY`` when empty)."""
    if raw is None or raw == {}:
        return EMPTY
    if not isinstance(raw, dict):
        src.fail(f"{what} must be a mapping", rule=f"{what} is a YAML mapping", value=shown(raw))
    result: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, (dict, list)):
            src.fail(f"{what} values must be single values", rule=f"{what} maps keys to scalars",
                     value=key, key=to_text(key))
        result[to_text(key)] = "" if value is None else to_text(value)
    return result


def hooks(src: TextSource, raw: Any, what: str) -> Mapping[str, Any]:
    """Hooks (``{shell: [{_on: end, cmd: ...}]}``), kept as written."""
    if raw is None or raw == {}:
        return EMPTY
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        src.fail(f"hooks of {what} must map a hook type to a list of hooks",
                 rule="hooks are {type: [hook, ...]}", value=shown(raw), key="hooks")
    return raw


class ProfileReader:
    """``normalize_profiles`` with locations for its warnings and a cache for repeated blocks.

    At 10^6 jobs most jobs repeat one of a few profile blocks: a block's content (namespace, then
    its items) is the cache key, and equal blocks share one normalized dict (the model is read-only).
    """

    __slots__ = ("_cache", "src")

    def __init__(self, src: TextSource) -> None:
        self.src = src
        self._cache: dict[Any, Mapping[str, Mapping[str, str]]] = {}

    def __call__(self, raw: Any, what: str = "profiles") -> Mapping[str, Mapping[str, str]]:
        if raw is None:
            return EMPTY
        try:
            # the value classes are part of the key: 1, 1.0 and true are equal but read differently
            key = tuple([(ns, tuple(entries.items()), tuple(map(type, entries.values())))
                         for ns, entries in raw.items()])
            found = self._cache.get(key)
        except (AttributeError, TypeError):  # not a mapping, or unhashable values: no caching
            key, found = None, None
        if found is not None:
            return found
        result = self._normalize(raw, what)
        if key is not None:
            self._cache[key] = result
        return result

    def _normalize(self, raw: Any, what: str) -> Mapping[str, Mapping[str, str]]:
        src = self.src
        if not isinstance(raw, dict):
            src.fail(f"{what} must map a namespace to its keys",
                     rule="profiles are {namespace: {key: value}}", value=shown(raw), key="profiles")
        for namespace, entries in raw.items():
            if isinstance(entries, dict):
                for key, value in entries.items():
                    if isinstance(value, (dict, list)):
                        src.fail(f"profile {namespace}.{key} must be a single value",
                                 rule="profile values are scalars", value=to_text(key), key=to_text(key))
        try:
            profiles, warnings = normalize_profiles(raw)
        except ValidationError as exc:
            # an unknown namespace is the value; a namespace not mapping to keys is shown by its name
            named = exc.value if isinstance(exc.value, str) and exc.value in raw else None
            flat = next((ns for ns, e in raw.items() if not isinstance(e, dict)), "profiles")
            raise src.error(ValidationError, exc.message, rule=exc.rule or "profiles",
                            value=named or to_text(flat), show_value=True) from None
        for warning in warnings:
            quoted = _QUOTED.search(warning)
            src.warn(warning, value=quoted.group(1) if quoted else None)
        return profiles or EMPTY


_QUOTED = re.compile(r"'([^']*)'")

_E = TypeVar("_E", bound=InputError)


def locate_error(exc: _E, paths: Iterable[str | None]) -> _E:
    """Fill in the file and line where ``exc.anchor``, else ``exc.value``, appears first (best effort,
    never raises)."""
    target = exc.anchor if exc.anchor is not None else exc.value if exc.has_value else None
    if exc.path is not None or target is None:
        return exc
    for path in paths:
        if not path:
            continue
        try:
            text = read_text(path)
        except InputError:
            continue
        if text.lstrip()[:1] == "<":  # XML (a DAX, a site catalog): an attribute's value or an element's text
            pos = locate_xml(text, target, "id") or locate_xml(text, target)
        else:
            pos = locate(text, target, key="id") or locate(text, target)
        if pos is not None:
            exc.located(path, pos[0], pos[1])
            return exc
    first = next((p for p in paths if p), None)
    exc.located(first)
    return exc
