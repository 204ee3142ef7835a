"""Integrity records: the sha256 of each delivered file, checked before a job uses it.

``pegasus.integrity.checking`` modes: ``none`` (no records, no checks; a transfer list's own
``checksum`` is still verified: the planner asked for it), ``full`` (every delivered file), and
``nosymlink`` (files delivered as symbolic links are neither recorded nor checked: reading a link's
target to hash it is the cost ``nosymlink`` exists to avoid).

A record is ``META_DIR/<sha256 of the lfn>.json`` = ``{"lfn": ..., "sha256": ..., "source": url}``,
named by a digest so that any lfn (slashes, any length) is one flat file name; it is written to a
temporary name and renamed, so a reader sees the old record or the new one, never half of one.  A
record that exists but cannot be read is a failure, not a pass: a check that silently passes is worse
than none.
"""

from __future__ import annotations

__all__ = ["MODES", "check_record", "file_sha256", "read_record", "record_path", "write_record"]

import hashlib
import json
import os
import threading

MODES = ("none", "full", "nosymlink")


def file_sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def record_path(meta_dir: str, lfn: str) -> str:
    name = hashlib.sha256(lfn.encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(meta_dir, f"{name}.json")


def write_record(meta_dir: str, lfn: str, sha256: str, source: str) -> None:
    os.makedirs(meta_dir, exist_ok=True)
    path = record_path(meta_dir, lfn)
    tmp = f"{path}.part-{os.getpid()}-{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump({"lfn": lfn, "sha256": sha256, "source": source}, out)
    os.replace(tmp, path)


class RecordError(Exception):
    """A record exists but cannot be used (the message names it and why)."""


def read_record(meta_dir: str, lfn: str) -> dict[str, str] | None:
    """The record of ``lfn``, ``None`` when there is none."""
    path = record_path(meta_dir, lfn)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RecordError(f"the integrity record {path} of {lfn} cannot be read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("sha256"), str):
        raise RecordError(f"the integrity record {path} of {lfn} holds no sha256")
    return {key: str(value) for key, value in data.items()}


def check_record(meta_dir: str, lfn: str, path: str, sha256: str | None = None,
                 shown: str | None = None) -> str | None:
    """Why ``path`` (the file ``lfn``) fails its record, or ``None`` (it matches, or has no record).

    ``sha256`` is the file's digest when the caller already has it; ``shown`` names the file in the
    message when ``path`` is a temporary name.
    """
    try:
        record = read_record(meta_dir, lfn)
    except RecordError as exc:
        return str(exc)
    if record is None:
        return None
    got = sha256 or file_sha256(path)
    if got == record["sha256"]:
        return None
    return (f"integrity check failed for {lfn} ({shown or path}): its sha256 is {got}, the record says "
            f"{record['sha256']} (delivered from {record.get('source', 'an unknown source')})")
