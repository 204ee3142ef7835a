"""PCRE's pattern syntax, as HTCondor's regular-expression built-ins read it, in the ``regex`` package's.

The two agree on most of what ClassAd patterns use; where PCRE reads a construct that ``regex`` refuses
or reads otherwise, :func:`pcre_to_regex` writes it the ``regex`` way:

- ``\\Q...\\E``: the text between, literally (to the end of the pattern without ``\\E``);
- named groups and back references: ``(?'n'...)`` is ``(?P<n>...)``; ``\\k<n>``, ``\\k'n'``, ``\\k{n}``
  and ``\\g{n}`` are ``(?P=n)``; ``\\gN``, ``\\g{N}`` and the relative ``\\g{-N}`` are ``\\N``;
- characters: ``\\x{hh...}`` and ``\\o{ooo}`` (code points in hexadecimal and octal), ``\\e`` (escape);
- ``\\v`` and ``\\V`` (vertical white space and its complement: PCRE's, not Python's vertical tab),
  ``\\N`` (any character but a newline), ``\\Z`` (the end, or before a newline at the end);
- ``{,n}`` is literal text in PCRE (no quantifier), as it is here.

Inside a character class ``\\Q...\\E``, ``\\x{}``, ``\\o{}``, ``\\e`` and ``\\v`` are read the same way.
Anything else passes unchanged: where ``regex`` cannot compile it, the pattern is ERROR, as a pattern
PCRE refuses is.
"""

from __future__ import annotations

__all__ = ["pcre_to_regex"]

import re
from typing import Final

_VERTICAL: Final = "\\n\\x0b\\f\\r\\x85"
_NAME: Final = re.compile(r"(?:<([A-Za-z_]\w*)>|'([A-Za-z_]\w*)'|\{([A-Za-z_]\w*)\})")
_BRACED_NUMBER: Final = re.compile(r"\{(-?\d+)\}|(\d+)")
_CODE: Final = {"x": (re.compile(r"\{([0-9A-Fa-f]+)\}"), 16), "o": (re.compile(r"\{([0-7]+)\}"), 8)}


def _char(code: int) -> str:
    return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"


def _literal(text: str, in_class: bool) -> str:
    if in_class:
        return "".join(f"\\{c}" if c in "\\]^-[" else c for c in text)
    return re.escape(text)


def pcre_to_regex(pattern: str) -> str:
    """``pattern`` (PCRE syntax) in the ``regex`` package's syntax (module docstring)."""
    if "\\" not in pattern and "(?'" not in pattern and "{," not in pattern:
        return pattern  # nothing to write otherwise (most patterns)
    out: list[str] = []
    groups = 0  # capturing groups opened so far, for \g{-N}
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            i = _escape(pattern, i, out, in_class, groups)
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):  # a POSIX class inside: [:digit:]
                end = pattern.find(":]", i + 2)
                if end >= 0:
                    out.append(pattern[i:end + 2])
                    i = end + 2
                    continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):  # a ] first in the class (after ^) is a member
                if i < n and pattern[i] == lead:
                    out.append("\\]" if lead == "]" else lead)
                    i += 1
            continue
        if c == "(":
            if pattern.startswith("(?'", i):
                end = pattern.find("'", i + 3)
                if end > i + 3:
                    out.append(f"(?P<{pattern[i + 3:end]}>")
                    groups += 1
                    i = end + 1
                    continue
            if not pattern.startswith("(?", i) or (pattern.startswith(("(?<", "(?P<"), i)
                                                    and not pattern.startswith(("(?<=", "(?<!"), i)):
                groups += 1
        elif c == "{" and pattern.startswith("{,", i):
            out.append("\\{")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escape(pattern: str, i: int, out: list[str], in_class: bool, groups: int) -> int:
    """Write the escape at ``pattern[i]`` (a backslash) to ``out``; the index after it."""
    d = pattern[i + 1]
    if d == "Q":
        end = pattern.find("\\E", i + 2)
        stop = len(pattern) if end < 0 else end
        out.append(_literal(pattern[i + 2:stop], in_class))
        return stop if end < 0 else end + 2
    if d == "E":  # an \E without \Q: nothing
        return i + 2
    if d in _CODE:
        rule, base = _CODE[d]
        found = rule.match(pattern, i + 2)
        if found is not None:
            out.append(_char(int(found.group(1), base)))
            return found.end()
    if d == "e":
        out.append("\\x1b")
        return i + 2
    if d in "vV":
        if in_class:
            out.append(_VERTICAL if d == "v" else "\\" + d)  # \V in a class: left to regex (refused)
        else:
            out.append(f"[{_VERTICAL}]" if d == "v" else f"[^{_VERTICAL}]")
        return i + 2
    if not in_class:
        if d == "N" and not pattern.startswith("\\N{", i):
            out.append("[^\\n]")
            return i + 2
        if d == "Z":
            out.append("(?=\\n?\\Z)")
            return i + 2
        if d == "k":
            found = _NAME.match(pattern, i + 2)
            if found is not None:
                out.append(f"(?P={found.group(1) or found.group(2) or found.group(3)})")
                return found.end()
        if d == "g":
            number = _BRACED_NUMBER.match(pattern, i + 2)
            if number is not None:
                value = int(number.group(1) or number.group(2))
                value = groups + 1 + value if value < 0 else value
                out.append(f"(?:\\{value})" if value > 0 else "(?!)")
                return number.end()
            found = _NAME.match(pattern, i + 2)
            if found is not None and found.group(3):
                out.append(f"(?P={found.group(3)})")
                return found.end()
    out.append(pattern[i:i + 2])
    return i + 2
