"""The transfer list ``sheaf-transfer`` and ``sheaf-lite`` read: a JSON array of transfers.

Modelled on what Pegasus's ``pegasus-transfer`` reads, and the interface the data-staging planner
pass writes::

    [{"type": "transfer", "id": 1, "linkage": "input", "lfn": "f.a", "executable": false,
      "src_urls": [{"site_label": "local", "url": "http://host/f.a", "priority": 10}, ...],
      "dest_urls": [{"site_label": "condorpool", "url": "file:///scratch/f.a"}],
      "checksum": {"sha256": "<64 hex digits>"}, "integrity": false}]

Rules (each broken one is a ``ValidationError`` naming the entry, the key and the value; a file that is
not JSON is a ``FormatError`` with its line and column):

- ``type`` is ``transfer`` (the only kind the interface has); ``linkage`` is ``input``, ``output`` or
  ``inter``; ``lfn`` a non-empty string; ``executable`` a boolean (absent: false); ``id`` any JSON
  scalar (absent: the entry's 1-based position); ``integrity`` a boolean (absent: true): false keeps
  the file out of the integrity records (a checkpoint file, which its job changes after stage-in).
- ``src_urls`` is a non-empty list, tried in the order given (the planner orders it by the replica
  selector's ranking; ``priority`` is kept for the record and never reorders); ``dest_urls`` has
  exactly one entry.  Each URL's scheme must be one sheaf knows -- supported or named as unsupported,
  so that the message can say how to make it available (``_transfer_schemes``).
- ``checksum`` is optional; when present it holds ``sha256``, 64 hex digits (stored lower-case).
- Keys the interface does not name are ignored, as ``pegasus-transfer`` ignores them (a newer planner
  may add some).
- No NUL in any string or decoded file URL and no lone surrogate (no file name can hold them), and
  no two transfers share a destination (two writers of one file race; the planner never asks for it).

Whether a transfer is *usable* (a source sheaf can read, a destination inside ``--root``) is the
runner's check, made for the whole list before anything moves.
"""

from __future__ import annotations

__all__ = ["Endpoint", "Transfer", "load_transfer_list", "parse_transfer_list", "read_utf8", "transfers_from"]

import json
import re
from dataclasses import dataclass
from typing import Any, NoReturn

from sheaf.errors import FormatError, ValidationError
from sheaf.jobtools._lists import Span, read_bytes
from sheaf.jobtools._transfer_schemes import check_known, local_path

