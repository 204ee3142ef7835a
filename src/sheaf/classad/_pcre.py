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

:func:`too_large` finds the patterns PCRE refuses for their size before ``regex``, which would expand
them, tries: a repeat count above 65535 ("number too big in {} quantifier"), or a compiled pattern
past PCRE's 64K code units ("regular expression is too large") -- PCRE writes a repeated group out
once per repeat, so ``(?:ab){30000}`` is too large where ``a{60000}`` is not.  The size is estimated
from PCRE's opcodes: a character or an escape 2 units, a class 33, a group 6 (capturing 8), an
alternative 3, a repeated single item 3 more.
"""

from __future__ import annotations

__all__ = ["pcre_to_regex", "too_large"]

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


#: PCRE's largest repeat count, and its largest compiled pattern (LINK_SIZE 2: 64K code units)
MAX_REPEAT: Final = 65535
MAX_UNITS: Final = 65535
_REPEAT: Final = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")
_GROUP_PREFIX: Final = re.compile(r"\?(?:[:=!>|]|<[=!]|P?<\w+>|'\w+'|P[>=]\w+|[a-zA-Z^-]*:?)")
_CLASS_END: Final = re.compile(r"\[:[a-z]+:\]|\\.|[^\]]", re.DOTALL)


def too_large(pattern: str) -> bool:
    """Whether PCRE refuses ``pattern`` for a repeat count or its compiled size (module docstring)."""
    if "{" not in pattern:
        return False  # without a counted repeat a pattern's size is about its length
    # per open group: units so far, and the last item's units (negative: a group, copied when repeated)
    stack: list[list[int]] = [[0, 0]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        top = stack[-1]
        if c == "\\":
            if pattern.startswith("Q", i + 1):
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end
                top[:] = [top[0] + 2 * (end - i - 2), 2]
                i = end + 2
                continue
            top[:] = [top[0] + 2, 2]
            i += 2
        elif c == "[":
            j = i + 1 + (pattern.startswith("^", i + 1))
            j += pattern.startswith("]", j)  # a leading ] is a member
            while j < n and pattern[j] != "]":
                found = _CLASS_END.match(pattern, j)
                j = found.end() if found else j + 1
            top[:] = [top[0] + 33, 33]
            i = j + 1
        elif c == "(":
            prefix = _GROUP_PREFIX.match(pattern, i + 1)  # (?:  (?=  (?P<name>  (?i)  ... opcodes, not text
            named = prefix is not None and prefix.group().startswith(("?P<", "?<", "?'"))
            capturing = prefix is None or (named and prefix.group()[2] not in "=!")
            stack.append([8 if capturing else 6, 0])  # a capturing group's opcodes hold its number
            i = prefix.end() if prefix else i + 1
        elif c == ")" and len(stack) > 1:
            body = stack.pop()[0]
            stack[-1][:] = [stack[-1][0] + body, -body]
            i += 1
        elif c == "|":
            top[:] = [top[0] + 3, 0]
            i += 1
        elif c == "{" and (found := _REPEAT.match(pattern, i)) is not None:
            low = int(found.group(1))
            high = low if not found.group(2) else int(found.group(3) or low + 1)
            if max(low, high) > MAX_REPEAT:
                return True
            last = top[1]
            # one item (a character, an escape, a class) is repeated by one opcode, a group copied out
            grown = -last * max(low, high, 1) - (-last) if last < 0 else 3
            top[:] = [top[0] + grown, 0]
            if sum(units for units, _ in stack) > MAX_UNITS:
                return True
            i = found.end()
        else:
            top[:] = [top[0] + 2, 2]
            i += 1
    return sum(units for units, _ in stack) > MAX_UNITS
