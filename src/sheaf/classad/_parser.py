"""The ClassAd parser: hand-written recursive descent, one method per grammar rule.

Every rule is ``(pos) -> (pos, node)`` over the token texts of ``_lexer.scan``.  Nodes are plain
tuples (hashable, compared structurally; ``Expr`` wraps the root):

    ("int", v) ("real", v) ("str", v) ("bool", v) ("undef",) ("error",)      literals
    ("attr", name)          unqualified reference      ("absattr", name)   ``.name`` from the root ad
    ("sel", base, name)     ``base.name``              ("sub", base, index) ``base[index]``
    ("un", op, x) ("bin", op, a, b) ("cond", c, a, b) ("elvis", a, b) ("paren", x)
    ("call", name, (args...)) ("list", (items...)) ("ad", ((name, node), ...))
    ("abstime", spelling, secs, offset) ("reltime", spelling, secs)   ``absTime("...")`` of a literal

Names keep the case they were written in; evaluation folds case.  Binary operators are parsed by
precedence climbing over ``_grammar.BINARY_LEVELS``, the same table the unparser reads.  Nesting is
bounded: brackets at most ``MAX_BRACKETS`` deep (what the official parser accepts), everything at
most ``MAX_DEPTH``; deeper text raises ``ClassAdSyntaxError`` instead of exhausting the stack.  Text
nested deeper than the process's recursion limit allows is read again under ``_stack.deep_stack``
(the limit raised while it is read, then put back).

Speed (parsing text never seen before is the hot path of reading job ads): tokens are bare strings,
with no position kept; a syntax error re-reads the text with ``_lexer.tokenize`` to place its caret
(and to report a bad character first, as a lexer would).  A leaf -- a name, a number, a string --
is looked up by its text in ``_LEAVES``, a bounded cache of ready nodes, so a name seen before costs
one dict lookup and its node (and name string) is shared; an operator's level is one lookup in
``_LEVEL_OF``, which holds every case spelling of ``is``/``isnt`` so no text is lowered.

The compiled accelerator ``_cparse`` (C, built by ``pip install`` where a compiler is found) reads the
same grammar into the same nodes, several times faster; it answers None for anything unusual --
every syntax error among them, and the rarer spellings (adjacent string literals, empty statements
in an ad) -- and this parser then reads the text (``_cparse.c`` states the contract).
``SHEAF_PURE_PYTHON=1`` in the environment, read at import, leaves the accelerator out; ``ACCELERATED``
says whether it is in use.
"""

from __future__ import annotations

__all__ = [
    "ACCELERATED", "MAX_DEPTH", "Node", "accelerator", "parse_ad", "parse_expr", "parse_old_ad", "parse_span",
]

import importlib
import os
import re
import sys
from itertools import product
from types import ModuleType
from typing import Any, Final

from ._grammar import PRECEDENCE, UNARY_OPS, UNARY_PREC
from ._lexer import NulEscape, Token, integer, join_strings, negative, scan, tokenize, unescape
from ._stack import deeper
from ._timetext import parse_abstime, parse_reltime
from ._values import ClassAdSyntaxError

Node = tuple[Any, ...]

MAX_DEPTH: Final = 1000
# Brackets -- ( { [ and call parentheses -- nest at most this deep: the official parser's limit.
MAX_BRACKETS: Final = 165

_KEYWORD_LITERALS: Final[dict[str, Node]] = {
    "true": ("bool", True), "false": ("bool", False), "undefined": ("undef",), "error": ("error",),
}


def _spellings(word: str) -> list[str]:
    """Every upper/lower case spelling of ``word`` (``is`` -> is, iS, Is, IS)."""
    return ["".join(chars) for chars in product(*((c, c.upper()) for c in word))]


