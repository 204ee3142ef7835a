"""The HTCondor submit-description language: the reader, its conditionals, and the whole surface.

Reading (``parse_submit``/``parse_submit_lines``) follows condor_submit:

- logical lines (``_text.logical_lines``: a trailing ``\\`` continues a line, ``#`` comment lines);
- ``key = value`` (keys case-insensitive), ``+Attr = expr`` and ``MY.Attr = expr`` (ClassAd expressions
  for the job ad);
- ``if``/``elif``/``else``/``endif`` with HTCondor's *simple* conditions only, as condor_submit: ``[!]
  defined NAME``, ``[!] version OP x.y[.z]``, and a value that is, once its macros are expanded, a
  boolean (``true``/``false``/``yes``/``no``) or an integer (0 is false).  Anything else ("complex
  conditionals") is refused with the line, as condor_submit refuses it.  The conditions are decided per
  node when the description is expanded (``effective_values``), because a DAG's ``VARS`` may define
  the names they test;
- one ``queue`` statement (``_submit_queue``), which ends the description.

The other parts live beside this one and are re-exported here, so that the whole language can be
imported from this one module: the records and the error (``_submit_records``), queue statements
(``_submit_queue``), macro expansion (``_submit_macros``) and writing (``_submit_write``).  Imports
run one way: records <- queue, macros <- this module; writing stands alone.

Errors are :class:`sheaf.errors.FormatError` with the file, the line, the rule and the value.
"""

from __future__ import annotations

__all__ = [
    "Macros",
    "Queue",
    "Statement",
    "SubmitDescription",
    "Unwritable",
    "check_line",
    "classad_string",
    "effective_values",
    "escape_macros",
    "parse_submit",
    "parse_submit_lines",
    "queue_items",
    "quote_arguments",
    "quote_environment",
    "quote_word",
    "v1_environment_entries",
]

import os
import re
from collections.abc import Iterable, Sequence

from sheaf._text import logical_lines, read_text
from sheaf.condor._submit_macros import Macros
from sheaf.condor._submit_queue import QUEUE_RE, parse_queue, queue_items
from sheaf.condor._submit_records import Queue, Statement, SubmitDescription, submit_error
from sheaf.condor._submit_write import (
    Unwritable,
    check_line,
    classad_string,
    escape_macros,
    quote_arguments,
    quote_environment,
    quote_word,
)

_KEY_RE = re.compile(r"^([+]?[A-Za-z_][\w.\-+]*)\s*=\s*(.*)$", re.DOTALL)
_COND_RE = re.compile(r"(if|elif)\s+(.*)$|(else|endif)\s*$", re.IGNORECASE)


def parse_submit(path: str) -> SubmitDescription:
    """Read a submit description file."""
    text = read_text(path, "submit description")
    return parse_submit_lines(logical_lines(text), path, os.path.dirname(os.path.abspath(path)))


#: the characters that, first in an old-syntax (V1) environment, name its delimiter (HTCondor's
#: ``Env::MergeFromV1AutoDelim``); without one it is ``;``
_V1_DELIMITERS = "!#$%&*+,-/:;<>?@^`|~\x1f"


def v1_environment_entries(text: str) -> list[str]:
    """The ``name=value`` entries of an old-syntax environment (``a=1;b=2``, or ``|a=1;2|b=3`` whose
    first character names the delimiter -- but the ``$`` of a ``$$(...)`` the match fills in), as
    HTCondor splits them; empty entries left out."""
    text = text.strip()
    delimiter = ";"
    if text and text[0] in _V1_DELIMITERS and not text.startswith("$$("):  # $$(...) is filled in at the match
        delimiter, text = text[0], text[1:]
    return [entry for entry in text.split(delimiter) if entry.strip()]


def parse_submit_lines(lines: Sequence[tuple[int, str]], path: str, directory: str,
                       *, need_queue: bool = True) -> SubmitDescription:
    """A description from logical lines (a file's, or an inline description in a DAG file: then
    ``path`` is the DAG file and the line numbers are its own; ``need_queue`` False, as DAGMan
    queues an inline description once when it has no queue statement)."""
    statements: list[Statement] = []
    depth: list[bool] = []  # per open if: an else seen
    queue: Queue | None = None
    it = iter(range(len(lines)))
    for index in it:
        number, line = lines[index]
        if QUEUE_RE.match(line):
            if depth:
                raise submit_error(path, number, "queue inside if/else", "queue is not inside if ... endif",
                                   line)
            queue, _used = parse_queue(lines, index, path)
            break
        statements.append(_statement(path, number, line, depth))
    if depth:
        last = lines[-1][0] if lines else None
        raise submit_error(path, last, "if without endif", "every if has an endif", path)
    if queue is None:
        if need_queue:
            raise submit_error(path, None, "no queue statement", "a submit description ends with queue", path)
        queue = Queue()
    values, attrs = _flatten(statements)
    conditional = any(s.kind != "set" for s in statements)
    desc = SubmitDescription(path, directory, values, attrs, queue, tuple(statements) if conditional else (),
                             lines[0][0] if lines else 1)
    if "executable" not in values:
        raise submit_error(path, None, "no executable", "a submit description names its executable", path)
    return desc