LINKAGES = ("input", "output", "inter")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One URL of a transfer and the site it belongs to."""

    url: str
    site_label: str = "local"
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class Transfer:
    """One file to move: the first source that works is copied to the destination."""

    lfn: str
    sources: tuple[Endpoint, ...]
    dest: Endpoint
    id: int | str = 0
    linkage: str = "input"
    executable: bool = False
    sha256: str | None = None
    integrity: bool = True  # False: neither recorded nor checked against a record


def load_transfer_list(path: str, span: Span | None = None) -> list[Transfer]:
    """The transfers of the JSON list at ``path`` (or in its bytes ``span``), every entry checked
    (module docstring)."""
    return parse_transfer_list(read_utf8(path, "transfer list", span), path)


def read_utf8(path: str, what: str, span: Span | None = None) -> str:
    """The text of ``path`` (or of its bytes ``span``); unreadable is a ``UsageError``, not UTF-8 a
    ``FormatError`` with its line."""
    data = read_bytes(path, span, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(f"the {what} is not UTF-8 (byte {exc.start})", rule=f"{what}s are UTF-8 text",
                          value=data[exc.start:exc.start + 1], path=path, line=line) from None


def parse_transfer_list(text: str, path: str | None = None) -> list[Transfer]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"not JSON ({exc.msg})", rule="a transfer list is a JSON array", path=path,
                          line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise FormatError("nested too deeply", rule="a transfer list is a JSON array of objects",
                          path=path) from None
    return transfers_from(data, path)


def transfers_from(data: Any, path: str | None = None, what: str = "the top level") -> list[Transfer]:
    """The transfers of a decoded JSON value (a transfer list read, or embedded in a larger file)."""
    if not isinstance(data, list):
        raise ValidationError(f"{what} is not an array", rule="a transfer list is a JSON array",
                              value=type(data).__name__, path=path)
    transfers = [_transfer(entry, number, path) for number, entry in enumerate(data, start=1)]
    _no_shared_destination(transfers, path)
    return transfers


class _Entry:
    """Reads the keys of one entry, each error naming the entry and the key."""

    def __init__(self, raw: Any, number: int, path: str | None) -> None:
        self.number, self.path = number, path
        if not isinstance(raw, dict):
            self.fail("", "is not an object", "each transfer is a JSON object", raw)
        self.raw: dict[str, Any] = raw

    def fail(self, key: str, what: str, rule: str, value: Any) -> NoReturn:
        where = f"transfer {self.number}" + (f", key {key!r}" if key else "")
        raise ValidationError(f"{where} {what}", rule=rule, value=value, path=self.path)

    def string(self, key: str, value: Any, default: str | None = None) -> str:
        if value is None and default is not None:
            return default
        if not isinstance(value, str) or not value:
            self.fail(key, "is not a non-empty string", f"{key} is a non-empty string", value)
        if "\0" in value:
            self.fail(key, "holds a NUL byte", "names hold no NUL", value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # JSON's "\ud800": no file name or URL can hold it
            self.fail(key, "holds a lone surrogate", "strings are valid Unicode", value)
        return str(value)

    def endpoints(self, key: str) -> tuple[Endpoint, ...]:
        value = self.raw.get(key)
        if not isinstance(value, list) or not value:
            self.fail(key, "is not a non-empty list", f"{key} is a non-empty list of URLs", value)
        return tuple(self._endpoint(key, item) for item in value)

    def _endpoint(self, key: str, item: Any) -> Endpoint:
        if not isinstance(item, dict):
            self.fail(key, "holds a URL that is not an object", '{"url": ..., "site_label": ...}', item)
        url = self.string(f"{key}.url", item.get("url"))
        site = self.string(f"{key}.site_label", item.get("site_label"), default="local")
        priority = item.get("priority")
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
            self.fail(f"{key}.priority", "is not an integer", "priority is an integer", priority)
        problem = check_known(url)
        if problem:
            self.fail(f"{key}.url", problem, "URLs use a scheme sheaf-transfer knows", url)
        if "\0" in (local_path(url, "/") or ""):
            self.fail(f"{key}.url", "names a path with a NUL byte (%00)", "file names hold no NUL", url)
        return Endpoint(url=url, site_label=site, priority=priority)


def _transfer(raw: Any, number: int, path: str | None) -> Transfer:
    entry = _Entry(raw, number, path)
    kind = entry.raw.get("type", "transfer")
    if kind != "transfer":
        entry.fail("type", "is not 'transfer'", "the interface has transfers only", kind)
    linkage = entry.raw.get("linkage", "input")
    if linkage not in LINKAGES:
        entry.fail("linkage", "is not input, output or inter", "linkage is input|output|inter", linkage)
    executable = entry.raw.get("executable", False)
    if not isinstance(executable, bool):
        entry.fail("executable", "is not a boolean", "executable is true or false", executable)
    integrity = entry.raw.get("integrity", True)
    if not isinstance(integrity, bool):
        entry.fail("integrity", "is not a boolean", "integrity is true or false", integrity)
    ident = entry.raw.get("id", number)
    if not isinstance(ident, (int, str)) or isinstance(ident, bool):
        entry.fail("id", "is not a number or a string", "id is a JSON number or string", ident)
    dests = entry.endpoints("dest_urls")
    if len(dests) != 1:
        entry.fail("dest_urls", "does not have exactly one entry", "one destination per transfer",
                   [d.url for d in dests])
    return Transfer(lfn=entry.string("lfn", entry.raw.get("lfn")), sources=entry.endpoints("src_urls"),
                    dest=dests[0], id=ident, linkage=linkage, executable=executable,
                    sha256=_checksum(entry), integrity=integrity)


def _checksum(entry: _Entry) -> str | None:
    value = entry.raw.get("checksum")
    if value is None:
        return None
    if not isinstance(value, dict):
        entry.fail("checksum", "is not an object", 'checksum is {"sha256": ...}', value)
    digest = value.get("sha256")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        entry.fail("checksum.sha256", "is not 64 hex digits", "a sha256 is 64 hex digits", digest)
    return str(digest).lower()


def _no_shared_destination(transfers: list[Transfer], path: str | None) -> None:
    seen: dict[str, int] = {}
    for number, item in enumerate(transfers, start=1):
        first = seen.setdefault(item.dest.url, number)
        if first != number:
            raise ValidationError(f"transfers {first} and {number} write one destination",
                                  rule="each destination is written once", value=item.dest.url, path=path)