_KEYWORD_OPS: Final = {spelling: word for word in ("is", "isnt") for spelling in _spellings(word)}
# ``=?=`` and ``=!=`` are other spellings of ``is`` and ``isnt`` (HTCondor unparses them so too).
_SPELLING: Final = {"=?=": "is", "=!=": "isnt", **_KEYWORD_OPS}
_LEVEL_OF: Final = {**PRECEDENCE, **{spelling: PRECEDENCE[word] for spelling, word in _KEYWORD_OPS.items()}}
_UNARY: Final = UNARY_OPS
_POSTFIX: Final = frozenset({".", "[", "?:"})
_AFTER_LEAF: Final = _POSTFIX | {"("}  # what makes a leaf more than itself
_NAME_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS: Final = frozenset("0123456789")
# The level of what may follow an operand; closers stop every operator, anything else (a "-5" to
# split, a syntax error) is sent the slow way by a level above every binary operator.
_FOLLOW_LEVEL: Final = {**_LEVEL_OF, **dict.fromkeys((")", "]", "}", ",", ";", ":", "?", ""), 0)}
_ENDS_BINDING: Final = frozenset({";", "]", ""})
_LEAVES: dict[str, Node] = {}
_LEAVES_LIMIT: Final = 16384  # leaves only: small tuples of atoms, which the GC stops tracking


def _leaf(tok: str) -> Node | None:
    """The node of a literal or attribute token (cached by its text), or None for anything else."""
    node = _LEAVES.get(tok)
    if node is None:
        node = _new_leaf(tok)
        if node is not None:
            if len(_LEAVES) >= _LEAVES_LIMIT:
                _LEAVES.clear()
            _LEAVES[tok] = node
    return node


def _new_leaf(tok: str) -> Node | None:
    first = tok[:1]
    if first in _NAME_START:
        if tok in _KEYWORD_OPS:
            return None
        return _KEYWORD_LITERALS.get(tok.lower()) or ("attr", sys.intern(tok))
    if first == '"':
        return ("str", unescape(tok[1:-1]))
    if first == "'":
        return ("attr", sys.intern(unescape(tok[1:-1])))
    if (len(tok) > 1 and first in "-.") or first in _DIGITS:
        return _number(tok)
    return None


_ADJACENT_STRINGS: Final = re.compile(r'"\s*"')


def _old_string(tok: str) -> str:
    """An old-syntax string token respelled in new syntax: there a backslash is itself, except
    before a quote (HTCondor's old lexer), so every other backslash is doubled."""
    if "\\" not in tok:
        return tok
    return tok.replace('\\"', "\0").replace("\\", "\\\\").replace("\0", '\\"')


def _number(tok: str) -> Node:
    """``12``, ``1.5e3``, ``-7``: a leading minus is part of a literal read where an operand starts."""
    minus = tok[0] == "-"
    digits = tok[1:] if minus else tok
    if digits.isdigit():
        return ("int", negative(digits) if minus else integer(digits))
    return ("real", -float(digits) if minus else float(digits))


def _time_node(name: str, text: str) -> Node | bool | None:
    """The time literal ``name("text")`` stands for; None when ``name`` is no time function, False
    when the text is not a time of its kind."""
    kind = name.lower()
    if kind == "abstime":
        parsed = parse_abstime(text)
        return False if parsed is None else ("abstime", name, parsed[0], parsed[1])
    if kind == "reltime":
        secs = parse_reltime(text)
        return False if secs is None else ("reltime", name, secs)
    return None


def _old_string_value(tok: str) -> str:
    """The value of an old-syntax string token (quotes included), as ``_new_leaf`` reads it."""
    return unescape(_old_string(tok)[1:-1])


