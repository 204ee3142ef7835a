"""HTCondor's configuration language: the syntax of a condor_config file, which the local pool's
configuration and a DAG's ``CONFIG`` file are written in.

Syntax (the part of HTCondor's that a pool or DAGMan configuration uses):

- ``NAME = value``; names are case-insensitive (stored upper-cased); white space around ``=`` and at
  the ends of the value is dropped; a later definition replaces an earlier one;
- a line whose first non-blank character is ``#`` is a comment (a ``#`` later on a line is part of
  the value, as in HTCondor); blank lines are ignored;
- a line ending in ``\\`` continues on the next line (the backslash and newline are dropped);
- ``$(NAME)`` is replaced by NAME's value when a value is *used* (so a macro may refer to one
  defined further down), ``$(NAME:default)`` falls back to ``default`` when NAME is undefined or
  empty, and ``$ENV(VAR)`` reads the environment.  A self-reference (``A = $(A) more``) means the
  previous definition, expanded at definition time.  An undefined macro expands to the empty
  string, as in HTCondor.  A reference cycle is a ``FormatError``;
- booleans as HTCondor's ``param_boolean`` reads them: ``true``, ``false``, ``1``, ``0``.

Anything else (``include``, ``use``, ``if``/``else``, ``@=`` blocks) is rejected with a
``FormatError`` naming path, line, rule and value, rather than silently ignored.

Invariant: a ``CondorConfig`` remembers the line of every definition, so the code that interprets a
knob can raise a located error (``config.error(name, message, rule)``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from sheaf.errors import FormatError

__all__ = ["CondorConfig", "condor_boolean", "parse_config"]

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)\s*=(.*)$", re.DOTALL)
_REF = re.compile(r"\$(ENV)?\(([A-Za-z_][A-Za-z0-9_.]*)(?::([^)]*))?\)")
_INTEGER = re.compile(r"[-+]?[0-9]+\Z")  # ASCII digits (``int`` also takes "1_0" and other scripts' digits)
INT64_MAX = (1 << 63) - 1
_BOOLEAN = re.compile(r"(true|1|false|0)\s*\Z", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Entry:
    raw: str
    line: int


@dataclass(slots=True)
class CondorConfig(Mapping[str, str]):
    """Parsed configuration: ``config[name]`` is the expanded value (names case-insensitive)."""

    path: str | None = None
    entries: dict[str, _Entry] = field(default_factory=dict)
    #: an undefined ``$(NAME)`` kept as written, not made empty: a DAG's CONFIG file may name a macro of
    #: the pool's HTCondor configuration, which sheaf does not read, and the knob's reader says so
    keep_undefined: bool = False

    def __getitem__(self, name: str) -> str:
        return self._expand(name.upper(), ())

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.upper() in self.entries

    def line_of(self, name: str) -> int | None:
        entry = self.entries.get(name.upper())
        return entry.line if entry else None

    def error(self, name: str, message: str, rule: str, value: object = None) -> FormatError:
        """A ``FormatError`` located at the definition of ``name``."""
        shown = self.get(name) if value is None else value
        return FormatError(f"{name.upper()}: {message}", rule=rule, value=shown, path=self.path,
                           line=self.line_of(name))

    def integer(self, name: str, default: int, *, minimum: int = 0, maximum: int = INT64_MAX) -> int:
        """The knob as an integer from ``minimum`` to ``maximum`` (HTCondor's 64-bit range unless the
        knob counts something that is built one by one, like slots)."""
        if name not in self:
            return default
        text = self[name].strip()
        if _INTEGER.match(text) is None:
            raise self.error(name, "not an integer", "an integer is expected")
        number = int(text) if len(text) <= 20 else (maximum + 1 if text[0] != "-" else minimum - 1)
        if number < minimum:
            raise self.error(name, f"must be >= {minimum}", f"a number >= {minimum} is expected")
        if number > maximum:
            raise self.error(name, f"must be <= {maximum}", f"a number <= {maximum} is expected")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        """The knob as HTCondor reads a boolean (``param_boolean``): ``true``, ``false``, ``1`` or ``0``
        in any case, then nothing but white space.  HTCondor evaluates anything else as a ClassAd
        expression; sheaf refuses it, naming the knob, rather than guess."""
        if name not in self:
            return default
        value = condor_boolean(self[name])
        if value is None:
            raise self.error(name, "not a boolean", "True or False (or 1 or 0) is expected")
        return value

    def _expand(self, name: str, stack: tuple[str, ...]) -> str:
        if name in stack:
            cycle = " -> ".join((*stack, name))
            raise self.error(stack[0], "macro reference cycle", "$(NAME) references form no cycle", cycle)
        entry = self.entries.get(name)
        if entry is None:
            raise KeyError(name)
        return _substitute(entry.raw, lambda ref: self._lookup(ref, (*stack, name)), self.keep_undefined)

    def _lookup(self, name: str, stack: tuple[str, ...]) -> str | None:
        try:
            return self._expand(name.upper(), stack)
        except KeyError:
            return None


def _substitute(text: str, lookup: Callable[[str], str | None], keep_undefined: bool = False) -> str:
    def replace(match: re.Match[str]) -> str:
        is_env, name, default = match.group(1), match.group(2), match.group(3)
        found = os.environ.get(name) if is_env else lookup(name)
        if not found and default is not None:
            return str(default)
        if found is None and keep_undefined and not is_env:
            return match.group(0)
        return str(found or "")

    return _REF.sub(replace, text)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first line number, joined text)``, joining backslash continuations."""
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\") and not stripped.lstrip().startswith("#"):
            pending.append(stripped[:-1])
            continue
        pending.append(line)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def parse_config(text: str, path: str | None = None, keep_undefined: bool = False) -> CondorConfig:
    """Parse configuration text (see the module docstring for the syntax)."""
    config = CondorConfig(path=path, keep_undefined=keep_undefined)
    for number, line in _logical_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGN.match(stripped)
        if match is None:
            raise FormatError("not a NAME = value line", rule="configuration lines are NAME = value",
                              value=stripped, path=path, line=number)
        name, raw = match.group(1).upper(), match.group(2).strip()
        previous = config.entries.get(name)
        if previous is not None and re.search(rf"\$\({re.escape(name)}(:[^)]*)?\)", raw, re.IGNORECASE):
            raw = _self_reference(config, name, raw)
        config.entries[name] = _Entry(raw, number)
    return config


def _self_reference(config: CondorConfig, name: str, raw: str) -> str:
    previous = config[name]
    pattern = re.compile(rf"\$\({re.escape(name)}(:[^)]*)?\)", re.IGNORECASE)
    return pattern.sub(lambda _: previous, raw)


def condor_boolean(text: str) -> bool | None:
    """``text`` as HTCondor's configuration reads a boolean literal, None when it is none."""
    match = _BOOLEAN.match(text.strip())
    if match is None:
        return None
    return match.group(1).lower() in ("true", "1")
