"""The records a submit description is read into, and the error every part of the reader raises.

A :class:`SubmitDescription` keeps the file's assignments flattened (the last one winning) and, when
the file has ``if``/``else``, its whole body as :class:`Statement` records, to be decided per node
(``effective_values``).  Its one :class:`Queue` statement is kept as written: the items of ``from
FILE`` and ``matching`` are found when the node is expanded, not when the file is read.  Errors are
:class:`sheaf.errors.FormatError` with the file, the line, the rule and the value.
"""

from __future__ import annotations

__all__ = ["Queue", "Statement", "StatementKind", "SubmitDescription", "submit_error"]

from dataclasses import dataclass, field
from typing import Literal

from sheaf.errors import FormatError

StatementKind = Literal["set", "if", "elif", "else", "endif"]


@dataclass(frozen=True, slots=True)
class Statement:
    kind: StatementKind
    key: str  # "set": the key as written; "if"/"elif": the condition
    value: str
    line: int


@dataclass(frozen=True, slots=True)
class Queue:
    """``queue [count] [names in|from|matching items]``: ``count`` procs per item."""

    count: int = 1
    names: tuple[str, ...] = ()
    mode: Literal["", "in", "from", "matching"] = ""
    items: tuple[str, ...] = ()  # inline items (lines for ``from``), or the file / patterns
    from_file: str | None = None
    line: int | None = None
    #: a statement with ``$(...)`` in it, read only once its macros are known (``expand_queue``): its
    #: line and the lines after it, as written; the other fields are then the defaults
    raw: tuple[tuple[int, str], ...] = ()
    #: ``[start:end:step]`` after the mode: the items kept, as condor_submit's slice keeps them
    part: tuple[int | None, int | None, int | None] | None = None

    def selected(self, count: int) -> list[int]:
        """The indices of ``count`` items the statement's slice keeps, in order (all without one): from
        ``start`` (counted from the end when negative) up to ``end`` (likewise), every ``step``-th --
        condor_submit's ``qslice``: ``[2]`` keeps the items from the third on, and a step never
        reverses the order."""
        if self.part is None:
            return list(range(count))
        start, end, step = self.part
        first = 0 if start is None else start + count if start < 0 else start
        last = count if end is None else end + count if end < 0 else end
        return [ix for ix in range(max(first, 0), min(last, count)) if not step or (ix - first) % step == 0]

    @property
    def simple(self) -> bool:
        return self.mode == "" and self.count == 1 and not self.raw


@dataclass(frozen=True, slots=True)
class SubmitDescription:
    path: str
    directory: str
    values: dict[str, tuple[str, int]]  # lower-case key -> (raw value, line); "+attr" keys keep case
    attrs: dict[str, str]  # ad attribute name -> raw expression (from +Attr / MY.Attr)
    queue: Queue = field(default_factory=Queue)
    statements: tuple[Statement, ...] = ()  # the whole body, kept when it holds if/else
    first_line: int = 1


def submit_error(path: str, line: int | None, message: str, rule: str, value: object) -> FormatError:
    return FormatError(message, rule=rule, value=value, path=path, line=line)
