"""The ClassAd lexer: text in, tokens out, one compiled pattern walked in C.

Two ways over the same pattern.  ``scan`` is the hot path: ``re.findall`` returns the token *texts*
only (a flat ``list[str]``, no positions, no kinds), ending in ``""``; the parser tells kinds apart by
the text itself (a string keeps its quotes, a name starts with a letter).  A character that starts no
token ends the list early with an extra ``""``, so the parser stops there and reports.  ``tokenize``
is the careful way, run only to report an error: tokens ``(kind, value, pos)`` with ``pos`` the offset
of the first character, and a ``ClassAdSyntaxError`` at the first character that starts none.  Both
yield the same token sequence for the same text (the parser relies on it to place its carets), except
that ``scan`` leaves every ``-5`` whole and the parser splits one found after an operand.
Kinds: ``int``, ``real``, ``str`` (escapes resolved), ``name`` (an identifier), ``qname`` (a 'quoted'
attribute name), ``op`` (punctuation and the keywords ``is`` and ``isnt``), ``eof``.

A ``-`` directly followed by a number, where an operand may start (not after an operand), is part of
the number (``x * -1`` holds the literal -1, ``- 1`` is unary minus on 1), as in HTCondor's lexer;
this matters for ``?:`` (``a ?: -1`` is valid, ``a ?: - 1`` is not) and for unparsing.
HTCondor's rules kept here: integers have no leading zero (``007`` is not a number), an integer too
big for 64 bits reads as 0 (what the official parser does), reals need a digit after the point or
exponent, an unknown escape keeps the character (``"\\x41"`` is ``x41``), ``\\a`` and ``\\v`` are BEL and
VT, an octal escape (``\\101``) is a byte and the bytes of a literal are read as UTF-8, and a ``\\0``
escape is a syntax error (HTCondor's strings are C strings).
"""

from __future__ import annotations

__all__ = ["NulEscape", "Token", "integer", "join_strings", "negative", "scan", "tokenize", "unescape"]

import re
from collections.abc import Callable
from typing import Final

from ._values import ClassAdSyntaxError, text_of_bytes

Token = tuple[str, object, int]

# A // comment ends at a newline, which it needs: at the very end of the text it is no comment
# (the official parser refuses ``a // c`` but takes ``a // c\n``).
_LINE_COMMENT = r"//[^\n]*\n"
_BLOCK_COMMENT = r"/\*.*?\*/"
_REAL = r"(?:\d+\.\d+|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"
# an integer right before a '.' that starts no fraction ("3.a", "3.e5") is no token: the official
# lexer reads such text as a broken real
_INT = r"0(?![0-9.])|[1-9]\d*+(?!\.)"
# a leading zero is refused (HTCondor reads ClassAds with its old semantics: no octal), but not after a
# minus that starts a literal, where the official lexer takes "-017" whole, as decimal -17 (octal digits
# only, and no fraction or exponent after them: those make "-09" and "-07." no token)
_ZEROED = r"0[0-7]+(?![0-9.eE])"
_NEG = r"-(?:" + _REAL + "|" + _INT + "|" + _ZEROED + ")"
#: ``?`` and ``:`` with only white space between are one token, the elvis operator (HTCondor's lexer)
_OP = r"\|\||&&|=\?=|=!=|==|!=|<=|>=|<<|>>>|>>|\?[ \t\n\v\f\r]*:|[-+*/%^~!?:(){}\[\],;.<>=|&]"
# Which comments may still close where a match starts: (block, line).  Past the last "*/" no "/*"
# opens a comment that ends, and past the last newline no "//" does; there the patterns leave the
# comment out, because each failed try would read on to the end of the text (quadratic in all).
Closable = tuple[bool, bool]
_KEYS: Final[tuple[Closable, ...]] = ((True, True), (True, False), (False, True), (False, False))


def _blank(closable: Closable) -> str:
    comments = [c for c, on in zip((_BLOCK_COMMENT, _LINE_COMMENT), closable, strict=True) if on]
    if not comments:
        return r"\s*"
    return r"\s*(?:(?:" + "|".join(comments) + r")\s*)*"


def _token_pattern(closable: Closable) -> re.Pattern[str]:
    """One token with the blanks and comments before it (atomic: a blank is never given back)."""
    return re.compile(
        "(?P<blank>(?>" + _blank(closable) + r"))(?:(?P<neg>" + _NEG + r""")
          | (?P<real>""" + _REAL + r""")
          | (?P<int>""" + _INT + r""")
          | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
          | (?P<str>"(?:[^"\\]|\\.)*")
          | (?P<qname>'(?:[^'\\]|\\.)*')
          | (?P<op>""" + _OP + "))", re.VERBOSE | re.DOTALL)


