"""sheaf's error tree.

Expected failures of *data* are values, not exceptions: a job that exits non-zero is an event the
engine records, and a ClassAd data error is the value ``classad.ERROR``.  Exceptions are for input
that cannot be used at all and for usage mistakes.  Each error also subclasses the matching
built-in, so callers that know nothing of sheaf can still catch it::

    SheafError                         (Exception)  root of everything sheaf raises on purpose
    ├── InputError                     (ValueError) bad input -> exit code 2, one clear message
    │   ├── FormatError                              a file does not parse / breaks its format
    │   ├── ValidationError                          parses, but the workflow or catalog is invalid
    │   └── PlanningError                            valid, but no executable workflow can be made
    ├── UsageError                     (ValueError) wrong command-line usage -> exit code 2
    ├── EngineError                    (RuntimeError) the engine cannot go on (journal unusable, ...)
    └── StorageError                   (OSError)    a file could not be written (disk full, I/O
                                                    error) -> exit code 1; nothing half-written

The ClassAd package is a leaf and defines its own ``ClassAdSyntaxError(ValueError)``; the CLI maps
it to exit code 2 as well.

Every ``InputError`` carries where the problem is (``path``, ``line``, ``column``, all optional),
the ``rule`` that was broken (a short phrase) and the offending ``value``; ``str()`` renders them as
one line such as::

    workflow.yml:42:7: duplicate job id (rule: job ids are unique): 'ID0000002'
"""

from __future__ import annotations

__all__ = [
    "EngineError",
    "FormatError",
    "InputError",
    "Location",
    "PlanningError",
    "SheafError",
    "StorageError",
    "UsageError",
    "ValidationError",
]

import errno
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Location:
    """A place in an input file; ``line`` and ``column`` are 1-based."""

    path: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


class SheafError(Exception):
    """Root of the errors sheaf raises on purpose."""


_NO_VALUE: Any = object()


class InputError(SheafError, ValueError):
    """Input that cannot be used: rendered as one line, exit code 2.

    ``message`` says what is wrong, ``rule`` names the rule broken, ``value`` is the offending value
    (shown with ``repr``), ``path``/``line``/``column`` say where (or ``anchor``, to be found).
    ``detail`` is extra text shown on the following lines (a caret under a source line, a cycle's
    path).
    """

    def __init__(
        self,
        message: str,
        *,
        rule: str | None = None,
        value: Any = _NO_VALUE,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        detail: str | None = None,
        anchor: Any = None,
    ) -> None:
        self.message = message
        #: a value that is where the error is, when the offending value is elsewhere (a job's id for
        #: the transformation it names): what a reader looks for to find the line
        self.anchor = anchor
        self.rule = rule
        self.value = value
        self.path = path
        self.line = line
        self.column = column
        self.detail = detail
        super().__init__(self.render())

    @property
    def has_value(self) -> bool:
        return self.value is not _NO_VALUE

    @property
    def location(self) -> Location:
        return Location(self.path, self.line, self.column)

    def located(
        self, path: str | None = None, line: int | None = None, column: int | None = None
    ) -> InputError:
        """Fill in the location where it is still unknown (returns self, updated)."""
        if self.path is None and path is not None:
            self.path = path
        if self.line is None and line is not None:
            self.line = line
            self.column = column
        self.args = (self.render(),)
        return self

    def render(self) -> str:
        head = f"{self.location}: " if (self.path or self.line is not None) else ""
        text = f"{head}{self.message}"
        if self.rule:
            text += f" (rule: {self.rule})"
        if self.has_value:
            text += f": {shown_value(self.value)}"
        if self.detail:
            text += "\n" + self.detail
        return text

    def __str__(self) -> str:
        return self.render()


SHOWN_VALUE = 200  # characters of an offending value's repr shown in a message


def shown_value(value: Any) -> str:
    """``repr(value)``, cut in the middle past :data:`SHOWN_VALUE` characters with the full length.

    An offending value can be a whole 1 MB line; the message must stay one readable line.
    """
    text = repr(value)
    if len(text) <= SHOWN_VALUE:
        return text
    half = SHOWN_VALUE // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


class FormatError(InputError):
    """A file does not parse, or breaks the grammar/schema of its format."""


class ValidationError(InputError):
    """The input parses but is not a valid workflow or catalog (cycle, duplicate id, ...)."""


class PlanningError(InputError):
    """The input is valid but cannot be planned (no site can run a job, bad labelling, ...)."""


class UsageError(SheafError, ValueError):
    """Wrong use of the command line or the API (exit code 2)."""


class EngineError(SheafError, RuntimeError):
    """The engine cannot go on (journal unreadable, run directory unusable)."""


class StorageError(SheafError, OSError):
    """A file could not be written (disk full, quota, I/O error, read-only file system): exit code 1.

    Not bad input, so not exit code 2: the same command succeeds once the storage is fixed.  Raised
    only after what was being written is cleaned up (a plan's temporary directory, a ``.tmp`` file)
    or left consistent (the journal); the message says what was kept and what to do.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])

    @classmethod
    def of(cls, exc: OSError, what: str, consequence: str) -> StorageError:
        """``cannot write <what> (<cause>: <strerror>); <consequence>`` for the ``OSError`` ``exc``."""
        if isinstance(exc, StorageError):
            return exc
        cause = _CAUSES.get(exc.errno or 0)
        detail = f"{cause}: {exc.strerror}" if cause else (exc.strerror or str(exc))
        return cls(f"cannot write {what} ({detail}); {consequence}")


_CAUSES = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
           errno.EIO: "an I/O error", errno.EROFS: "the file system is read-only"}
