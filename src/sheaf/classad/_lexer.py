"""The ClassAd lexer: text in, a list of tokens out (one pass, one compiled pattern).

A token is ``(kind, value, pos)`` with ``pos`` the offset of its first character, so that every
syntax error can point at the source.  Kinds: ``int``, ``real``, ``str`` (escapes resolved), ``name``
(an identifier), ``qname`` (a 'quoted' attribute name), ``op`` (punctuation and the keywords ``is`` and
``isnt``), ``eof``.  ``true``/``false``/``undefined``/``error`` stay names: the parser decides.

A ``-`` directly followed by a number, where an operand may start (not after an operand), is part of
the number (``x * -1`` holds the literal -1, ``- 1`` is unary minus on 1), as in HTCondor's lexer;
this matters for ``?:`` (``a ?: -1`` is valid, ``a ?: - 1`` is not) and for unparsing.
HTCondor's rules kept here: integers have no leading zero (``007`` is not a number), an integer too
big for 64 bits reads as 0 (what the official parser does), reals need a digit after the point or
exponent, an unknown escape keeps the character (``"\\x41"`` is ``x41``), octal escapes ``\\101`` work.
"""

from __future__ import annotations

__all__ = ["Token", "tokenize"]

import re
from typing import Final

from ._values import ClassAdSyntaxError

Token = tuple[str, object, int]

_OPS: Final = sorted(
    ["||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "<", "<=", ">", ">=", "<<", ">>", ">>>", "+", "-",
     "*", "/", "%", "!", "~", "?", ":", "?:", "(", ")", "[", "]", "{", "}", ",", ";", ".", "="],
    key=len, reverse=True)

_TOKEN: Final = re.compile(
    r"""(?P<ws>(?:\s+|//[^\n]*|/\*.*?\*/)+)
      | (?P<real>(?:\d+\.\d+|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
      | (?P<int>0(?![0-9])|[1-9]\d*)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<qname>'(?:[^'\\]|\\.)*')
      | (?P<op>""" + "|".join(re.escape(op) for op in _OPS) + r")",
    re.VERBOSE | re.DOTALL)

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


def _integer(text: str) -> int:
    value = int(text)
    return value if value < (1 << 63) else 0


def tokenize(src: str, pos: int = 0, end: int | None = None) -> list[Token]:
    """Split ``src[pos:end]`` into tokens (positions stay absolute); raise ClassAdSyntaxError at the
    first character that starts none."""
    tokens: list[Token] = []
    append = tokens.append
    end = len(src) if end is None else end
    match = _TOKEN.match
    while pos < end:
        m = match(src, pos, end)
        if m is None:
            _fail(src, pos)
        kind = m.lastgroup
        text = m.group()
        if kind == "name":
            lowered = text.lower()
            append(("op", lowered, pos) if lowered in ("is", "isnt") else ("name", text, pos))
        elif kind == "op":
            if text == "-" and _starts_number(src, pos + 1, end) and not _after_operand(tokens):
                m = _TOKEN.match(src, pos + 1, end)  # a negative literal, as HTCondor's lexer reads it
                assert m is not None
                number = m.group()
                if m.lastgroup == "int":
                    value = int(number)
                    append(("int", -value if value <= (1 << 63) else 0, pos))
                else:
                    append(("real", -float(number), pos))
                pos = m.end()
                continue
            append(("op", text, pos))
        elif kind == "int":
            append(("int", _integer(text), pos))
        elif kind == "real":
            append(("real", float(text), pos))
        elif kind == "str":
            append(("str", unescape(text[1:-1]), pos))
        elif kind == "qname":
            append(("qname", unescape(text[1:-1]), pos))
        pos = m.end()
    append(("eof", None, end))
    return tokens


def _starts_number(src: str, pos: int, end: int) -> bool:
    m = _TOKEN.match(src, pos, end)
    return m is not None and m.lastgroup in ("int", "real")


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