def _scan_pattern(closable: Closable) -> re.Pattern[str]:
    r"""The same alternatives, each token followed by its blanks (atomic), so that every match starts
    where the last one ended and ``findall`` never skips; ``[\s\S]+`` (outside the group: it yields
    "") takes the rest at a character that starts no token.  Names and strings come first (the
    commonest; no other token starts with their first character); numbers keep their order before
    the operators, as in the token pattern."""
    return re.compile(
        r"""([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|""" + _NEG + "|" + _REAL + "|"
        + _INT + "|" + _OP + ")(?>" + _blank(closable) + r")|[\s\S]+|\Z", re.DOTALL)


class _Compiled(dict[Closable, re.Pattern[str]]):
    """A pattern per :data:`Closable` key, compiled when first asked for: compiling all twelve would
    lengthen every import of the package (every engine's start-up), and most texts need one or two."""

    def __init__(self, make: Callable[[Closable], re.Pattern[str]]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Closable) -> re.Pattern[str]:
        pattern = self[key] = self.make(key)
        return pattern


def _skip_pattern(closable: Closable) -> re.Pattern[str]:
    return re.compile(_blank(closable), re.DOTALL)


_TOKENS: Final = _Compiled(_token_pattern)
_SCANS: Final = _Compiled(_scan_pattern)
_SKIPS: Final = _Compiled(_skip_pattern)
_EVERY_COMMENT_CLOSES: Final[Closable] = (True, True)
_NUMBER: Final = re.compile(_REAL + "|" + _INT)

_ESCAPES: Final = {"n": "\n", "t": "\t", "b": "\b", "f": "\f", "r": "\r", "a": "\a", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'"}
_ESCAPE: Final = re.compile(r"\\([0-3][0-7]{0,2}|[4-7][0-7]?|.)", re.DOTALL)
# An octal escape is a byte of the string (HTCondor's strings are bytes, read as UTF-8): one past
# ASCII is held as Python's surrogate escape until the whole body is decoded.
_RAW_BYTE: Final = re.compile("[\udc80-\udcff]")


class NulEscape(ValueError):
    """A ``\\0`` escape: the official lexer refuses a string holding a NUL (a C string ends there).
    The parsers turn it into a ``ClassAdSyntaxError`` placed at the string."""


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if "0" <= code[0] <= "7":
        byte = int(code, 8)
        if byte == 0:
            raise NulEscape(match.group(0))
        return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)
    return _ESCAPES.get(code, code)


def unescape(body: str) -> str:
    """Resolve the backslash escapes of a string literal's body; octal escapes are UTF-8 bytes
    (``"\\342\\200\\223"`` is ``"\u2013"``), and a byte that is no part of a valid sequence stays
    the character of its value (``"\\344"`` is ``"\xe4"``).  Raises ``NulEscape`` for ``\\0``."""
    if "\\" not in body:
        return body
    text = _ESCAPE.sub(_unescape_one, body)
    return text if _RAW_BYTE.search(text) is None else text_of_bytes(text.encode("utf-8", "surrogateescape"))


def _unescape_at(src: str, body: str, start: int) -> str:
    try:
        return unescape(body)
    except NulEscape as escape:
        raise ClassAdSyntaxError(f"a string may not hold a NUL character ({escape})", src, start) from None


# 2**63 has 19 digits, and a literal has no leading zero: a longer one is out of range without
# converting it (Python refuses to convert more than 4,300 digits, and it would take quadratic time).
_MAX_DIGITS: Final = 19


def integer(text: str) -> int:
    """An integer literal's value: one too big for 64 bits reads as 0, as in HTCondor."""
    if len(text) > _MAX_DIGITS:
        return 0
    value = int(text)
    return value if value < (1 << 63) else 0


def negative(digits: str) -> int:
    """The value of ``-digits`` read as one literal: -2**63 is the last that fits, below it reads 0."""
    if len(digits) > _MAX_DIGITS:
        return 0
    value = int(digits)
    return -value if value <= (1 << 63) else 0


def _cuts(src: str, pos: int, end: int) -> tuple[int, int]:
    """Where block and line comments stop being closable (``end`` when every opener closes)."""
    if src.find("/", pos, end) < 0:
        return end, end
    close = src.rfind("*/", pos, end)
    block = close + 2 if close >= 0 else pos
    if src.find("/*", block, end) < 0:
        block = end
    newline = src.rfind("\n", pos, end)
    line = newline + 1 if newline >= 0 else pos
    if src.find("//", line, end) < 0:
        line = end
    return block, line


def scan(src: str, pos: int = 0, end: int | None = None) -> list[str]:
    """The token texts of ``src[pos:end]``, then ``""``; an early ``""`` marks a character that
    starts no token (``tokenize`` says which and where)."""
    end = len(src) if end is None else end
    cuts = _cuts(src, pos, end)
    start = _SKIPS[_EVERY_COMMENT_CLOSES].match(src, pos, end).end()  # type: ignore[union-attr]
    if cuts == (end, end):
        texts: list[str] = _SCANS[_EVERY_COMMENT_CLOSES].findall(src, start, end)  # one walk in C
    else:
        texts = _scan_in_phases(src, start, end, cuts)
    if "?" in src and _SPACED_ELVIS.search(src, pos, end) is not None:
        texts = ["?:" if text[:1] == "?" and len(text) > 1 else text for text in texts]
    return texts


