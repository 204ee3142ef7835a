"""Unparse round trips: ``parse(unparse(e)) == e`` for generated expressions and for trees built
from Python values, and the ``unparse()`` ClassAd function spells things as the official library."""

from __future__ import annotations

import math

import _gen
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, ClassAdSyntaxError, _parser, parse, unparse
from sheaf.classad._convert import to_expr


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_round_trip_of_generated_expressions(seed: int) -> None:
    generator = _gen.Generator(seed, max_depth=6)
    for _ in range(20):
        text = generator.expr()
        try:
            expr = parse(text)
        except ClassAdSyntaxError:
            continue  # the generator also makes some invalid text (the differential test wants it)
        assert parse(unparse(expr)) == expr, text


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True), children, max_size=3),
    max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_round_trip_of_python_values(value: object) -> None:
    expr = to_expr(value)
    assert parse(unparse(expr)) == expr


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_reals_keep_every_bit(value: float) -> None:
    result = parse(unparse(to_expr(value))).evaluate()
    assert result == value and math.copysign(1.0, result) == math.copysign(1.0, value)


def test_unparse_function_matches_the_official_spelling() -> None:
    ad = ClassAd.parse('[x = -y + (3 * 2) =?= 1.5; u = unparse(x); s = "a\\"b"; v = unparse(s)]')
    assert ad.eval("u") == " -y + (3 * 2) is 1.500000000000000E+00"
    assert ad.eval("v") == '"a\\"b"'


def test_the_condor_escape_class_is_the_range_it_replaced() -> None:
    """HTCondor's spelling escapes the characters the range class ``[\\\\"\\x01-\\x1f\\x7f-\\U0010ffff]``
    names; the pattern now names those that need no escape (the range compiled 100 times slower):
    over every code point, surrogates included, the two take out the same characters."""
    import re

    from sheaf.classad._unparse import _CONDOR_NEEDS_ESCAPE

    old = re.compile('[\\\\"\\x01-\\x1f\\x7f-\\U0010ffff]')
    every = "".join(map(chr, range(0x110000)))
    kept = old.sub("", every)
    assert _CONDOR_NEEDS_ESCAPE.sub("", every) == kept and kept == "\x00 !" + "".join(
        c for c in map(chr, range(0x23, 0x7f)) if c != "\\")


def test_the_lexer_compiles_its_patterns_when_first_used() -> None:
    """The lexer's twelve patterns are compiled on first use, per comment context
    (``_lexer._Compiled``): importing the package compiles none (with the compiled parser: without
    it, the package's own constants are read by the lexer as it loads), reading a text a few."""
    import subprocess
    import sys

    code = ("from sheaf.classad import _lexer\n"
            "count = lambda: sum(map(len, (_lexer._TOKENS, _lexer._SCANS, _lexer._SKIPS)))\n"
            "before = count()\nprint(before, [t[0] for t in _lexer.tokenize('a + 1')], count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "['name', 'op', 'int', 'eof']" in out
    if _parser.ACCELERATED:
        assert out.split(" ", 1)[0] == "0"
    assert 1 <= int(out.split()[-1]) < 12