class _Parser:
    """Parsing state: the source (for messages), its token texts and the current nesting depth."""

    __slots__ = ("brackets", "depth", "exact", "old", "span", "src", "toks")

    def __init__(self, src: str, start: int = 0, stop: int | None = None, old: bool = False) -> None:
        self.src = src
        self.span = (start, stop)
        self.old = old
        self.toks: list[str] = scan(src, start, stop)
        if '"' in src:  # rare spellings of strings, each found by a search in C before any token pass
            if old and "\\" in src[start:stop]:
                self.toks = [_old_string(tok) if tok[:1] == '"' else tok for tok in self.toks]
            elif not old and _ADJACENT_STRINGS.search(src, start, len(src) if stop is None else stop):
                self.toks = join_strings(self.toks)
        self.exact: list[Token] | None = None
        self.depth = 0
        self.brackets = 0

    # -- helpers -------------------------------------------------------------------------------
    def located(self, pos: int) -> list[Token]:
        """The tokens with their positions, up to the one after ``pos`` (only to report an error at
        ``pos``: the text past it is not read again; a bad character before it raises here)."""
        if self.exact is None or (len(self.exact) <= pos + 1 and self.exact[-1][0] != "eof"):
            self.exact = tokenize(self.src, *self.span, limit=pos + 2)
        return self.exact

    def fail(self, pos: int, message: str) -> ClassAdSyntaxError:
        return ClassAdSyntaxError(message, self.src, self.located(pos)[pos][2])

    def expect(self, pos: int, op: str, what: str) -> int:
        if self.toks[pos] != op:
            raise self.fail(pos, f"expected {what}, found {self.describe(pos)}")
        return pos + 1

    def describe(self, pos: int) -> str:
        toks = self.located(pos)
        kind, value, at = toks[pos]
        if kind == "eof":
            return "end of input"
        return repr(self.src[at:toks[pos + 1][2]].strip() or value)

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.too_deep(pos)

    def too_deep(self, pos: int) -> ClassAdSyntaxError:
        return self.fail(pos, f"expression nested deeper than {MAX_DEPTH} levels")

    def open_bracket(self, pos: int) -> None:
        self.brackets += 1
        if self.brackets > MAX_BRACKETS:
            raise self.fail(pos, f"brackets nested deeper than {MAX_BRACKETS} (the official parser's limit)")

    # -- expression := conditional ------------------------------------------------------------
    def expression(self, pos: int) -> tuple[int, Node]:
        self.depth += 1  # enter(), inlined with the first step of conditional(): this is hot
        if self.depth > MAX_DEPTH:
            raise self.too_deep(pos)
        pos, node = self.binary(pos, 1)
        if self.toks[pos] == "?":
            pos, node = self.conditional_tail(pos, node)
        self.depth -= 1
        return pos, node

    def conditional(self, pos: int) -> tuple[int, Node]:
        """conditional := binary ( '?' expression ':' conditional )?"""
        pos, test = self.binary(pos, 1)
        if self.toks[pos] == "?":
            return self.conditional_tail(pos, test)
        return pos, test

    def conditional_tail(self, pos: int, test: Node) -> tuple[int, Node]:
        pos, then = self.expression(pos + 1)
        pos = self.expect(pos, ":", "':' of the conditional")
        self.enter(pos)
        pos, orelse = self.conditional(pos)
        self.depth -= 1
        return pos, ("cond", test, then, orelse)

    def binary(self, pos: int, min_level: int) -> tuple[int, Node]:
        """binary := unary ( op binary )*  by precedence climbing: an operator of level L takes as its
        right operand only operators above L, so equal levels group to the left."""
        toks = self.toks
        tok = toks[pos]
        left = _LEAVES.get(tok)
        if left is not None and toks[pos + 1] not in _AFTER_LEAF:
            pos += 1  # the common operand, a bare leaf seen before: no call at all
        elif tok in _UNARY:
            pos, left = self.unary(pos)
        else:  # postfix(), inlined; a known leaf before '.', '[' or '?:' is its own primary
            if left is None or toks[pos + 1] == "(":
                pos, left = self.primary(pos)
            else:
                pos += 1
            if toks[pos] in _POSTFIX:
                pos, left = self.postfix_tail(pos, left)  # TARGET.Memory and the like
        chain = 0
        while True:
            op = toks[pos]
            level = _LEVEL_OF.get(op)
            if level is None:
                if op[:1] != "-":
                    break
                # "-5" right after an operand: binary minus and 5 (the lexer kept them as one token);
                # "-07" there is minus and "07", no number
                if op[1:2] == "0" and op[2:3].isdigit():
                    raise self.fail(pos, "malformed number")
                toks[pos:pos + 1] = ["-", op[1:]]
                op, level = "-", _LEVEL_OF["-"]
            if level < min_level:
                break
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.too_deep(pos)
            chain += 1
            right = _LEAVES.get(toks[pos + 1])
            if right is not None and _FOLLOW_LEVEL.get(toks[pos + 2], UNARY_PREC) <= level:
                pos += 2  # a bare leaf, and no tighter operator after it: no call at all
            else:
                pos, right = self.binary(pos + 1, level + 1)
            left = ("bin", _SPELLING.get(op, op), left, right)
        self.depth -= chain
        return pos, left

    def unary(self, pos: int) -> tuple[int, Node]:
        """unary := ('-' | '+' | '!' | '~') unary | postfix"""
        op = self.toks[pos]
        if op in _UNARY:
            self.enter(pos)
            pos, operand = self.unary(pos + 1)
            self.depth -= 1
            return pos, ("un", op, operand)
        return self.postfix(pos)

    def postfix(self, pos: int) -> tuple[int, Node]:
        """postfix := selection ( '?:' selection )*   -- HTCondor's elvis binds tighter than any
        other operator: ``-a ?: b`` is ``-(a ?: b)`` and ``a ?: b[1]`` is ``a ?: (b[1])``."""
        pos, node = self.primary(pos)
        if self.toks[pos] not in _POSTFIX:
            return pos, node  # the common case: a bare primary
        return self.postfix_tail(pos, node)

    def postfix_tail(self, pos: int, node: Node) -> tuple[int, Node]:
        toks = self.toks
        pos, node = self.selection_tail(pos, node)
        depth = self.depth
        while toks[pos] == "?:":
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
        while True:
            op = toks[pos]
            if op == ".":
                leaf = _LEAVES.get(toks[pos + 1])
                if leaf is not None and leaf[0] == "attr":
                    pos += 2
                    node = ("sel", node, leaf[1])  # attribute_name(), inlined
                else:
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
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.too_deep(pos)
        self.depth = depth
        return pos, node

    def attribute_name(self, pos: int, keywords: bool = False) -> tuple[int, str]:
        """A name, bare or quoted.  ``true``, ``false``, ``undefined`` and ``error`` are literals, never
        bare names, as in HTCondor's parser -- but an old-syntax line's name is any word
        (``keywords``)."""
        tok = self.toks[pos]
        leaf = _leaf(tok)
        if leaf is not None and leaf[0] == "attr":
            return pos + 1, leaf[1]
        if keywords and leaf is not None and tok[:1] in _NAME_START:
            return pos + 1, tok
        raise self.fail(pos, f"expected an attribute name, found {self.describe(pos)}")

    def primary(self, pos: int) -> tuple[int, Node]:
        """primary := literal | name | name '(' args ')' | '(' expr ')' | '{' list '}' | '[' ad ']'
                   | '.' name"""
        toks = self.toks
        tok = toks[pos]
        if tok == "(":
            self.open_bracket(pos)
            pos, inner = self.expression(pos + 1)
            self.brackets -= 1
            return self.expect(pos, ")", "')'"), ("paren", inner)
        leaf = _leaf(tok)
        if leaf is not None:
            if toks[pos + 1] == "(" and tok[:1] in _NAME_START:
                return self.call(pos)
            return pos + 1, leaf
        if tok == "{":
            return self.exprlist(pos)
        if tok == "[":
            return self.record(pos)
        if tok == ".":
            pos, name = self.attribute_name(pos + 1)
            return pos, ("absattr", name)
        raise self.fail(pos, f"expected an expression, found {self.describe(pos)}")

    def call(self, pos: int) -> tuple[int, Node]:
        """call := name '(' ( expression ( ',' expression )* )? ')'"""
        name = sys.intern(self.toks[pos])
        start = pos
        pos, args = self.sequence(pos + 2, ")", "')' or ',' in the argument list")
        if len(args) == 1 and args[0][0] == "str" and len(name) == 7:
            lowered = name.lower()
            if lowered in {"abstime", "reltime"}:
                return pos, self.time_literal(start, lowered, name, args[0][1])
        return pos, ("call", name, args)

    def time_literal(self, pos: int, kind: str, name: str, text: str) -> Node:
        """``absTime("...")``/``relTime("...")`` of a literal string: a time literal, read now."""
        node = _time_node(name, text)
        if not isinstance(node, tuple):
            raise self.fail(pos + 2, f"not a valid {name} string: {text!r}")
        return node

    def exprlist(self, pos: int) -> tuple[int, Node]:
        """list := '{' ( expression ( ',' expression )* )? '}'"""
        pos, items = self.sequence(pos + 1, "}", "'}' or ',' in the list")
        return pos, ("list", items)

    def sequence(self, pos: int, close: str, what: str) -> tuple[int, tuple[Node, ...]]:
        toks = self.toks
        items: list[Node] = []
        self.open_bracket(pos - 1)
        if toks[pos] == close:
            self.brackets -= 1
            return pos + 1, ()
        while True:
            pos, item = self.expression(pos)
            items.append(item)
            if toks[pos] == ",":
                pos += 1
                continue
            self.brackets -= 1
            return self.expect(pos, close, what), tuple(items)

    def record(self, pos: int) -> tuple[int, Node]:
        """ad := '[' ( binding ( ';' binding )* ';'? )? ']'   binding := name '=' expression"""
        toks = self.toks
        self.open_bracket(pos)
        pos += 1
        bindings: list[tuple[str, Node]] = []
        if toks[pos] == ";":  # empty statements: HTCondor reads "[ ;; a = 3;; ]" as [ a = 3 ]
            while toks[pos] == ";":
                pos += 1
            if toks[pos] == "]":  # but not an ad of semicolons only
                raise self.fail(pos, "expected an attribute name, found ']'")
        while toks[pos] != "]":
            pos, binding = self.binding(pos)
            bindings.append(binding)
            if toks[pos] == ";":
                while toks[pos] == ";":
                    pos += 1
            elif toks[pos] != "]":
                raise self.fail(pos, f"expected ';' or ']' in the ad, found {self.describe(pos)}")
        self.brackets -= 1
        return pos + 1, ("ad", tuple(bindings))

    def binding(self, pos: int) -> tuple[int, tuple[str, Node]]:
        pos, name = self.attribute_name(pos, keywords=self.old)
        if not name:
            raise self.fail(pos - 1, "an attribute name may not be empty")
        pos = self.expect(pos, "=", "'=' after the attribute name")
        toks = self.toks
        value = _LEAVES.get(toks[pos])
        if value is not None and toks[pos + 1] in _ENDS_BINDING:
            return pos + 1, (name, value)  # ``Cpus = 4;``: a known leaf, no expression() needed
        pos, value = self.expression(pos)
        return pos, (name, value)

    def end(self, pos: int) -> None:
        # The first "" ends the text; one before the last marks a character that starts no token.
        if pos != len(self.toks) - 1:
            raise self.fail(pos, f"unexpected {self.describe(pos)} after the expression")


