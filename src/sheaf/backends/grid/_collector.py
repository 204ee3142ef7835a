"""The collector: a durable store of resource ads, as ``condor_advertise UPDATE_STARTD_AD`` feeds one.

sheaf has no daemon, so the collector is a file every process opens: SQLite in WAL mode,
``collector.sqlite`` in the state directory (env ``SHEAF_STATE_DIR``, else ``~/.local/state/sheaf``),
or the file the property ``sheaf.collector.file`` names.  One table, one row per ad ``Name``.

Policy (the collector's, for ``UPDATE_STARTD_AD``):

* An ad must have a string ``Name``; it identifies the ad (the site ads of the USCMS report each
  carry a unique one).  ``MyType`` defaults to ``"Machine"``.
* An update replaces the stored ad of that name whole -- unless it carries an
  ``UpdateSequenceNumber`` that is not higher than the stored one: then it is *ignored*, and the
  outcome says so (the report: "it must have a higher sequence number than the previous one or it
  will be ignored").  An ad without a sequence number always replaces (and keeps no number).
* The check and the write are one ``BEGIN IMMEDIATE`` transaction, so two advertisers racing with
  sequence numbers n and n+1 always leave n+1 stored.
* Ads are stored as new-syntax text and handed back as :class:`ClassAd` objects, in name order.

Ad files are read as ``condor_advertise`` reads them: old syntax (``Name = expr`` per line), several
ads separated by blank lines; a file starting with ``[`` is new syntax (one ad, or several, each
starting with ``[`` at the start of a line).  Bad text raises ``FormatError`` naming the file and line.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from sheaf.backends._limits import _open_store, state_dir
from sheaf.classad import ClassAd, ClassAdSyntaxError, Expr, parse
from sheaf.errors import FormatError

__all__ = ["COLLECTOR_PROPERTY", "Collector", "Update", "collector_path", "plan_collector", "read_ads"]

COLLECTOR_PROPERTY = "sheaf.collector.file"
_AD_START = re.compile(r"^\[", re.MULTILINE)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS ads (
    name     TEXT PRIMARY KEY,
    mytype   TEXT NOT NULL,
    sequence INTEGER,
    text     TEXT NOT NULL,
    updated  REAL NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Update:
    """What became of one advertised ad: ``accepted``, or ignored with ``reason``."""

    name: str
    accepted: bool
    reason: str | None = None


def collector_path(properties: Mapping[str, str] | None = None) -> Path:
    """The collector's file: the property ``sheaf.collector.file``, else the state directory's."""
    named = (properties or {}).get(COLLECTOR_PROPERTY)
    return Path(named).expanduser() if named else state_dir() / "collector.sqlite"


class Collector:
    """The durable ad store (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else collector_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = _open_store(self.path, schema=_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advertise(self, ads: Iterable[ClassAd]) -> list[Update]:
        """Apply ``UPDATE_STARTD_AD`` for each ad, in order; one :class:`Update` per ad."""
        return [self._update(ad) for ad in ads]

    def _update(self, ad: ClassAd) -> Update:
        name = ad.eval("Name") if "Name" in ad else None
        if not isinstance(name, str):
            return Update(str(name) if name is not None else "?", False, "the ad has no string Name")
        sequence = ad.eval("UpdateSequenceNumber") if "UpdateSequenceNumber" in ad else None
        number = sequence if type(sequence) is int else None
        mytype = ad.eval("MyType") if "MyType" in ad else "Machine"
        stored = ad.copy()
        if "MyType" not in stored:
            stored["MyType"] = "Machine"
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute("SELECT sequence FROM ads WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0] is not None and number is not None and number <= row[0]:
                self._db.execute("COMMIT")
                return Update(name, False, f"UpdateSequenceNumber {number} is not higher than the "
                                           f"stored {row[0]}: update ignored")
            self._db.execute("INSERT OR REPLACE INTO ads VALUES (?, ?, ?, ?, ?)",
                             (name, mytype if isinstance(mytype, str) else "Machine", number,
                              stored.unparse(), time.time()))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return Update(name, True)

    def ads(self, constraint: str | Expr | None = None) -> list[ClassAd]:
        """The stored ads in name order, those for which ``constraint`` is true when one is given."""
        rows = self._db.execute("SELECT text FROM ads ORDER BY name").fetchall()
        found = [ClassAd.parse(text) for (text,) in rows]
        if constraint is None:
            return found
        expr = parse(constraint)
        return [ad for ad in found if expr.evaluate_in(ad, None) is True]

    def sequence(self, name: str) -> int | None:
        """The stored ``UpdateSequenceNumber`` of ``name`` (None: no ad, or none carried)."""
        row = self._db.execute("SELECT sequence FROM ads WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def invalidate(self, name: str) -> bool:
        """Forget the ad ``name`` (``INVALIDATE_STARTD_ADS``); True when there was one."""
        with self._db:
            cursor = self._db.execute("DELETE FROM ads WHERE name = ?", (name,))
        return cursor.rowcount > 0


def plan_collector(directory: str) -> Collector:
    """The collector a grid plan names (``sheaf.collector.file`` at plan time), else the default."""
    record = json.loads((Path(directory) / "grid" / "groups.json").read_text(encoding="utf-8"))
    named = record.get("collector") if isinstance(record, dict) else None
    return Collector(named if isinstance(named, str) else None)


def read_ads(text: str, path: str | None = None) -> list[ClassAd]:
    """The ads of a ``condor_advertise`` file (see the module docstring); ``FormatError`` if bad."""
    if text.lstrip().startswith("["):
        return _new_ads(text, path)
    ads: list[ClassAd] = []
    line = 1
    for block in text.split("\n\n"):
        if block.strip():
            try:
                ads.append(ClassAd.parse_old(block))
            except ClassAdSyntaxError as exc:
                raise _format_error(exc, path, line - 1) from None
        line += block.count("\n") + 2
    return ads


def _new_ads(text: str, path: str | None) -> list[ClassAd]:
    """New-syntax ads, each starting with ``[`` at the start of a line."""
    ads: list[ClassAd] = []
    starts = [match.start() for match in _AD_START.finditer(text)] or [text.index("[")]
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        try:
            ads.append(ClassAd.parse(text[start:end]))
        except ClassAdSyntaxError as exc:
            raise _format_error(exc, path, text.count("\n", 0, start)) from None
    return ads


def _format_error(exc: ClassAdSyntaxError, path: str | None, offset: int) -> FormatError:
    return FormatError(exc.reason, rule="a condor_advertise file holds ClassAds", value=exc.source[:80],
                       path=path, line=exc.line + offset, column=exc.column)

