"""The journal's records, typed, and the reader that validates every line of a journal file.

Each record is one line of JSON, an array whose first element names its kind (``_journal`` shows
the layout).  The records are msgspec ``Struct``s encoded ``array_like`` with that kind as their
tag, so the bytes on disk are the ones earlier versions wrote, and decoding checks every field's
type and range, the kind, and the node states (a state outside :data:`NodeState` is damage, not
"some state that is not done").

Reading policy (``scan``)
-------------------------
* The text after the last newline is a *torn tail*: a write cut short by a crash, never acted on
  (the engine acts only once a commit is durable).  It is skipped silently when it is the prefix
  of a record (the decoder says "truncated"); a complete record there is read (its write finished);
  anything else is reported as damage.
* A truncated line followed at once by a ``B`` record is the torn tail of an engine killed mid-write
  on which the next engine started a fresh line (``Journal`` does so): skipped silently too.
* Every other line that is not valid UTF-8, not JSON, not a known kind or not of its kind's shape is
  *damage*, reported with its byte offset and line number (:class:`Damage`); the reader goes on
  with the next line.
"""

from __future__ import annotations

__all__ = [
    "BeginRecord",
    "ChangeInfo",
    "ChangeRecord",
    "Damage",
    "EndRecord",
    "ProcessRecord",
    "Record",
    "encode",
    "encode_lines",
    "scan",
    "valid_source",
]

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from sheaf.engine._nodes import NodeState

# Integers are those SQLite stores (64 bits, signed): the events database takes them as read.
_INT64 = 2**63 - 1
Int = Annotated[int, msgspec.Meta(ge=-_INT64 - 1, le=_INT64)]
Count = Annotated[int, msgspec.Meta(ge=0, le=_INT64)]
Name = Annotated[str, msgspec.Meta(min_length=1)]
# a time in seconds since the epoch, or a duration: finite (JSON's 1e400 reads as infinity)
Seconds = Annotated[float, msgspec.Meta(ge=-1e12, le=1e12)]


class BeginRecord(msgspec.Struct, array_like=True, frozen=True, tag="B"):
    """An engine run begins: ``source`` is fresh | recovery | rescue:<file>; ``run`` is the run id
    (the same for every run of one journal; empty in journals of sheaf before it had one)."""

    time: float
    epoch: Annotated[int, msgspec.Meta(ge=1, le=_INT64)]
    source: str
    total: Count
    done: list[Name]
    run: str = ""


class ChangeRecord(msgspec.Struct, array_like=True, frozen=True, tag="C"):
    """A node changed state; ``info`` holds what the state machine said about the change."""

    time: float
    node: Name
    start: NodeState
    finish: NodeState
    attempt: Count
    info: dict[str, Any] | None


class ProcessRecord(msgspec.Struct, array_like=True, frozen=True, tag="P"):
    """An attempt's process started (pid and start time, see ``_orphans``)."""

    time: float
    node: Name
    attempt: Count
    pid: Annotated[int, msgspec.Meta(gt=1, le=_INT64)]
    ticks: Count


class EndRecord(msgspec.Struct, array_like=True, frozen=True, tag="E"):
    """The run ended."""

    time: float
    succeeded: bool
    dag_status: Int
    exit_code: Int
    rescue: str | None


Record = BeginRecord | ChangeRecord | ProcessRecord | EndRecord


class ChangeInfo(msgspec.Struct, frozen=True):
    """Every key of a change's ``info`` that sheaf writes (the engine's ``Details``), typed: a line
    whose ``info`` holds one of them with another type is damage, so that every reader of the
    record (replay, the events loader, ``sheaf status``) may take the types as given.  A number a
    reader converts is never ``null``; texts and times may be (unknown yet when written).  Other
    keys are kept as written and read by nobody."""

    return_: Int | UnsetType = msgspec.field(default=UNSET, name="return")
    exit: Int | UnsetType = UNSET
    signal: Int | UnsetType = UNSET
    cluster: Count | UnsetType = UNSET
    retry: Count | UnsetType = UNSET
    proc: Count | UnsetType = UNSET
    hold_code: Int | UnsetType = UNSET
    hold_subcode: Int | UnsetType = UNSET
    why: str | None = None
    reason: str | None = None
    held: str | None = None
    release_reason: str | None = None
    slot: str | None = None
    script: Literal["PRE", "POST"] | UnsetType = UNSET
    started: Seconds | None = None
    ended: Seconds | None = None
    noop: bool = False
    submit_failed: bool = False
    skipped: bool = False
    cancelled: bool = False
    abort: bool = False
    released: bool = False
    removed: bool = False


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)
_info = msgspec.json.Decoder(ChangeInfo)