def _accelerator() -> ModuleType | None:
    """The compiled parser, configured from this module's tables, or None (pure Python)."""
    if os.environ.get("SHEAF_PURE_PYTHON") == "1":
        return None
    try:  # the optional C extension, a leaf: imported by name, as it may be missing
        _cparse = importlib.import_module("._cparse", __package__)
    except ImportError:
        return None
    levels = {op: (level, _SPELLING.get(op, op)) for op, level in PRECEDENCE.items()}
    _cparse.configure(levels, _KEYWORD_LITERALS, unescape, _old_string_value, _time_node, MAX_DEPTH,
                      MAX_BRACKETS)
    module: ModuleType = _cparse
    return module


_C: Final = _accelerator()
ACCELERATED: Final = _C is not None


def accelerator() -> ModuleType | None:
    """The compiled parser module in use, or None."""
    return _C


def _placed(src: str, start: int = 0, stop: int | None = None) -> ClassAdSyntaxError:
    """A ``\\0`` escape was met: the careful tokenizer raises the error at its string."""
    tokenize(src, start, stop)
    return ClassAdSyntaxError("a string may not hold a NUL character", src, start)


def parse_expr(src: str) -> Node:
    """Parse one whole expression."""
    try:
        if _C is not None and (node := _C.expr(src)) is not None:
            return node  # type: ignore[no-any-return]
        return _python_expr(src, 0, None)
    except NulEscape:
        raise _placed(src) from None


