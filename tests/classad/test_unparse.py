"""Unparse round trips: ``parse(unparse(e)) == e`` for generated expressions and for trees built
from Python values, and the ``unparse()`` ClassAd function spells things as the official library."""

from __future__ import annotations

import math

import _gen
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, ClassAdSyntaxError, parse, unparse
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
