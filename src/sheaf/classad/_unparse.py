"""Unparsing: node tuples back to text, driven by the parser's precedence table.

Two styles.  ``unparse(node)`` is for people and for round trips: ``parse(unparse(e)) == e`` always,
reals are written with full precision (``repr``), lists as ``{ 1, 2 }`` and ads as ``[ a = 1; b = 2 ]``.
``unparse(node, condor=True)`` copies the official library's unparser byte for byte, because the
``unparse()`` ClassAd function must return exactly what HTCondor returns: reals as ``%.15E``
(``1.000000000000000E+00``; zero as ``0.0``), a space before unary operators, and its multi-line
layout of lists and ads.  Parentheses written in the source are kept (the parser keeps ``paren``
nodes); a tree built by hand gets the parentheses its operators' precedence demands.
"""

from __future__ import annotations

__all__ = ["format_real", "quote_name", "quote_string", "unparse", "unparse_compact", "unparse_old"]

import math
import re
from typing import Any, Final

from ._grammar import COND_PREC, ELVIS_PREC, POSTFIX_PREC, PRECEDENCE, UNARY_PREC
from ._stack import deeper
from ._timetext import format_abstime, format_reltime_literal

Node = tuple[Any, ...]
_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED: Final = frozenset({"true", "false", "undefined", "error", "is", "isnt"})
_STRING_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b",
                          "\f": "\\f", "\a": "\\a", "\v": "\\v"}
# As HTCondor writes them: the named escapes, and another control character in octal (a NUL, which
# no literal may hold, stays as it is so that the text reads back the same)
_NEEDS_ESCAPE: Final = re.compile(r'[\\"\x01-\x1f\x7f]')


