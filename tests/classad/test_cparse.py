"""The compiled parser (``_cparse``) against the pure-Python one, on arbitrary text.

Its contract (``_cparse.c``): where it answers a node, the node equals the Python parser's; where the
Python parser raises, it answers None (and the Python parser then reports the error).  Both entry
points are compared -- expressions, new-syntax ads, old-syntax lines -- over token soups, noise and
the grammar generator's expressions.
"""

from __future__ import annotations

import gc
import re
import sys
from typing import Any

import _gen
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, ClassAdSyntaxError, _parser, parse
from sheaf.classad._lexer import NulEscape
from sheaf.classad._stack import deep_stack

cparse = pytest.importorskip("sheaf.classad._cparse")
pytestmark = pytest.mark.skipif(not _parser.ACCELERATED, reason="the compiled parser is switched off")

TOKENS = st.sampled_from([
    "a", "Memory", "TARGET", "is", "ISNT", "isNt", "true", "FALSE", "undefined", "Error", "x_1", "absTime",
    "relTime", "0", "12", "-7", "1.5", ".5e3", "-0.25", "1e3", "9223372036854775808", "-9223372036854775808",
    "99999999999999999999", "007", "1.", '"s"', '"a\\"b"', '"\\101\\n"', "'q n'", "'a\\'b'", '"2020-01-01"',
    '"1d2h"', "||", "&&", "==", "!=", "=?=", "=!=", "<=", ">=", "<<", ">>", ">>>", "?:", "?", ":", "-", "+",
    "*", "/", "%", "!", "~", "(", ")", "[", "]", "{", "}", ",", ";", ".", "=", "<", ">", "|", "&", "^",
])
BLANKS = st.sampled_from(["", " ", "\n", "\t", " /* c */ ", " // c\n", "/**/", "\x1c", "\xa0"])
NOISE = st.text(alphabet="ab01 -+*/()[]{}\"'.,;:?!=<>|&^%~@#$\n\\_eE\xe9\u0663", max_size=40)
SOUP = st.lists(st.tuples(TOKENS, BLANKS), max_size=25).map(lambda p: "".join(t + b for t, b in p))


def pure(rule: str, text: str, start: int = 0, stop: int | None = None) -> Any:
    """What the pure-Python parser makes of ``text``: a node, or the error type (rule "old": an
    old-syntax line)."""
    parser = _parser._Parser(text, start, stop, old=rule == "old")
    try:
        if rule == "expr":
            pos, node = parser.expression(0)
        elif rule == "ad":
            if parser.toks[0] != "[":
                return ClassAdSyntaxError
            pos, node = parser.record(0)
        else:
            pos, node = parser.binding(0)
        parser.end(pos)
    except NulEscape:  # a \0 escape in a string: the caller reads the text again to place the error
        return NulEscape
    except ClassAdSyntaxError:
        return ClassAdSyntaxError
    return node


def agree(text: str) -> None:
    for rule in ("expr", "ad", "binding", "old"):
        try:
            compiled = (cparse.binding(text, 0, len(text), True) if rule == "old"
                        else getattr(cparse, rule)(text))
        except NulEscape:
            compiled = NulEscape
        expected = pure(rule, text)
        if NulEscape in (compiled, expected):  # a \0 escape: refused by both, wherever each meets it
            assert compiled in (None, NulEscape) and expected in (ClassAdSyntaxError, NulEscape), (rule, text)
            continue
        if compiled is not None:
            assert compiled == expected, (rule, text)
            assert repr(compiled) == repr(expected), (rule, text)  # int vs bool vs float too
        else:
            assert expected is ClassAdSyntaxError or _falls_back_on_purpose(text), (rule, text)


def _falls_back_on_purpose(text: str) -> bool:
    """Valid text the compiled parser leaves to Python: characters outside ASCII between tokens, a
    comment opener that never closes (``a//**/b`` is ``a / b``), adjacent string literals and empty
    statements in an ad (``[ ;; a = 1 ]``)."""
    return (any(ord(c) > 127 for c in text) or "//" in text or "/*" in text
            or re.search(r'"\s*"|;\s*;|\[\s*;', text) is not None)


@settings(max_examples=400, deadline=None)
@given(SOUP)
def test_token_soup(text: str) -> None:
    agree(text)


@settings(max_examples=300, deadline=None)
@given(NOISE)
def test_noise(text: str) -> None:
    agree(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b.c", "(x)", "-1", "f(1, 2)", "{1}", "[q = 1]"]),
                          st.sampled_from(["+", "-", "*", "&&", "?:", "is", "==", "<<"])), min_size=1,
                max_size=12), st.sampled_from(["1", "-1", "- 1", "-1.5", "x"]))
