"""The ClassAd parser: hand-written recursive descent, one method per grammar rule.

Every rule is ``(pos) -> (pos, node)`` over the token list of ``_lexer``.  Nodes are plain tuples
(hashable, compared structurally; ``Expr`` wraps the root):

    ("int", v) ("real", v) ("str", v) ("bool", v) ("undef",) ("error",)      literals
    ("attr", name)          unqualified reference      ("absattr", name)   ``.name`` from the root ad
    ("sel", base, name)     ``base.name``              ("sub", base, index) ``base[index]``
    ("un", op, x) ("bin", op, a, b) ("cond", c, a, b) ("elvis", a, b) ("paren", x)
    ("call", name, (args...)) ("list", (items...)) ("ad", ((name, node), ...))
    ("abstime", spelling, secs, offset) ("reltime", spelling, secs)   ``absTime("...")`` of a literal

Names keep the case they were written in; evaluation folds case.  Binary operators are parsed by
precedence climbing over ``_grammar.BINARY_LEVELS``, the same table the unparser reads.  Nesting is
bounded: brackets at most ``MAX_BRACKETS`` deep (what the official parser accepts), everything at
most ``MAX_DEPTH``; deeper text raises ``ClassAdSyntaxError`` instead of exhausting the stack.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "Node", "parse_ad", "parse_expr", "parse_old_ad"]

import sys
from typing import Any, Final

from ._grammar import PRECEDENCE
from ._lexer import Token, tokenize
from ._timetext import parse_abstime, parse_reltime
from ._values import ClassAdSyntaxError

Node = tuple[Any, ...]

MAX_DEPTH: Final = 1000
# Brackets -- ( { [ and call parentheses -- nest at most this deep: the official parser's limit.
MAX_BRACKETS: Final = 165
# A nesting level costs up to six Python frames in the parser; make room for MAX_DEPTH of them.
if sys.getrecursionlimit() < 10 * MAX_DEPTH:
    sys.setrecursionlimit(10 * MAX_DEPTH)

_KEYWORD_LITERALS: Final[dict[str, Node]] = {
    "true": ("bool", True), "false": ("bool", False), "undefined": ("undef",), "error": ("error",),
}
_LEVEL_OF: Final = PRECEDENCE
_UNARY: Final = frozenset({"-", "+", "!", "~"})
_POSTFIX: Final = frozenset({".", "[", "?:"})
# ``=?=`` and ``=!=`` are other spellings of ``is`` and ``isnt`` (HTCondor unparses them so too).
_SPELLING: Final = {"=?=": "is", "=!=": "isnt"}


class _Parser:
    """Parsing state: the source (for messages), its tokens and the current nesting depth."""

    __slots__ = ("brackets", "depth", "src", "toks")

    def __init__(self, src: str, start: int = 0, stop: int | None = None) -> None:
        self.src = src
        self.toks: list[Token] = tokenize(src, start, stop)
        self.depth = 0
        self.brackets = 0

    # -- helpers -------------------------------------------------------------------------------
    def fail(self, pos: int, message: str) -> ClassAdSyntaxError:
        return ClassAdSyntaxError(message, self.src, self.toks[pos][2])

    def expect(self, pos: int, op: str, what: str) -> int:
        kind, value, _ = self.toks[pos]
        if kind != "op" or value != op:
            raise self.fail(pos, f"expected {what}, found {self.describe(pos)}")
        return pos + 1

    def describe(self, pos: int) -> str:
        kind, value, at = self.toks[pos]
        if kind == "eof":
            return "end of input"
        return repr(self.src[at:self.toks[pos + 1][2]].strip() or value)

    def enter(self, pos: int, cost: int = 1) -> None:
        self.depth += cost
        if self.depth > MAX_DEPTH:
            raise self.fail(pos, f"expression nested deeper than {MAX_DEPTH} levels")

    def open_bracket(self, pos: int) -> None:
        self.brackets += 1
        if self.brackets > MAX_BRACKETS:
            raise self.fail(pos, f"brackets nested deeper than {MAX_BRACKETS} (the official parser's limit)")

    def is_op(self, pos: int, op: str) -> bool:
        tok = self.toks[pos]
        return tok[0] == "op" and tok[1] == op

    # -- expression := conditional ------------------------------------------------------------
    def expression(self, pos: int) -> tuple[int, Node]:
        self.enter(pos)
        pos, node = self.conditional(pos)
        self.depth -= 1
        return pos, node

    def conditional(self, pos: int) -> tuple[int, Node]:
        """conditional := binary ( '?' expression ':' conditional )?"""
        pos, test = self.binary(pos, 1)
        if self.is_op(pos, "?"):
            pos, then = self.expression(pos + 1)
            pos = self.expect(pos, ":", "':' of the conditional")
            self.enter(pos)
            pos, orelse = self.conditional(pos)
            self.depth -= 1
            return pos, ("cond", test, then, orelse)
        return pos, test

    def binary(self, pos: int, min_level: int) -> tuple[int, Node]:
        """binary := unary ( op binary )*  by precedence climbing: an operator of level L takes as its
        right operand only operators above L, so equal levels group to the left."""
        pos, left = self.unary(pos)
        chain = 0
        toks = self.toks
        while True:
            kind, op, _ = toks[pos]
            level = _LEVEL_OF.get(op, 0) if kind == "op" else 0  # type: ignore[call-overload]
            if level < min_level or level == 0:
                break
            self.enter(pos)
            chain += 1
            pos, right = self.binary(pos + 1, level + 1)
            left = ("bin", _SPELLING.get(op, op), left, right)  # type: ignore[call-overload]
        self.depth -= chain
        return pos, left

    def unary(self, pos: int) -> tuple[int, Node]:
        """unary := ('-' | '+' | '!' | '~') unary | postfix"""
        kind, op, _ = self.toks[pos]
        if kind == "op" and op in _UNARY:
            self.enter(pos)
            pos, operand = self.unary(pos + 1)
            self.depth -= 1
            return pos, ("un", op, operand)
        return self.postfix(pos)

    def postfix(self, pos: int) -> tuple[int, Node]:
        """postfix := selection ( '?:' selection )*   -- HTCondor's elvis binds tighter than any
        other operator: ``-a ?: b`` is ``-(a ?: b)`` and ``a ?: b[1]`` is ``a ?: (b[1])``."""
        pos, node = self.primary(pos)
        kind, op, _ = self.toks[pos]
        if kind != "op" or op not in _POSTFIX:
            return pos, node  # the common case: a bare primary
        pos, node = self.selection_tail(pos, node)
        depth = self.depth
        while self.is_op(pos, "?:"):
            pos, orelse = self.selection(pos + 1)
            node = ("elvis", node, orelse)
            self.enter(pos)
        self.depth = depth
        return pos, node

    def selection(self, pos: int) -> tuple[int, Node]:
        """selection := primary ( '.' name | '[' expression ']' )*"""
        pos, node = self.primary(pos)
        return self.selection_tail(pos, node)

    def selection_tail(self, pos: int, node: Node) -> tuple[int, Node]:
        toks = self.toks
        depth = self.depth
        while toks[pos][0] == "op":
            op = toks[pos][1]
            if op == ".":
                pos, name = self.attribute_name(pos + 1)
                node = ("sel", node, name)
            elif op == "[":
                self.open_bracket(pos)
                pos, index = self.expression(pos + 1)
                self.brackets -= 1
                pos = self.expect(pos, "]", "']' closing the subscript")
                node = ("sub", node, index)
            else:
                break
            self.enter(pos)
        self.depth = depth
        return pos, node

    def attribute_name(self, pos: int) -> tuple[int, str]:
        kind, value, _ = self.toks[pos]
        if kind in ("name", "qname"):
            return pos + 1, str(value)
        raise self.fail(pos, f"expected an attribute name, found {self.describe(pos)}")

    def primary(self, pos: int) -> tuple[int, Node]:
        """primary := literal | name | name '(' args ')' | '(' expr ')' | '{' list '}' | '[' ad ']' | '.' name"""
        kind, value, _ = self.toks[pos]
        if kind == "name":
            if self.is_op(pos + 1, "("):
                return self.call(pos)
            literal = _KEYWORD_LITERALS.get(str(value).lower())
            return pos + 1, literal if literal is not None else ("attr", value)
        if kind in ("int", "real", "str"):
            return pos + 1, (kind, value)
        if kind == "qname":
            return pos + 1, ("attr", value)
        if kind == "op":
            if value == "(":
                self.open_bracket(pos)
                pos, inner = self.expression(pos + 1)
                self.brackets -= 1
                return self.expect(pos, ")", "')'"), ("paren", inner)
            if value == "{":
                return self.exprlist(pos)
            if value == "[":
                return self.record(pos)
            if value == ".":
                pos, name = self.attribute_name(pos + 1)
                return pos, ("absattr", name)
        raise self.fail(pos, f"expected an expression, found {self.describe(pos)}")

    def call(self, pos: int) -> tuple[int, Node]:
        """call := name '(' ( expression ( ',' expression )* )? ')'"""
        name = str(self.toks[pos][1])
        start = pos
        pos, args = self.sequence(pos + 2, ")", "')' or ',' in the argument list")
        lowered = name.lower()
        if lowered in ("abstime", "reltime") and len(args) == 1 and args[0][0] == "str":
            return pos, self.time_literal(start, lowered, name, args[0][1])
        return pos, ("call", name, args)

    def time_literal(self, pos: int, kind: str, name: str, text: str) -> Node:
        """``absTime("...")``/``relTime("...")`` of a literal string: a time literal, read now."""
        if kind == "abstime":
            parsed = parse_abstime(text)
            if parsed is not None:
                return ("abstime", name, parsed[0], parsed[1])
        else:
            secs = parse_reltime(text)
            if secs is not None:
                return ("reltime", name, secs)
        raise self.fail(pos + 2, f"not a valid {name} string: {text!r}")

    def exprlist(self, pos: int) -> tuple[int, Node]:
        """list := '{' ( expression ( ',' expression )* )? '}'"""
        pos, items = self.sequence(pos + 1, "}", "'}' or ',' in the list")
        return pos, ("list", items)

    def sequence(self, pos: int, close: str, what: str) -> tuple[int, tuple[Node, ...]]:
        items: list[Node] = []
        self.open_bracket(pos - 1)
        if self.is_op(pos, close):
            self.brackets -= 1
            return pos + 1, ()
        while True:
            pos, item = self.expression(pos)
            items.append(item)
            if self.is_op(pos, ","):
                pos += 1
                continue
            self.brackets -= 1
            return self.expect(pos, close, what), tuple(items)

    def record(self, pos: int) -> tuple[int, Node]:
        """ad := '[' ( binding ( ';' binding )* ';'? )? ']'   binding := name '=' expression"""
        self.open_bracket(pos)
        pos += 1
        bindings: list[tuple[str, Node]] = []
        while not self.is_op(pos, "]"):
            pos, binding = self.binding(pos)
            bindings.append(binding)
            if self.is_op(pos, ";"):
                pos += 1
            elif not self.is_op(pos, "]"):
                raise self.fail(pos, f"expected ';' or ']' in the ad, found {self.describe(pos)}")
        self.brackets -= 1
        return pos + 1, ("ad", tuple(bindings))

    def binding(self, pos: int) -> tuple[int, tuple[str, Node]]:
        pos, name = self.attribute_name(pos)
        pos = self.expect(pos, "=", "'=' after the attribute name")
        pos, value = self.expression(pos)
        return pos, (name, value)

    def end(self, pos: int) -> None:
        if self.toks[pos][0] != "eof":
            raise self.fail(pos, f"unexpected {self.describe(pos)} after the expression")


def parse_expr(src: str) -> Node:
    """Parse one whole expression."""
    parser = _Parser(src)
    pos, node = parser.expression(0)
    parser.end(pos)
    return node


def parse_ad(src: str) -> Node:
    """Parse a new-syntax ad ``[ a = 1; b = a ]`` (the whole text)."""
    parser = _Parser(src)
    if not parser.is_op(0, "["):
        raise parser.fail(0, f"expected '[' starting a ClassAd, found {parser.describe(0)}")
    pos, node = parser.record(0)
    parser.end(pos)
    return node


def parse_old_ad(src: str) -> Node:
    """Parse an old-syntax ad: one ``Name = expression`` per line; blank and ``#`` lines are skipped."""
    bindings: list[tuple[str, Node]] = []
    offset = 0
    for line in src.splitlines(keepends=True):
        text = line.strip()
        if text and not text.startswith("#"):
            bindings.append(_old_line(src, offset, line))
        offset += len(line)
    return ("ad", tuple(bindings))


def _old_line(src: str, offset: int, line: str) -> tuple[str, Node]:
    # Parse the line on its own, but report errors against the whole text (right line and column).
    parser = _Parser(src, offset, offset + len(line.rstrip("\r\n")))
    pos, binding = parser.binding(0)
    parser.end(pos)
    return binding