def _statement(path: str, number: int, line: str, depth: list[bool]) -> Statement:
    cond = _COND_RE.match(line)
    if cond is not None and (cond.group(3) or not _KEY_RE.match(line)):
        kind = (cond.group(1) or cond.group(3)).lower()
        if kind == "if":
            depth.append(False)
        elif not depth:
            raise submit_error(path, number, f"{kind} without if", "elif, else and endif follow an if", line)
        elif kind == "endif":
            depth.pop()
        elif depth[-1]:
            raise submit_error(path, number, f"{kind} after else", "else is the last branch of an if", line)
        elif kind == "else":
            depth[-1] = True
        text = (cond.group(2) or "").strip()
        if kind in ("if", "elif"):
            _check_condition(path, number, text)
        return Statement(kind, text, "", number)  # type: ignore[arg-type]
    match = _KEY_RE.match(line)
    if match is None:
        raise submit_error(path, number, "not a submit command", "key = value", line)
    return Statement("set", match.group(1), match.group(2).strip(), number)


def _flatten(statements: Iterable[Statement]) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """Every assignment, the last one winning (the view of a description without if/else)."""
    values: dict[str, tuple[str, int]] = {}
    attrs: dict[str, str] = {}
    for s in statements:
        if s.kind == "set":
            _assign(values, attrs, s.key, s.value, s.line)
    return values, attrs


def _assign(values: dict[str, tuple[str, int]], attrs: dict[str, str], key: str, value: str,
            line: int) -> None:
    if "$(" in value and not key.startswith("+"):  # ``A = $(A) more``: the earlier value, as condor_submit
        previous = values.get(key.lower(), ("", 0))[0]
        value = re.sub(r"\$\(" + re.escape(key) + r"\)", lambda _m: previous, value, flags=re.IGNORECASE)
    if key.startswith("+") or key.lower().startswith("my."):
        name = key[1:] if key.startswith("+") else key[3:]
        attrs[name] = value
        values["+" + name.lower()] = (value, line)
    else:
        values[key.lower()] = (value, line)


# ---- conditions ---------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"version\s*(==|!=|>=|<=|>|<)\s*([0-9]+(?:\.[0-9]+){0,2})\s*$", re.IGNORECASE)
_DEFINED_RE = re.compile(r"defined\s+(\S+)\s*$", re.IGNORECASE)
SUPPORTED_VERSION = (10, 0, 0)  # the HTCondor version whose submit language sheaf speaks
_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}


def _check_condition(path: str, number: int, text: str) -> None:
    body = text[1:].strip() if text.startswith("!") else text
    if not body:
        raise submit_error(path, number, "if without a condition", "if [!] condition", text)
    if _VERSION_RE.match(body) or _DEFINED_RE.match(body):
        return
    if "$" in body and not re.sub(r"\$[A-Za-z_]*\([^()]*\)", "", body).strip():
        return  # only macros: decided once expanded
    if body.lower() in _TRUE | _FALSE or re.fullmatch(r"[-+]?[0-9]+", body):
        return
    raise submit_error(path, number,
                       "not a simple condition (condor_submit supports no complex conditionals)",
                       "if [!] defined NAME | version OP x.y.z | true/false/yes/no/integer "
                       "(after $(macro) expansion)", text)


def _condition(text: str, macros: Macros, path: str, line: int) -> bool:
    negate = text.startswith("!")
    body = text[1:].strip() if negate else text
    defined = _DEFINED_RE.match(body)
    version = _VERSION_RE.match(body)
    if defined is not None:
        result = macros.defined(defined.group(1))
    elif version is not None:
        want = tuple(int(p) for p in version.group(2).split("."))
        have = SUPPORTED_VERSION[:len(want)]
        result = {"==": have == want, "!=": have != want, ">=": have >= want, "<=": have <= want,
                  ">": have > want, "<": have < want}[version.group(1)]
    else:
        value = macros.expand(body).strip().lower()
        if value == "":  # an undefined macro: false, as condor_submit decides it
            result = False
        elif value in _TRUE | _FALSE:
            result = value in _TRUE
        elif re.fullmatch(r"[-+]?[0-9]+", value):
            result = int(value) != 0
        else:
            raise submit_error(path, line, "the condition is not a boolean or an integer once expanded",
                               "if true/false/yes/no/integer", f"{text} -> {value}")
    return result != negate


def effective_values(desc: SubmitDescription,
                     macros: Macros) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """The assignments that hold for this expansion: ``desc.values``/``desc.attrs`` unless the
    description has if/else, which is then decided with ``macros`` (the file's earlier assignments
    visible to later conditions, as condor_submit reads top to bottom).  Appended macros (DAGMan's
    ``VARS ... APPEND``) are set only once the file has been read, so no condition sees them."""
    if not desc.statements:
        return desc.values, desc.attrs
    appended, macros.appended = macros.appended, {}
    try:
        return _decide(desc, macros)
    finally:
        macros.appended = appended


def _decide(desc: SubmitDescription, macros: Macros) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    values: dict[str, tuple[str, int]] = {}
    attrs: dict[str, str] = {}
    macros.file = values
    stack: list[tuple[bool, bool]] = []  # (this branch runs, some branch of this if ran)
    for s in desc.statements:
        active = all(run for run, _ in stack)
        if s.kind == "set":
            if active:
                _assign(values, attrs, s.key, s.value, s.line)
        elif s.kind == "if":
            run = active and _condition(s.key, macros, desc.path, s.line)
            stack.append((run, run))
        elif s.kind == "elif":
            _, taken = stack.pop()
            outer = all(r for r, _ in stack)
            run = outer and not taken and _condition(s.key, macros, desc.path, s.line)
            stack.append((run, taken or run))
        elif s.kind == "else":
            _, taken = stack.pop()
            stack.append((not taken, True))
        else:
            stack.pop()
    return values, attrs