@deeper
def _python_expr(src: str, start: int, stop: int | None) -> Node:
    """This parser's reading of an expression (``deeper``: a deep one under ``deep_stack``)."""
    parser = _Parser(src, start, stop)
    pos, node = parser.expression(0)
    parser.end(pos)
    return node


def parse_span(src: str, start: int, stop: int) -> Node:
    """Parse the (new-syntax) expression ``src[start:stop]``; errors are placed in the whole text."""
    try:
        if _C is not None and (node := _C.expr(src, start, stop)) is not None:
            return node  # type: ignore[no-any-return]
        return _python_expr(src, start, stop)
    except NulEscape:
        raise _placed(src, start, stop) from None


def parse_ad(src: str) -> Node:
    """Parse a new-syntax ad ``[ a = 1; b = a ]`` (the whole text)."""
    try:
        return _parse_ad(src)
    except NulEscape:
        raise _placed(src) from None


def _parse_ad(src: str) -> Node:
    if _C is not None and (node := _C.ad(src)) is not None:
        return node  # type: ignore[no-any-return]
    return _python_ad(src)


@deeper
def _python_ad(src: str) -> Node:
    parser = _Parser(src)
    if parser.toks[0] != "[":
        raise parser.fail(0, f"expected '[' starting a ClassAd, found {parser.describe(0)}")
    pos, node = parser.record(0)
    parser.end(pos)
    return node