# HTCondor's own spelling (``unparse()``, ``string()`` of a list or ad) writes every byte past ASCII
# in octal too: its strings are UTF-8 bytes, and such a byte is no printable C character
# (written as what needs none: the class of the range up to U+10FFFF is slow to compile at import;
# a test compares the two over every code point)
_CONDOR_NEEDS_ESCAPE: Final = re.compile(r'[^\x00\x20\x21\x23-\x5b\x5d-\x7e]')


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char > "\x7f":
        return "".join(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass"))
    return _STRING_ESCAPES.get(char) or f"\\{ord(char):03o}"


def quote_string(text: str, condor: bool = False) -> str:
    return '"' + (_CONDOR_NEEDS_ESCAPE if condor else _NEEDS_ESCAPE).sub(_escape, text) + '"'


def quote_name(name: str, condor: bool = False) -> str:
    if _IDENT.match(name) and name.lower() not in _RESERVED and not (condor and name.lower() == "parent"):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def format_real(value: float, condor: bool = False) -> str:
    if math.isnan(value):
        return 'real("NaN")'
    if value in (math.inf, -math.inf):
        return 'real("INF")' if value > 0 else 'real("-INF")'  # the official library's spelling
    if not condor:
        return repr(value)
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return f"{value:.15E}"


def _precedence(node: Node) -> int:
    kind = node[0]
    if kind == "bin":
        return PRECEDENCE[node[1]]
    if kind == "cond":
        return COND_PREC
    if kind == "elvis":
        return ELVIS_PREC
    if kind == "un":
        return UNARY_PREC
    return POSTFIX_PREC + 1


class _Writer:
    __slots__ = ("condor", "pretty")

    def __init__(self, condor: bool, pretty: bool = True) -> None:
        self.condor = condor
        self.pretty = pretty

    def sub(self, node: Node, need: int, indent: int) -> str:
        text = self.write(node, indent)
        return f"({text})" if _precedence(node) < need else text

    def write(self, node: Node, indent: int = 0) -> str:
        kind = node[0]
        if kind == "bin":
            level = PRECEDENCE[node[1]]
            left = self.sub(node[2], level, indent)
            return f"{left} {node[1]} {self.sub(node[3], level + 1, indent)}"
        method = getattr(self, "w_" + kind)
        return str(method(node, indent))

    def w_int(self, node: Node, indent: int) -> str:
        return str(node[1])

    def w_real(self, node: Node, indent: int) -> str:
        return format_real(node[1], self.condor)

    def w_str(self, node: Node, indent: int) -> str:
        return quote_string(node[1], self.condor)

    def w_bool(self, node: Node, indent: int) -> str:
        return "true" if node[1] else "false"

    def w_undef(self, node: Node, indent: int) -> str:
        return "undefined"

    def w_error(self, node: Node, indent: int) -> str:
        return "error"

    def w_abstime(self, node: Node, indent: int) -> str:
        return f"{node[1]}({quote_string(format_abstime(node[2], node[3]))})"

    def w_reltime(self, node: Node, indent: int) -> str:
        return f"{node[1]}({quote_string(format_reltime_literal(node[2]))})"

    def w_attr(self, node: Node, indent: int) -> str:
        return quote_name(node[1], self.condor)

    def w_absattr(self, node: Node, indent: int) -> str:
        return "." + quote_name(node[1])

    def w_sel(self, node: Node, indent: int) -> str:
        return f"{self.sub(node[1], POSTFIX_PREC, indent)}.{quote_name(node[2])}"

    def w_sub(self, node: Node, indent: int) -> str:
        return f"{self.sub(node[1], POSTFIX_PREC, indent)}[{self.write(node[2], indent)}]"

    def w_un(self, node: Node, indent: int) -> str:
        operand = self.sub(node[2], UNARY_PREC, indent)
        if not self.condor and node[1] == "-" and (operand[:1].isdigit() or operand[:1] == "."):
            operand = " " + operand  # "-5" would read back as the literal -5; "- 5" is minus 5
        text = f"{node[1]}{operand}"
        return " " + text if self.condor else text

    def w_paren(self, node: Node, indent: int) -> str:
        return f"({self.write(node[1], indent)})"

    def w_cond(self, node: Node, indent: int) -> str:
        test = self.sub(node[1], COND_PREC + 1, indent)
        return f"{test} ? {self.write(node[2], indent)} : {self.sub(node[3], COND_PREC, indent)}"

    def w_elvis(self, node: Node, indent: int) -> str:
        return f"{self.sub(node[1], ELVIS_PREC, indent)} ?: {self.sub(node[2], POSTFIX_PREC, indent)}"

    def w_call(self, node: Node, indent: int) -> str:
        args = ("," if self.condor else ", ").join(self.write(arg, indent) for arg in node[2])
        return f"{node[1]}({args})"

    def w_list(self, node: Node, indent: int) -> str:
        if not self.condor:
            items = ", ".join(self.write(item) for item in node[1])
            return "{ " + items + " }" if items else "{ }"
        if not self.pretty:
            return "{ " + ",".join(self.write(item) for item in node[1]) + " }"
        inner = indent + 3
        lines = [f"\n{' ' * (inner + 3)}{self.write(item, inner + 3)}" for item in node[1]]
        return f"\n{' ' * inner}{{" + ",".join(lines) + f"\n{' ' * inner}}}"

    def w_ad(self, node: Node, indent: int) -> str:
        bindings = _bound_once(node[1]) if self.condor else node[1]
        if not self.condor or not self.pretty:
            body = "; ".join(f"{quote_name(name)} = {self.write(value)}" for name, value in bindings)
            return "[ " + body + " ]" if body else "[  ]" if self.condor else "[ ]"  # HTCondor's: 2 spaces
        inner = indent + 4
        lines = [f"\n{' ' * (inner + 4)}{quote_name(name)} = {self.write(value, inner + 4)}"
                 for name, value in bindings]
        return f"\n{' ' * inner}[" + "; ".join(lines) + f"\n{' ' * inner}]"


def _bound_once(bindings: tuple[tuple[str, Node], ...]) -> list[tuple[str, Node]]:
    """An ad literal's bindings as HTCondor holds them: a name bound again keeps its first place and
    spelling and takes the last value (``[A = 1; a = 2]`` is ``[A = 2]``)."""
    kept: dict[str, tuple[str, Node]] = {}
    for name, value in bindings:
        lname = name.lower()
        kept[lname] = (kept[lname][0] if lname in kept else name, value)
    return list(kept.values())


class _OldWriter(_Writer):
    """Old ClassAd syntax: ``=?=``/``=!=`` for the meta-comparisons, and strings as the old lexer reads
    them (a backslash is itself; only a quote is escaped)."""

    __slots__ = ()

    def write(self, node: Node, indent: int = 0) -> str:
        if node[0] == "bin" and node[1] in _OLD_SPELLING:
            level = PRECEDENCE[node[1]]
            left = self.sub(node[2], level, indent)
            return f"{left} {_OLD_SPELLING[node[1]]} {self.sub(node[3], level + 1, indent)}"
        return super().write(node, indent)

    def w_str(self, node: Node, indent: int) -> str:
        text: str = node[1]
        return '"' + text.replace('"', '\\"') + '"'


_OLD_SPELLING: Final = {"is": "=?=", "isnt": "=!="}
_OLD: Final = _OldWriter(False)
_PLAIN: Final = _Writer(False)
_CONDOR: Final = _Writer(True)
_COMPACT: Final = _Writer(True, pretty=False)


@deeper
def unparse(node: Node, condor: bool = False) -> str:
    """Text for ``node``; ``condor=True`` reproduces the official library's spelling."""
    return (_CONDOR if condor else _PLAIN).write(node)


@deeper
def unparse_old(node: Node) -> str:
    """Text for ``node`` in old ClassAd syntax (what ``ClassAd.unparse_old`` writes)."""
    return _OLD.write(node)


@deeper
def unparse_compact(node: Node) -> str:
    """The official library's one-line spelling (what ``string()`` gives for a list or an ad)."""
    return _COMPACT.write(node)
