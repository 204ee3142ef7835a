"""Regular-expression built-ins: ``regexp``, ``regexpMember``, ``regexps``, ``replace``, ``replaceAll``,
``stringList_regexpMember``.

HTCondor uses PCRE; the ``regex`` package agrees on the syntax ClassAds use (POSIX bracket classes
such as ``[[:digit:]]`` included; ``_pcre`` writes the rest of PCRE's the ``regex`` way) and, unlike
``re``, takes a timeout: a match that runs longer than
``TIMEOUT`` seconds (catastrophic backtracking) is ``ERROR``, as PCRE's match limit makes it.
Options: ``i`` caseless, ``m`` multi-line, ``s`` dot-all, ``x`` extended, and for the substituting
functions ``f`` (return the whole target with the replacement in place) and ``g`` (every match).
``replace`` is ``regexps`` with ``f``, ``replaceAll`` with ``fg``.  In a replacement ``\\N`` inserts
group N; a group beyond the highest that took part is ``ERROR``.  A pattern that does not compile is
``ERROR``.  Where a pattern, target or replacement is past ASCII the match runs on the UTF-8 bytes
(one character a byte), as PCRE does in HTCondor: ``.`` is one byte, ``\\w`` and ``i`` know ASCII only.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import regex as re  # type: ignore[import-untyped]

from ._builtins import Library
from ._fn_strings import split_list
from ._pcre import pcre_to_regex, too_large
from ._values import ERROR, UNDEFINED, text_of_bytes, utf8

Value = Any
LIBRARY = Library()
strict = LIBRARY.strict
TIMEOUT: Final = 1.0


@functools.lru_cache(maxsize=512)
def _compile(pattern: str, options: str, as_bytes: bool = False) -> re.Pattern[str] | None:
    import regex as re  # first use: an import that an engine run mostly never needs

    flags = re.ASCII if as_bytes else 0
    if "i" in options:
        flags |= re.IGNORECASE
    if "m" in options:
        flags |= re.MULTILINE
    if "s" in options:
        flags |= re.DOTALL
    if "x" in options:
        flags |= re.VERBOSE
    if too_large(pattern):
        return None
    try:
        return re.compile(pcre_to_regex(pattern), flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None


def _groups_taking_part(match: re.Match[str]) -> int:
    highest = 0
    for index in range(1, (match.re.groups or 0) + 1):
        if match.start(index) != -1:
            highest = index
    return highest + 1


def _expand(replace: str, match: re.Match[str]) -> str | None:
    count = _groups_taking_part(match)
    out: list[str] = []
    i = 0
    while i < len(replace):
        char = replace[i]
        if char == "\\" and i + 1 < len(replace) and "0" <= replace[i + 1] <= "9":
            index = int(replace[i + 1])
            if index >= count:
                return None
            out.append(match.group(index) or "")
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def compile_pattern(pattern: str, options: str) -> Any:
    """``pattern`` compiled with ``options`` (the letters above), or None if it does not compile."""
    return _compile(pattern, options)


def _as_bytes(*texts: str) -> list[str] | None:
    """``texts`` one character a byte (their UTF-8 read as Latin-1), where one is past ASCII: PCRE
    as HTCondor runs it matches bytes (``.`` is one byte of ``é``; ``\\w`` and ``i`` know ASCII
    only); None when all are ASCII, where characters and bytes agree."""
    if all(text.isascii() for text in texts):
        return None
    return [utf8(text).decode("latin-1") for text in texts]


def regexp_match(pattern: str, target: str, options: str) -> Value:
    in_bytes = _as_bytes(pattern, target)
    if in_bytes is not None:
        pattern, target = in_bytes
    compiled = _compile(pattern, options, in_bytes is not None)
    if compiled is None:
        return ERROR
    try:
        return compiled.search(target, timeout=TIMEOUT) is not None
    except TimeoutError:
        return ERROR


def regexp_replace(pattern: str, target: str, replace: str, options: str) -> Value:
    in_bytes = _as_bytes(pattern, target, replace)
    if in_bytes is not None:
        pattern, target, replace = in_bytes
    compiled = _compile(pattern, options, in_bytes is not None)
    if compiled is None:
        return ERROR
    full, every = "f" in options, "g" in options
    out: list[str] = []
    index = 0
    while True:
        try:
            match = compiled.search(target, index, timeout=TIMEOUT)
        except TimeoutError:
            return ERROR
        if match is None:
            break
        if full:
            out.append(target[index:match.start()])
        text = _expand(replace, match)
        if text is None:
            return ERROR
        out.append(text)
        if match.end() == match.start() and every:
            return ERROR  # the official library fails on an empty match in a global replace
        index = match.end()
        if not every:
            break
    if full:
        out.append(target[index:])
    if sum(map(len, out)) > (1 << 24):
        return ERROR  # the same size bound as strcat
    text = "".join(out)
    return text if in_bytes is None else text_of_bytes(text.encode("latin-1"))


def _check(args: list[Value], strings: int) -> Value:
    """ERROR beats UNDEFINED; then the options (last, optional) must be a string."""
    if any(arg is ERROR for arg in args):
        return ERROR
    if any(arg is UNDEFINED for arg in args):
        return UNDEFINED
    if len(args) > strings and type(args[strings]) is not str:
        return ERROR
    return None


@strict("regexp")
def regexp(args: list[Value]) -> Value:
    if len(args) not in (2, 3):
        return ERROR
    problem = _check(args, 2)
    if problem is not None:
        return problem
    if type(args[0]) is not str or type(args[1]) is not str:
        return ERROR
    return regexp_match(args[0], args[1], args[2] if len(args) == 3 else "")


@strict("regexpMember")
def regexp_member(args: list[Value]) -> Value:
    if len(args) not in (2, 3):
        return ERROR
    problem = _check(args, 2)
    if problem is not None:
        return problem
    if type(args[0]) is not str or not isinstance(args[1], list):
        return ERROR
    options = args[2] if len(args) == 3 else ""
    maybe_undefined = False
    for item in args[1]:
        if type(item) is not str:
            if item is not UNDEFINED:
                return ERROR
            maybe_undefined = True
            continue
        if regexp_match(args[0], item, options) is True:  # a bad pattern matches nothing here
            return True
    return UNDEFINED if maybe_undefined else False


def _substitute(extra: str) -> Any:
    def substitute(args: list[Value]) -> Value:
        if len(args) not in (3, 4):
            return ERROR
        problem = _check(args, 3)
        if problem is not None:
            return problem
        if any(type(arg) is not str for arg in args[:3]):
            return ERROR
        options = (args[3] if len(args) == 4 else "") + extra
        return regexp_replace(args[0], args[1], args[2], options)
    return substitute


strict("regexps")(_substitute(""))
strict("replace")(_substitute("f"))
strict("replaceAll")(_substitute("fg"))


@strict("stringList_regexpMember")
def string_list_regexp_member(args: list[Value]) -> Value:
    if not 2 <= len(args) <= 4:
        return ERROR
    if any(type(arg) is not str for arg in args):
        return ERROR  # UNDEFINED included: the compatibility layer wants strings
    delims = args[2] if len(args) > 2 else None
    options = args[3] if len(args) > 3 else ""
    items = split_list(args[1], delims)
    if _compile(args[0], options) is None:
        return ERROR
    if not items:
        return UNDEFINED
    for item in items:
        found = regexp_match(args[0], item, options)
        if found is ERROR or found:
            return found
    return False
