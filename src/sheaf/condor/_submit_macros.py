"""Macro expansion of the submit language (:class:`Macros`).

``$(name)`` and ``$(name:default)`` look a name up through the layers the caller gives (DAGMan's
appended VARS, the file, its prepended values, the predefined macros); ``$$(attr)`` is left for
match time; ``$(DOLLAR)`` is a literal ``$``.  The function macros of the condor_submit manual:
``$ENV(name[:default])``, ``$CHOICE(index, list...)``, ``$INT(x[,fmt])``, ``$REAL(x[,fmt])``,
``$F[fpdnxbqa](file)``, ``$DIRNAME()``, ``$BASENAME()``, ``$SUBSTR(name, start[, len])``,
``$RANDOM_CHOICE(...)``, ``$RANDOM_INTEGER(min, max[, step])``, one function each, found through
one table.  An unknown ``$NAME(...)`` is left as it is, as condor_submit leaves it.
``$INT``/``$REAL`` evaluate their argument with the ``evaluate`` callable the caller injects (the
engine passes the ClassAd evaluator; this package sits to the left of ``sheaf.classad``); without
one only numeric literals convert.  A macro that refers to itself, directly or not, is an error,
not an endless expansion.
"""

from __future__ import annotations

__all__ = ["Evaluate", "Macros"]

import os
import platform
import random
import re
import sys
from collections.abc import Callable, Mapping

from sheaf.condor._submit_records import submit_error
from sheaf.errors import FormatError

# condor_submit's own macro defaults (``SubmitMacroDefaults`` in submit_utils.cpp) that do not depend
# on the job: the platform's, as condor_submit on this machine sets them
SUBMIT_DEFAULTS = {"islinux": "1" if sys.platform.startswith("linux") else "0", "iswindows": "0",
                   "opsys": platform.system().upper(), "arch": {"x86_64": "X86_64", "aarch64": "aarch64"}.get(
                       platform.machine(), platform.machine().upper())}
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
        self.predefined = {**SUBMIT_DEFAULTS, **{k.lower(): v for k, v in predefined.items()}}
        self.environ = os.environ if environ is None else environ
        self.evaluate = evaluate
        self._rng = rng  # made on first use: most node attempts never draw a random number
        self.active: set[str] = set()

    @property
    def rng(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random()
        return self._rng

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
            raise submit_error(self.path, None, "macro refers to itself", "macros are not recursive", name)
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

    def get_all(self, calls: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
        """:meth:`get` of each (key, default)."""
        return tuple(self.get(key, default) for key, default in calls)

    def constant(self, text: str) -> str | None:
        """``text`` expanded when that is known to be the same for every node: never, for macros
        of one node (``_submit_template``'s replay knows it)."""
        return text if "$" not in text else None

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
        handler = _FUNCTIONS.get(function)
        if handler is None and re.fullmatch(r"F[fpduwnxbqa]*", function):
            handler = _file_parts
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
    return submit_error(macros.path, None, f"${function}(): {why}",
                        f"the ${function}() macro of condor_submit", f"${function}({inner})")


def _choice(macros: Macros, name: str, inner: str) -> str:
    parts = [a.strip() for a in inner.split(",")]
    if len(parts) < 2:
        raise _fail(macros, name, inner, "needs an index and a list")
    index_text = macros.expand(parts[0]).strip()
    if not re.fullmatch(r"[0-9]+", index_text) and macros.raw(index_text) is not None:
        index_text = macros.lookup(index_text).strip()  # an index may be a macro name (STEP, IsWindows)
    if not re.fullmatch(r"[0-9]+", index_text):  # else an expression (``string_is_long_param``)
        value = macros.evaluate(index_text) if macros.evaluate is not None else None
        if not isinstance(value, bool | int | float) or value < 0:
            raise _fail(macros, name, inner, "the index is not an integer")
        index_text = str(int(value))  # true is 1, a real is truncated, as EvalInteger converts them
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