def encode(record: Record) -> bytes:
    return _encoder.encode(record) + b"\n"


def encode_lines(records: list[ChangeRecord]) -> bytes:
    """``encode`` of each record, joined: the same bytes, made in one call."""
    return _encoder.encode_lines(records)


def valid_source(source: str) -> bool:
    return source in ("fresh", "recovery") or (source.startswith("rescue:") and len(source) > 7)


def info_of(record: ChangeRecord) -> ChangeInfo:
    """The typed view of ``record.info``; raises ``msgspec.ValidationError`` on a wrong type."""
    if not record.info:
        return ChangeInfo()
    return msgspec.convert(record.info, ChangeInfo)


@dataclass(frozen=True, slots=True)
class Damage:
    """A line of the journal that could not be used."""

    offset: int  # byte offset of the line's first byte
    line: int  # 1-based
    why: str
    text: bytes  # the first bytes of the line, for the message

    def describe(self, path: str) -> str:
        return f"{path}: damaged record at byte offset {self.offset} (line {self.line}): {self.why}"


class _Truncated(Exception):
    pass


def _decode(line: bytes) -> Record:
    """Decode one line; raises ``_Truncated`` for the prefix of a record, ``ValueError`` for damage."""
    try:
        record: Record = _decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise ValueError(f"not a journal record: {exc}") from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise _Truncated from None
        raise ValueError(f"not JSON: {exc}") from None
    except UnicodeDecodeError as exc:  # msgspec checks UTF-8 inside strings with the codec
        raise ValueError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    if isinstance(record, BeginRecord) and not valid_source(record.source):
        raise ValueError(f"unknown run source {record.source!r}")
    if isinstance(record, ChangeRecord):
        try:
            info_of(record)
        except msgspec.ValidationError as exc:
            raise ValueError(f"bad change details: {exc}") from None
    return record


def scan(data: bytes) -> Iterator[tuple[int, int, Record | Damage]]:
    """``(offset, line, item)`` for the journal's bytes, in order: a record, or a :class:`Damage`
    for each unusable line."""
    offset, number = 0, 0
    held: Damage | None = None  # a torn line: harmless if a "B" record follows at once
    end = len(data)
    while offset < end:
        newline = data.find(b"\n", offset)
        last = newline < 0
        line = data[offset:] if last else data[offset:newline]
        offset = end if last else newline + 1
        number += 1
        if not line.strip():
            continue  # a blank line hides nothing
        start = offset - len(line) - (0 if last else 1)
        item = _item(line, start, number)
        if held is not None and not isinstance(item, BeginRecord):
            yield held.offset, held.line, held
        held = None
        if isinstance(item, Damage) and item.why == _TORN:
            if not last:
                held = item
        else:
            yield start, number, item
    if held is not None:
        yield held.offset, held.line, held


_TORN = "a torn record (the prefix of one)"


def _item(line: bytes, offset: int, number: int) -> Record | Damage:
    try:
        return _decode(line)
    except _Truncated:
        # A torn write is a prefix: it cannot end like a whole record, and one that already says
        # "done" is not dropped silently (the job did finish; when in doubt, report it).
        whole = line.rstrip().endswith(b"]") or b'"done"' in line
        why = "an unterminated record" if whole else _TORN
        return Damage(offset, number, why, line[:80])
    except ValueError as exc:
        return Damage(offset, number, str(exc), line[:80])