def test_operator_chains(pairs: list[tuple[str, str]], last: str) -> None:
    # "-1" after an operand is binary minus and 1, at every level of the chain
    agree(" ".join(f"{a} {op}" for a, op in pairs) + last)
    agree("".join(f"{a}{op}" for a, op in pairs) + last)


def test_generated_expressions_and_ads() -> None:
    gen = _gen.Generator(11)
    parsed = 0
    for _ in range(1500):
        for rule, text in (("expr", gen.expr()), ("ad", gen.scope_ad())):
            expected = pure(rule, text)  # the generator's text is now and then not ClassAd syntax
            node = getattr(cparse, rule)(text)
            if node is None and expected is not ClassAdSyntaxError:
                assert _falls_back_on_purpose(text), text  # adjacent strings, ";;": Python's
                continue
            assert node == (None if expected is ClassAdSyntaxError else expected), text
            parsed += node is not None
    assert parsed > 2500


def test_old_syntax_lines_within_a_text() -> None:
    text = 'A = 1\nB = "x" + A\nC = -1\n'
    assert cparse.binding(text, 6, 17) == pure("binding", text, 6, 17) == ("B", pure("expr", '"x" + A'))
    assert cparse.binding(text, 18, 24) == ("C", ("int", -1))
    assert cparse.binding(text, 0, 3) is None  # "A =": not a binding


@pytest.mark.parametrize("text", [
    "a +", "(a", "[a = 1", "{1,}", 'f("', "/* a", "a // b", "a.1", "007", "a b", "absTime(\"junk\")", "",
    "`", "a.is", "- - -",
])
def test_bad_text_falls_back_and_the_error_is_pythons(text: str) -> None:
    assert cparse.expr(text) is None
    with pytest.raises(ClassAdSyntaxError):
        parse(text)


def test_nesting_near_the_limits_gives_the_same_answer() -> None:
    for depth in (164, 165, 166, 200):
        nests = ("(" * depth + "1" + ")" * depth, "{" * depth + "}" * depth, "a[" * depth + "1" + "]" * depth)
        for text in nests:
            expected = pure("expr", text)
            assert (expected is ClassAdSyntaxError) == (depth > _parser.MAX_BRACKETS)
            assert cparse.expr(text) == (None if expected is ClassAdSyntaxError else expected)
    for length in (985, 995, 1005):  # depth near MAX_DEPTH: left to Python
        chain = " + ".join(["1"] * length)
        expected = pure("expr", chain)
        with deep_stack():  # comparing trees this deep recurses past Python's default limit
            assert cparse.expr(chain) in (None, expected)
    assert pure("expr", " + ".join(["1"] * 1005)) is ClassAdSyntaxError


def test_time_literals_are_read_by_the_python_helper() -> None:
    node = cparse.expr('absTime("2020-06-01T12:00:00+02:00") + relTime("1d")')
    assert node == pure("expr", 'absTime("2020-06-01T12:00:00+02:00") + relTime("1d")')
    assert node[2][0] == "abstime" and node[3][0] == "reltime"
    assert cparse.expr('relTime("soon")') is None


def test_parsed_trees_are_left_out_of_garbage_collection() -> None:
    # trees of atoms cannot form cycles; the collector need not walk them (half the parse time)
    node = cparse.expr('TARGET.Memory >= 1024 && member("x", {1, 2.5, "y"}) ? a[1] : -b')
    assert not gc.is_tracked(node)
    ad = ClassAd.parse('[ a = 1; b = [ c = {1, 2} ] ]')
    assert ad.eval("b").eval("c") == [1, 2]
    assert sys.getrefcount(node) > 0


def test_expressions_made_in_c_are_left_to_the_collector_only_once_they_hold_a_closure() -> None:
    expr = parse('TARGET.Memory >= 2048 && Owner == "u-tracked"')
    ad = ClassAd.parse('[ Requirements = TARGET.Memory > 1 && true; Memory = 4 ]')
    lazy = ad.lookup("Requirements")
    assert not gc.is_tracked(expr) and not gc.is_tracked(lazy)
    slot = ClassAd.parse("[ Memory = 4096 ]")
    for _ in range(2):  # interpreted, then compiled
        assert expr.evaluate_in(ClassAd({"Owner": "u-tracked"}), slot) is True
        assert lazy.evaluate_in(ad, slot) is True
    assert gc.is_tracked(expr) and gc.is_tracked(lazy)
