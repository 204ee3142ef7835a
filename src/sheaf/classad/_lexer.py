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
exponent, an unknown escape keeps the character (``"\\x41"`` is ``x41``), octal escapes ``\\101`` work.
"""

from __future__ import annotations

__all__ = ["Token", "integer", "scan", "tokenize", "unescape"]

import re
from typing import Final

from ._values import ClassAdSyntaxError

Token = tuple[str, object, int]

# A // comment ends at a newline, which it needs: at the very end of the text it is no comment
# (the official parser refuses ``a // c`` but takes ``a // c\n``).
_BLANK = r"\s*(?:(?://[^\n]*\n|/\*.*?\*/)\s*)*"
_REAL = r"(?:\d+\.\d+|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"
_INT = r"0(?![0-9])|[1-9]\d*"
# One pattern for a token with the blanks and comments before it; finditer walks the text in C.
_TOKEN: Final = re.compile(
    "(?P<blank>" + _BLANK + r""")(?:(?P<neg>-(?:""" + _REAL + "|" + _INT + r"""))
      | (?P<real>""" + _REAL + r""")
      | (?P<int>""" + _INT + r""")
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<qname>'(?:[^'\\]|\\.)*')
      | (?P<op>\|\||&&|=\?=|=!=|==|!=|<=|>=|<<|>>>|>>|\?:|[-+*/%^~!?:(){}\[\],;.<>=|&]))""",
    re.VERBOSE | re.DOTALL)
_NEG = r"-(?:" + _REAL + "|" + _INT + ")"
_OP = r"\|\||&&|=\?=|=!=|==|!=|<=|>=|<<|>>>|>>|\?:|[-+*/%^~!?:(){}\[\],;.<>=|&]"
# The same alternatives, each token followed by its blanks (atomic: a blank is never given back), so
# that every match starts where the last one ended and ``findall`` never skips; ``[\s\S]+`` (outside
# the group: it yields "") takes the rest at a character that starts no token.  Names and strings
# come first (the commonest; no other token starts with their first character); numbers keep their
# order before the operators, as in ``_TOKEN``.
_SCAN: Final = re.compile(
    r"""([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|""" + _NEG + "|" + _REAL + "|" + _INT + "|"
    + _OP + ")(?>" + _BLANK + r")|[\s\S]+|\Z", re.DOTALL)
_ONLY_BLANK: Final = re.compile(_BLANK + r"\Z", re.DOTALL)
_SKIP_BLANK: Final = re.compile(_BLANK, re.DOTALL)
_NUMBER: Final = re.compile(_REAL + "|" + _INT)

_ESCAPES: Final = {"n": "\n", "t": "\t", "b": "\b", "f": "\f", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE: Final = re.compile(r"\\([0-3][0-7]{0,2}|[4-7][0-7]?|.)", re.DOTALL)


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0].isdigit() and code[0] < "8":
        return chr(int(code, 8))
    return _ESCAPES.get(code, code)


def unescape(body: str) -> str:
    """Resolve the backslash escapes of a string literal's body."""
    return _ESCAPE.sub(_unescape_one, body) if "\\" in body else body


def integer(text: str) -> int:
    value = int(text)
    return value if value < (1 << 63) else 0


def scan(src: str, pos: int = 0, end: int | None = None) -> list[str]:
    """The token texts of ``src[pos:end]``, then ``""``; an early ``""`` marks a character that
    starts no token (``tokenize`` says which and where)."""
    end = len(src) if end is None else end
    return _SCAN.findall(src, _SKIP_BLANK.match(src, pos, end).end(), end)  # type: ignore[union-attr]


def tokenize(src: str, pos: int = 0, end: int | None = None) -> list[Token]:
    """Split ``src[pos:end]`` into tokens (positions stay absolute); raise ClassAdSyntaxError at the
    first character that starts none.

    The fast way lets ``findall`` do the scanning and recomputes positions from the lengths; if the
    pieces do not add up to the text (``findall`` skipped a character that starts no token), the
    careful way (``_tokenize_exactly``) finds and reports the spot."""
    end = len(src) if end is None else end
    tokens: list[Token] = []
    append = tokens.append
    at = pos
    for blank, neg, real, int_text, name, string, qname, op in _TOKEN.findall(src, pos, end):
        at += len(blank)
        if op:
            append(("op", op, at))
            at += len(op)
        elif name:
            lowered = name.lower()
            append(("op", lowered, at) if lowered == "is" or lowered == "isnt" else ("name", name, at))
            at += len(name)
        elif int_text:
            append(("int", integer(int_text), at))
            at += len(int_text)
        elif real:
            append(("real", float(real), at))
            at += len(real)
        elif string:
            append(("str", unescape(string[1:-1]), at))
            at += len(string)
        elif qname:
            append(("qname", unescape(qname[1:-1]), at))
            at += len(qname)
        else:
            _negative(neg, at, tokens)
            at += len(neg)
    if at != end and not _ONLY_BLANK.match(src, at, end):
        return _tokenize_exactly(src, pos, end)
    append(("eof", None, end))
    return tokens


def _tokenize_exactly(src: str, pos: int, end: int) -> list[Token]:
    tokens: list[Token] = []
    append = tokens.append
    for m in _TOKEN.finditer(src, pos, end):
        if m.start() != pos:
            break  # finditer skipped something that is not a token
        kind = m.lastgroup
        if kind == "blank":
            break  # only blanks matched: a character that starts no token follows
        start = m.start(kind)  # type: ignore[arg-type]
        text = m.group(kind)  # type: ignore[arg-type]
        if kind == "name":
            lowered = text.lower()
            append(("op", lowered, start) if lowered == "is" or lowered == "isnt" else ("name", text, start))
        elif kind == "op":
            append(("op", text, start))
        elif kind == "int":
            append(("int", integer(text), start))
        elif kind == "real":
            append(("real", float(text), start))
        elif kind == "str":
            append(("str", unescape(text[1:-1]), start))
        elif kind == "qname":
            append(("qname", unescape(text[1:-1]), start))
        else:
            _negative(text, start, tokens)
        pos = m.end()
    if pos < end and not _ONLY_BLANK.match(src, pos, end):
        blank = _SKIP_BLANK.match(src, pos, end)
        _fail(src, blank.end() if blank else pos)
    append(("eof", None, end))
    return tokens


def _negative(text: str, start: int, tokens: list[Token]) -> None:
    """"-5": a negative literal where an operand may start, else binary minus and 5."""
    number = text[1:]
    is_int = _INT_ONLY.match(number) is not None
    if _after_operand(tokens):
        tokens.append(("op", "-", start))
        tokens.append(("int", integer(number), start + 1) if is_int else ("real", float(number), start + 1))
    elif is_int:
        value = int(number)
        tokens.append(("int", -value if value <= (1 << 63) else 0, start))
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
