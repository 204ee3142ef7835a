"""``sheaf-register``: what a register job runs -- add delivered outputs to the output replica catalog.

Usage::

    sheaf-register [--format yaml|file] [--slice OFFSET:LENGTH] CATALOG LIST_FILE

``LIST_FILE`` is a JSON list of ``{"lfn": ..., "pfn": ..., "site": ...[, "metadata": {...}]}`` (the
planner writes it; with ``--slice``, those bytes of it are the list: ``_lists``).  ``CATALOG`` is a
Pegasus 5 YAML replica catalog (``--format yaml``) or the text ``File`` format (``lfn pfn site="x"``
and the metadata as ``key="value"`` attributes, per line); it is created when missing.

Policy: registrations of one workflow run in parallel jobs and several workflows may share a
catalog, so the update holds an exclusive ``flock`` on ``CATALOG.lock`` while it reads the catalog,
adds the entries that are not there yet (same lfn, pfn and site: nothing to do, so a retried job is
harmless) and writes the whole catalog to a temporary name beside it, renamed over it: a reader never
sees half a catalog, and a failure leaves the old one.

Exit status: 0 done; 1 the catalog could not be written; 2 usage or bad input (a catalog that does not
parse, a malformed list).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import tempfile
from collections.abc import Sequence
from typing import NoReturn

from sheaf.errors import FormatError, UsageError
from sheaf.formats import read_replica_catalog, write_replica_catalog
from sheaf.jobtools._cli import ToolExit, run_guarded
from sheaf.jobtools._lists import Span, parse_slice, read_json_list
from sheaf.model import PFN, Replica, ReplicaCatalog

PROG = "sheaf-register"
Entry = tuple[str, str, str, tuple[tuple[str, str], ...]]  # lfn, pfn, site, metadata
_KEYS = ("lfn", "pfn", "site")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (usage: {PROG} [--format yaml|file] CATALOG LIST_FILE)")


def read_entries(path: str, span: Span | None = None) -> list[Entry]:
    data = read_json_list(path, "a JSON list of {lfn, pfn, site}", span)
    out = []
    for item in data:
        if not (isinstance(item, dict) and all(isinstance(item.get(k), str) and item[k] for k in _KEYS)):
            raise FormatError("an entry is not {lfn, pfn, site} strings",
                              rule="a JSON list of {lfn, pfn, site}", value=item, path=path)
        metadata = item.get("metadata") or {}
        if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
            raise FormatError("an entry's metadata is not a mapping of strings",
                              rule="metadata is a JSON object of strings", value=item, path=path)
        out.append((item["lfn"], item["pfn"], item["site"], tuple(sorted(metadata.items()))))
    return out


def register(catalog: str, entries: list[Entry], kind: str) -> int:
    """Add ``entries`` to ``catalog`` under its lock (module docstring); how many were new."""
    directory = os.path.dirname(os.path.abspath(catalog))
    os.makedirs(directory, exist_ok=True)
    with open(catalog + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rc = read_replica_catalog(catalog) if os.path.exists(catalog) else ReplicaCatalog()
        known = {(r.lfn, p.pfn, p.site) for r in rc if not r.regex for p in r.pfns}
        new = [e for e in dict.fromkeys(entries) if e[:3] not in known]
        if not new:
            return 0
        for lfn, pfn, site, metadata in new:
            rc.add(Replica(lfn, (PFN(pfn, site),), metadata=dict(metadata)))
        if kind == "yaml":
            write_replica_catalog(rc, catalog)
        else:
            _write_text(rc, catalog, directory)
        return len(new)


def _write_text(rc: ReplicaCatalog, catalog: str, directory: str) -> None:
    lines = []
    for replica in rc:
        for pfn in replica.pfns:
            extra = f' site="{pfn.site}"' if pfn.site else ""
            regex = ' regex="true"' if replica.regex else ""
            extra += "".join(f" {name}={_word(value)}" for name, value in replica.metadata.items())
            lines.append(f"{_word(replica.lfn)} {_word(pfn.pfn)}{extra}{regex}\n")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(catalog)}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(lines)
        os.replace(tmp, catalog)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _word(text: str) -> str:
    """A word of the text format: as is, or double-quoted with backslash escapes."""
    if text and not any(c.isspace() or c in '"\\=' for c in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _main(argv: list[str]) -> int:
    parser = _Parser(prog=PROG, description="Add delivered outputs to the output replica catalog.")
    parser.add_argument("--format", choices=("yaml", "file"), default="yaml")
    parser.add_argument("--slice", type=parse_slice,
                        help="OFFSET:LENGTH: the list is those bytes of LIST_FILE")
    parser.add_argument("catalog")
    parser.add_argument("list")
    args = parser.parse_args(argv)
    entries = read_entries(args.list, args.slice)
    try:
        added = register(args.catalog, entries, args.format)
    except OSError as exc:
        raise ToolExit(1, f"cannot update {args.catalog}: {exc.strerror or exc}") from None
    print(f"{PROG}: {added} replica(s) added to {args.catalog}")
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    run_guarded(PROG, _main, argv)


if __name__ == "__main__":
    main()