# A line ending in ``\"``: in old syntax that quote may close a string whose last character is a
# backslash (``Iwd = "C:\\work\"``), which the shared scanner (and the C loader) read as an
# escaped quote; such text is parsed here, line by line.
OLD_BACKSLASH_END: Final = re.compile(r'\\"$', re.MULTILINE)


def _closes_with_backslash(line: str) -> bool:
    """Whether the quote ending ``line`` closes a string that ends in a backslash, by HTCondor's old
    lexer (``tokenizeStringOld``): a backslash is itself, and a quote after one is part of the
    string unless nothing but the end of the line follows it."""
    delim, last = "", len(line) - 1
    for pos, char in enumerate(line):
        if not delim:
            delim = char if char in "\"'" else ""
        elif char == delim and pos == last:
            return line[pos - 1] == "\\"
        elif char == delim and line[pos - 1] != "\\":
            delim = ""
    return False


def _end_string_with_backslash(node: Node) -> Node:
    """``node`` with its last string literal (the rightmost leaf: the line's last token) ending in a
    backslash; the line was parsed with a space in the backslash's place."""
    kind = node[0]
    if kind == "str":
        return ("str", node[1][:-1] + "\\")
    if kind in ("bin", "un", "cond", "elvis"):
        return (*node[:-1], _end_string_with_backslash(node[-1]))
    return node


# An old-syntax ad's lines end at a newline only, as in HTCondor: a string may hold any other
# character str.splitlines would break at (\v, \f, \x1c, \x85, \u2028, a lone \r).
OLD_LINE: Final = re.compile(r"[^\n]*\n|[^\n]+")


def parse_old_ad(src: str) -> Node:
    """Parse an old-syntax ad: one ``Name = expression`` per line; blank and ``#`` lines are skipped."""
    bindings: list[tuple[str, Node]] = []
    offset = 0
    for line in OLD_LINE.findall(src):
        text = line.strip()
        if text and not text.startswith("#"):
            bindings.append(_old_line(src, offset, line))
        offset += len(line)
    return ("ad", tuple(bindings))


def _old_line(src: str, offset: int, line: str) -> tuple[str, Node]:
    # Parse the line on its own, but report errors against the whole text (right line and column).
    stop = offset + len(line.rstrip("\r\n"))
    body = line.rstrip("\n")
    if body.endswith('\\"') and _closes_with_backslash(body):
        spaced = body[:-2] + ' "' + line[len(body):]
        name, node = _old_line(src[:stop - 2] + ' "' + src[stop:], offset, spaced)
        return name, _end_string_with_backslash(node)
    try:
        if _C is not None and (binding := _C.binding(src, offset, stop, True)) is not None:
            return binding  # type: ignore[no-any-return]
        return _python_binding(src, offset, stop)
    except NulEscape:
        raise _placed(src, offset, stop) from None


@deeper
def _python_binding(src: str, offset: int, stop: int) -> tuple[str, Node]:
    parser = _Parser(src, offset, stop, old=True)
    pos, binding = parser.binding(0)
    parser.end(pos)
    return binding