_SPACED_ELVIS: Final = re.compile(r"\?[ \t\n\v\f\r]+:")


def join_strings(texts: list[str]) -> list[str]:
    """Adjacent string literals as one (``"a" "b"`` is ``"ab"``): HTCondor's lexer joins their bodies
    before it reads the escapes.  ``tokenize`` joins them the same way."""
    out: list[str] = []
    for text in texts:
        if text[:1] == '"' and out and out[-1][:1] == '"':
            out[-1] = out[-1][:-1] + text[1:]
        else:
            out.append(text)
    return out


def _scan_in_phases(src: str, at: int, end: int, cuts: tuple[int, int]) -> list[str]:
    """``findall`` of the scan pattern, choosing at each token which comments may still close."""
    out: list[str] = []
    while True:
        match = _SCANS[(at < cuts[0], at < cuts[1])].match(src, at, end)
        assert match is not None  # the pattern matches anywhere (``[\s\S]+|\Z``)
        text = match.group(1)
        out.append(text or "")
        if text is None:
            if match.end() > at:
                out.append("")  # junk to the end, then the end itself, as findall gives them
            return out
        at = match.end()


def tokenize(src: str, pos: int = 0, end: int | None = None, limit: int | None = None) -> list[Token]:
    """Split ``src[pos:end]`` into tokens (positions stay absolute); raise ClassAdSyntaxError at the
    first character that starts none.  With ``limit``, stop after that many tokens (an error report
    needs the tokens up to its spot only; the list then ends without ``eof``).

    One anchored match per token: a search (``findall``) would retry at every later position after a
    character that starts no token, each try reading on to the end (quadratic in trailing blanks)."""
    end = len(src) if end is None else end
    cuts = _cuts(src, pos, end)
    tokens: list[Token] = []
    append = tokens.append
    joined = ""  # the raw body of the last string literal (adjacent literals join before escapes)
    while (m := _TOKENS[(pos < cuts[0], pos < cuts[1])].match(src, pos, end)) is not None:
        if limit is not None and len(tokens) >= limit:
            return tokens
        kind = m.lastgroup
        start = m.start(kind)  # type: ignore[arg-type]
        text = m.group(kind)  # type: ignore[arg-type]
        if kind == "name":
            lowered = text.lower()
            append(("op", lowered, start) if lowered in {"is", "isnt"} else ("name", text, start))
        elif kind == "op":
            append(("op", "?:" if text[0] == "?" and len(text) > 1 else text, start))
        elif kind == "int":
            append(("int", integer(text), start))
        elif kind == "real":
            append(("real", float(text), start))
        elif kind == "str":
            if tokens and tokens[-1][0] == "str":
                joined = f"{joined}{text[1:-1]}"  # adjacent literals are one string
                tokens[-1] = ("str", _unescape_at(src, joined, tokens[-1][2]), tokens[-1][2])
            else:
                joined = text[1:-1]
                append(("str", _unescape_at(src, joined, start), start))
        elif kind == "qname":
            append(("qname", _unescape_at(src, text[1:-1], start), start))
        else:
            _negative(src, text, start, tokens)
        pos = m.end()
    rest = _SKIPS[(pos < cuts[0], pos < cuts[1])].match(src, pos, end)
    if rest is not None and rest.end() < end:
        _fail(src, rest.end())
    append(("eof", None, end))
    return tokens


def _negative(src: str, text: str, start: int, tokens: list[Token]) -> None:
    """"-5": a negative literal where an operand may start, else binary minus and 5."""
    number = text[1:]
    is_int = _INT_ONLY.match(number) is not None or (number[:1] == "0" and number.isdigit())
    if _after_operand(tokens):
        if number[:1] == "0" and number[1:2].isdigit():  # "07" on its own: a leading zero
            raise ClassAdSyntaxError("malformed number", src, start + 1)
        tokens.append(("op", "-", start))
        tokens.append(("int", integer(number), start + 1) if is_int else ("real", float(number), start + 1))
    elif is_int:
        tokens.append(("int", negative(number), start))
    else:
        tokens.append(("real", -float(number), start))


_INT_ONLY: Final = re.compile(r"(?:" + _INT + r")\Z")


def _after_operand(tokens: list[Token]) -> bool:
    """Whether a '-' here is binary: it follows something that ends an operand."""
    if not tokens:
        return False
    kind, value, _ = tokens[-1]
    return kind != "op" or value in (")", "]", "}")


def _fail(src: str, pos: int) -> None:
    char = src[pos]
    if char == '"':
        raise ClassAdSyntaxError("unterminated string", src, pos)
    if src.startswith("/*", pos):
        raise ClassAdSyntaxError("unterminated comment", src, pos)
    if char.isdigit():
        raise ClassAdSyntaxError("malformed number", src, pos)
    raise ClassAdSyntaxError(f"unexpected character {char!r}", src, pos)
