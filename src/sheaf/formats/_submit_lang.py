"""The HTCondor submit-description language, read and written in one place.

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
- one ``queue`` statement: ``queue [N] [vars in|from|matching ...]`` (:class:`Queue`).  ``in`` takes a
  comma/space separated list (inline, or ``in (`` ... ``)`` over several lines), ``from`` a file or an
  inline ``(`` ... ``)`` list of lines whose fields fill the variables, ``matching [files|dirs]`` glob
  patterns; everything after the queue statement is ignored, as condor_submit does.  A second queue
  statement would make DAGMan's node a second cluster and is refused.

Macro expansion (:class:`Macros`): ``$(name)`` and ``$(name:default)`` look a name up through the
layers the caller gives (DAGMan's appended VARS, the file, its prepended values, the predefined
macros); ``$$(attr)`` is left for match time; ``$(DOLLAR)`` is a literal ``$``.  The function macros of
the condor_submit manual: ``$ENV(name[:default])``, ``$CHOICE(index, list...)``, ``$INT(x[,fmt])``,
``$REAL(x[,fmt])``, ``$F[fpdnxbqa](file)``, ``$DIRNAME()``, ``$BASENAME()``, ``$SUBSTR(name, start[,
len])``, ``$RANDOM_CHOICE(...)``, ``$RANDOM_INTEGER(min, max[, step])``.  An unknown ``$NAME(...)`` is
left as it is, as condor_submit leaves it.  ``$INT``/``$REAL`` evaluate their argument with the
``evaluate`` callable the caller injects (the engine passes the ClassAd evaluator; this package sits
to the left of ``sheaf.classad``); without one only numeric literals convert.

Writing: ``quote_arguments``/``quote_environment`` produce the *new* syntax (the whole value in double
quotes; white space separates; a word holding white space, a single quote or nothing is single
quoted with ``''`` for a quote; ``""`` is a double quote), ``escape_macros`` writes a ``$`` that
condor_submit would expand as ``$(DOLLAR)``, ``classad_string`` a ClassAd string literal.  The new
syntax's *reader* is HTCondor's V2 argument splitter, which lives in ``sheaf.classad`` (its
``argsToList`` is the same code in HTCondor): the engine reads arguments through it, and the round-trip
tests run this writer against that reader.  No value holding a NUL or a line break (anything
``str.splitlines`` splits at) can be written: such a value is :class:`Unwritable`.

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
]

import glob
import os
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sheaf.errors import FormatError
from sheaf.formats._text import logical_lines, read_text

# ---- reading ------------------------------------------------------------------------------------

_KEY_RE = re.compile(r"^([+]?[A-Za-z_][\w.\-+]*)\s*=\s*(.*)$", re.DOTALL)
_QUEUE_RE = re.compile(r"queue(?:\s+|$)", re.IGNORECASE)
_COND_RE = re.compile(r"(if|elif)\s+(.*)$|(else|endif)\s*$", re.IGNORECASE)
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

    @property
    def simple(self) -> bool:
        return self.mode == "" and self.count == 1


@dataclass(frozen=True, slots=True)
class SubmitDescription:
    path: str
    directory: str
    values: dict[str, tuple[str, int]]  # lower-case key -> (raw value, line); "+attr" keys keep case
    attrs: dict[str, str]  # ad attribute name -> raw expression (from +Attr / MY.Attr)
    queue: Queue = field(default_factory=Queue)
    statements: tuple[Statement, ...] = ()  # the whole body, kept when it holds if/else
    first_line: int = 1


def _error(path: str, line: int | None, message: str, rule: str, value: object) -> FormatError:
    return FormatError(message, rule=rule, value=value, path=path, line=line)


def parse_submit(path: str) -> SubmitDescription:
    """Read a submit description file."""
    text = read_text(path, "submit description")
    return parse_submit_lines(logical_lines(text), path, os.path.dirname(os.path.abspath(path)))


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
        if _QUEUE_RE.match(line):
            if depth:
                raise _error(path, number, "queue inside if/else", "queue is not inside if ... endif", line)
            queue, _used = _parse_queue(lines, index, path)
            break
        statements.append(_statement(path, number, line, depth))
    if depth:
        raise _error(path, lines[-1][0] if lines else None, "if without endif", "every if has an endif", path)
    if queue is None:
        if need_queue:
            raise _error(path, None, "no queue statement", "a submit description ends with queue", path)
        queue = Queue()
    values, attrs = _flatten(statements)
    conditional = any(s.kind != "set" for s in statements)
    desc = SubmitDescription(path, directory, values, attrs, queue, tuple(statements) if conditional else (),
                             lines[0][0] if lines else 1)
    if "executable" not in values:
        raise _error(path, None, "no executable", "a submit description names its executable", path)
    return desc


def _statement(path: str, number: int, line: str, depth: list[bool]) -> Statement:
    cond = _COND_RE.match(line)
    if cond is not None and (cond.group(3) or not _KEY_RE.match(line)):
        kind = (cond.group(1) or cond.group(3)).lower()
        if kind == "if":
            depth.append(False)
        elif not depth:
            raise _error(path, number, f"{kind} without if", "elif, else and endif follow an if", line)
        elif kind == "endif":
            depth.pop()
        elif depth[-1]:
            raise _error(path, number, f"{kind} after else", "else is the last branch of an if", line)
        elif kind == "else":
            depth[-1] = True
        text = (cond.group(2) or "").strip()
        if kind in ("if", "elif"):
            _check_condition(path, number, text)
        return Statement(kind, text, "", number)  # type: ignore[arg-type]
    match = _KEY_RE.match(line)
    if match is None:
        raise _error(path, number, "not a submit command", "key = value", line)
    return Statement("set", match.group(1), match.group(2).strip(), number)


def _flatten(statements: Iterable[Statement]) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """Every assignment, the last one winning (the view of a description without if/else)."""
    values: dict[str, tuple[str, int]] = {}
    attrs: dict[str, str] = {}
    for s in statements:
        if s.kind == "set":
            _assign(values, attrs, s.key, s.value, s.line)
    return values, attrs


def _assign(values: dict[str, tuple[str, int]], attrs: dict[str, str], key: str, value: str, line: int) -> None:
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
        raise _error(path, number, "if without a condition", "if [!] condition", text)
    if _VERSION_RE.match(body) or _DEFINED_RE.match(body):
        return
    if "$" in body and not re.sub(r"\$[A-Za-z_]*\([^()]*\)", "", body).strip():
        return  # only macros: decided once expanded
    if body.lower() in _TRUE | _FALSE or re.fullmatch(r"[-+]?[0-9]+", body):
        return
    raise _error(path, number, "not a simple condition (condor_submit supports no complex conditionals)",
                 "if [!] defined NAME | version OP x.y.z | true/false/yes/no/integer (after $(macro) expansion)",
                 text)


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
            raise _error(path, line, "the condition is not a boolean or an integer once expanded",
                         "if true/false/yes/no/integer", f"{text} -> {value}")
    return result != negate


def effective_values(desc: SubmitDescription, macros: Macros) -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """The assignments that hold for this expansion: ``desc.values``/``desc.attrs`` unless the
    description has if/else, which is then decided with ``macros`` (the file's earlier assignments
    visible to later conditions, as condor_submit reads top to bottom)."""
    if not desc.statements:
        return desc.values, desc.attrs
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


# ---- queue statements ---------------------------------------------------------------------------

_QUEUE_ARGS_RE = re.compile(r"^(?:(\S+)\s*)?(?:(.*?)\s+)?(in|from|matching)\b\s*(.*)$", re.IGNORECASE | re.DOTALL)


def _parse_queue(lines: Sequence[tuple[int, str]], index: int, path: str) -> tuple[Queue, int]:
    number, line = lines[index]
    rest = line[5:].strip()
    for later_number, later in lines[index + 1:]:
        if _QUEUE_RE.match(later) and not rest.rstrip().endswith("("):
            raise _error(path, later_number, "a second queue statement",
                         "one queue statement per node's submit description (one cluster per node)", later)
    if not rest:
        return Queue(line=number), index
    match = re.fullmatch(r"[0-9]+", rest)
    if match is not None:
        return Queue(_count(path, number, rest), line=number), index
    found = _QUEUE_ARGS_RE.match(rest)
    if found is None:
        raise _error(path, number, "not a queue statement", "queue [N] [vars in|from|matching items]", line)
    first, middle, mode, tail = found.group(1), found.group(2), found.group(3).lower(), found.group(4).strip()
    count_text, names_text = (first, middle) if first and first.isdigit() else (None, " ".join(
        p for p in (first, middle) if p))
    count = _count(path, number, count_text) if count_text else 1
    names = tuple(n for n in re.split(r"[\s,]+", names_text or "") if n) or ("Item",)
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise _error(path, number, "not a queue variable name", "queue [N] var[,var...] in|from ...", name)
    items, from_file = _queue_items(lines, index, path, mode, tail)
    if mode == "matching" and names != ("Item",) and len(names) != 1:
        raise _error(path, number, "queue matching takes one variable", "queue [N] [var] matching patterns", line)
    return Queue(count, names, mode, items, from_file, number), index  # type: ignore[arg-type]


def _count(path: str, number: int, text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,7}", text):
        raise _error(path, number, "queue count is not a small integer", "queue N: 0 <= N < 10**7", text)
    return int(text)


def _queue_items(lines: Sequence[tuple[int, str]], index: int, path: str, mode: str,
                 tail: str) -> tuple[tuple[str, ...], str | None]:
    number = lines[index][0]
    if tail.startswith("("):
        body = tail[1:]
        if ")" in body:
            inline = [body[:body.rindex(")")]]
        else:  # a list over the following lines, up to a line that is ")"
            inline = [body] if body.strip() else []
            for _n, later in lines[index + 1:]:
                if later.strip() == ")":
                    break
                inline.append(later)
            else:
                raise _error(path, number, "unterminated queue item list", "queue ... ( items ... )", tail)
        if mode == "from":
            return tuple(item.strip() for item in inline if item.strip()), None
        return tuple(w for part in inline for w in re.split(r"[\s,]+", part) if w), None
    if mode == "from":
        if not tail:
            raise _error(path, number, "queue from needs a file or a list", "queue vars from file", tail)
        return (), tail
    if mode == "matching":
        words = tail.split()
        if words and words[0].lower() in ("files", "dirs"):
            words = [words[0].lower(), *words[1:]]
        return tuple(words), None
    return tuple(w for w in re.split(r"[\s,]+", tail) if w), None


def queue_items(queue: Queue, directory: str) -> list[dict[str, str]]:
    """The item rows of a queue statement, each a dict of its variables (``[{}]`` without items).
    ``from FILE`` is read now (it may be written by a PRE script) relative to ``directory``."""
    if queue.mode == "":
        return [{}]
    if queue.mode == "matching":
        return [{queue.names[0]: name} for name in _matching(queue.items, directory)]
    rows = queue.items
    if queue.from_file is not None:
        path = queue.from_file if os.path.isabs(queue.from_file) else os.path.join(directory, queue.from_file)
        rows = tuple(line for _n, line in logical_lines(read_text(path, "queue item file")))
    if queue.mode == "in":
        return [{queue.names[0]: item} for item in rows]
    out = []
    for row in rows:
        fields = [f for f in re.split(r"[\s,]+", row.strip(), maxsplit=len(queue.names) - 1) if f != ""]
        out.append({name: fields[i] if i < len(fields) else "" for i, name in enumerate(queue.names)})
    return out


def _matching(words: Sequence[str], directory: str) -> list[str]:
    kind = words[0] if words and words[0] in ("files", "dirs") else ""
    found: list[str] = []
    for pattern in words[1:] if kind else words:
        for name in sorted(glob.glob(pattern, root_dir=directory)):
            full = os.path.join(directory, name)
            if (kind == "files" and not os.path.isfile(full)) or (kind == "dirs" and not os.path.isdir(full)):
                continue
            if name not in found:
                found.append(name)
    return found


# ---- macro expansion ----------------------------------------------------------------------------

_MACRO_RE = re.compile(r"\$\$\(|\$(?:([A-Za-z_][A-Za-z0-9_]*))?\(")
Evaluate = Callable[[str], object]


class Macros:
    """``$(macro)`` expansion over layers: ``appended`` > the file > ``prepended`` > ``predefined``
    (lower-case names); cycle-safe; function macros as the module docstring lists."""

    def __init__(self, path: str, file: Mapping[str, tuple[str, int]], *, appended: Mapping[str, str] = {},
                 prepended: Mapping[str, str] = {}, predefined: Mapping[str, str] = {},
                 environ: Mapping[str, str] | None = None, evaluate: Evaluate | None = None,
                 rng: random.Random | None = None) -> None:
        self.path = path
        self.file = file
        self.appended = {k.lower(): v for k, v in appended.items()}
        self.prepended = {k.lower(): v for k, v in prepended.items()}
        self.predefined = {k.lower(): v for k, v in predefined.items()}
        self.environ = os.environ if environ is None else environ
        self.evaluate = evaluate
        self.rng = rng or random.Random()
        self.active: set[str] = set()

    def raw(self, name: str) -> str | None:
        key = name.lower()
        value = self.appended.get(key)
        if value is None and key in self.file:
            value = self.file[key][0]
        if value is None:
            value = self.prepended.get(key, self.predefined.get(key))
        return value

    def defined(self, name: str) -> bool:
        """``if defined NAME``: set to a non-empty value (condor_submit's test, made before expansion)."""
        return bool(self.raw(name))

    def lookup(self, name: str, default: str | None = None) -> str:
        key = name.lower()
        if key in self.active:
            raise _error(self.path, None, "macro refers to itself", "macros are not recursive", name)
        raw = self.raw(key)
        if raw is None:
            return default if default is not None else ""
        self.active.add(key)
        try:
            return self.expand(raw)
        finally:
            self.active.discard(key)

    def get(self, key: str, default: str = "") -> str:
        """The expanded value of a submit command (``default`` when nothing sets it)."""
        key = key.lower()
        known = key in self.appended or key in self.file or key in self.prepended
        return self.lookup(key) if known else default

    def expand(self, text: str) -> str:
        if "$" not in text:
            return text
        out: list[str] = []
        pos = 0
        while True:
            match = _MACRO_RE.search(text, pos)
            if match is None:
                out.append(text[pos:])
                return "".join(out)
            close = _closing(text, match.end())
            if close < 0:  # no closing parenthesis: literal text
                out.append(text[pos:])
                return "".join(out)
            out.append(text[pos:match.start()])
            if match.group() == "$$(":  # left for match time, its inside untouched
                out.append(text[match.start():close + 1])
            else:
                out.append(self._call(match.group(1), text[match.end():close], text[match.start():close + 1]))
            pos = close + 1

    def _call(self, function: str | None, inner: str, whole: str) -> str:
        if function is None:
            name, colon, default = inner.partition(":")
            if name.strip().lower() == "dollar":
                return "$"
            return self.lookup(name.strip(), self.expand(default) if colon else None)
        handler = _FUNCTIONS.get(function) or (_file_parts if re.fullmatch(r"F[fpduwnxbqa]*", function) else None)
        if handler is None:
            return whole  # not a macro function: condor_submit leaves it
        return handler(self, function, inner)


def _closing(text: str, start: int) -> int:
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _args(macros: Macros, inner: str) -> list[str]:
    return [a.strip() for a in macros.expand(inner).split(",")]


def _env(macros: Macros, _name: str, inner: str) -> str:
    name, colon, default = inner.partition(":")
    value = macros.environ.get(macros.expand(name).strip())
    return value if value is not None else (macros.expand(default) if colon else "")


def _fail(macros: Macros, function: str, inner: str, why: str) -> FormatError:
    return _error(macros.path, None, f"${function}(): {why}", f"the ${function}() macro of condor_submit",
                  f"${function}({inner})")


def _choice(macros: Macros, name: str, inner: str) -> str:
    parts = [a.strip() for a in inner.split(",")]
    if len(parts) < 2:
        raise _fail(macros, name, inner, "needs an index and a list")
    index_text = macros.expand(parts[0]).strip()
    if not re.fullmatch(r"[0-9]+", index_text):
        index_text = macros.lookup(index_text).strip()  # an index may be a macro name (STEP, Process)
    if not re.fullmatch(r"[0-9]+", index_text):
        raise _fail(macros, name, inner, "the index is not an integer")
    items = parts[1:]
    if len(items) == 1 and macros.defined(items[0]):  # $CHOICE(i, listname)
        items = [a.strip() for a in macros.lookup(items[0]).split(",")]
    else:
        items = [macros.expand(a) for a in items]
    index = int(index_text)
    if index >= len(items):
        raise _fail(macros, name, inner, f"index {index} is out of bounds for a list of {len(items)}")
    return items[index]


def _number(macros: Macros, name: str, inner: str, kind: type[int | float]) -> str:
    arg, _comma, fmt = inner.partition(",")
    arg = arg.strip()
    text = macros.lookup(arg) if macros.defined(arg) else macros.expand(arg)
    value = _numeric(macros, text, kind)
    if value is None:
        raise _fail(macros, name, inner, f"{text!r} does not evaluate to a number")
    spec = macros.expand(fmt) if _comma else ("%d" if kind is int else "%16G")
    try:
        return spec % (kind(value),)
    except (TypeError, ValueError):
        raise _fail(macros, name, inner, f"bad format {spec!r}") from None


def _numeric(macros: Macros, text: str, kind: type[int | float]) -> float | int | None:
    text = text.strip()
    try:
        return int(text) if kind is int and re.fullmatch(r"[-+]?[0-9]+", text) else float(text)
    except ValueError:
        pass
    if macros.evaluate is None:
        return None
    value = macros.evaluate(text)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _substr(macros: Macros, name: str, inner: str) -> str:
    parts = [a.strip() for a in inner.split(",")]
    if not 2 <= len(parts) <= 3 or not all(re.fullmatch(r"[-+]?[0-9]+", macros.expand(p)) for p in parts[1:]):
        raise _fail(macros, name, inner, "takes a name, a start and an optional length")
    text = macros.lookup(parts[0])
    start = int(macros.expand(parts[1]))
    start = max(0, len(text) + start) if start < 0 else min(start, len(text))
    if len(parts) == 2:
        return text[start:]
    length = int(macros.expand(parts[2]))
    end = len(text) + length if length < 0 else start + length
    return text[start:max(start, end)]


def _random_choice(macros: Macros, name: str, inner: str) -> str:
    items = _args(macros, inner)
    return macros.rng.choice(items)


def _random_integer(macros: Macros, name: str, inner: str) -> str:
    parts = _args(macros, inner)
    if not 2 <= len(parts) <= 3 or not all(re.fullmatch(r"[-+]?[0-9]+", p) for p in parts):
        raise _fail(macros, name, inner, "takes integers min, max and an optional step")
    low, high, step = int(parts[0]), int(parts[1]), int(parts[2]) if len(parts) == 3 else 1
    if step < 1 or high < low:
        raise _fail(macros, name, inner, "needs min <= max and step >= 1")
    return str(macros.rng.randrange(low, high + 1, step))


def _file_parts(macros: Macros, name: str, inner: str) -> str:
    """``$F[fpduwnxbqa](file)`` (``$DIRNAME`` is ``$Fp``, ``$BASENAME`` is ``$Fnx``)."""
    letters = {"DIRNAME": "p", "BASENAME": "nx"}.get(name, name[1:])
    arg = inner.strip()
    path = macros.lookup(arg) if macros.defined(arg) else macros.expand(arg)
    if "f" in letters and not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    if "u" in letters:
        path = path.replace("\\", "/")
    if "w" in letters:
        path = path.replace("/", "\\")
    head, tail = os.path.split(path)
    stem, ext = os.path.splitext(tail)
    out = ""
    if "p" in letters:
        out += head + "/" if head else ""
    elif "d" in letters:
        last = os.path.basename(head)
        out += last + ("" if "b" in letters or not last else "/")
    if "n" in letters:
        out += stem
    if "x" in letters:
        out += ext[1:] if "b" in letters and "n" not in letters else ext
    if not any(c in letters for c in "pdnx"):
        out = path
    if "q" in letters:
        quote = "'" if "a" in letters else '"'
        out = quote + out + quote
    return out


_FUNCTIONS: dict[str, Callable[[Macros, str, str], str]] = {
    "ENV": _env, "CHOICE": _choice, "SUBSTR": _substr, "RANDOM_CHOICE": _random_choice,
    "RANDOM_INTEGER": _random_integer, "DIRNAME": _file_parts, "BASENAME": _file_parts,
    "INT": lambda m, n, i: _number(m, n, i, int), "REAL": lambda m, n, i: _number(m, n, i, float),
}


# ---- writing ------------------------------------------------------------------------------------

_MACRO_START = re.compile(r"\$+(?=\(|[A-Za-z_][A-Za-z0-9_]*\()")
_LITERAL_DOLLAR_MACRO = re.compile(r"\$\(dollar\)", re.IGNORECASE)
_NEEDS_SINGLE = re.compile(r"[\s']")
_BAD = re.compile("[\n\r\0\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SAFE_WORD = re.compile(r"[^\s'\"$\0]+")


class Unwritable(ValueError):
    """A value that cannot appear on one line of a submit description or DAG file."""


def check_line(text: str, what: str) -> str:
    if _BAD.search(text):
        raise Unwritable(f"{what} holds a line break or NUL: {text!r}")
    return text


def escape_macros(text: str) -> str:
    """``$`` that condor_submit would take as a macro start becomes ``$(DOLLAR)``.

    Two or more dollars before a macro-like name (``$$(attr)``) cannot be written: condor_submit
    leaves ``$$(...)`` for the execute side to expand, whatever precedes it; nor can ``$(DOLLAR)``
    itself (condor_submit replaces it until none is left).
    """
    if "$" not in text:
        return text
    if _LITERAL_DOLLAR_MACRO.search(text):
        raise Unwritable(f"'$(DOLLAR)' cannot be written literally: {text!r}")
    return _MACRO_START.sub(_dollar, text)


def _dollar(match: re.Match[str]) -> str:
    if len(match.group()) > 1:
        raise Unwritable(f"'$$(' cannot be written literally (HTCondor expands it at match time): "
                         f"{match.string!r}")
    return "$(DOLLAR)"


def quote_word(word: str) -> str:
    """One argument in the new syntax (without the surrounding double quotes)."""
    check_line(word, "an argument")
    word = escape_macros(word)
    if word and not _NEEDS_SINGLE.search(word):
        return word.replace('"', '""')
    return "'" + word.replace("'", "''").replace('"', '""') + "'"


def quote_arguments(argv: Iterable[str]) -> str:
    """A whole ``arguments`` value, e.g. ``["a", "b c"]`` -> ``"a 'b c'"``."""
    safe = _SAFE_WORD.fullmatch  # most arguments need no quoting at all: one regex, no copy
    return '"' + " ".join(arg if safe(arg) else quote_word(arg) for arg in argv) + '"'


def quote_environment(env: Iterable[tuple[str, str]]) -> str:
    """A whole ``environment`` value in the new syntax: ``"A=1 B='x y'"`` (values quoted as arguments)."""
    words = []
    for name, value in env:
        if not name or "=" in name or _NEEDS_SINGLE.search(name):
            raise Unwritable(f"not an environment variable name: {name!r}")
        words.append(f"{quote_word(name)}={quote_word(value)}")
    return '"' + " ".join(words) + '"'


def classad_string(text: str) -> str:
    """A ClassAd string literal, for ``+attr = <literal>`` lines."""
    check_line(text, "a ClassAd string")
    return '"' + escape_macros(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
