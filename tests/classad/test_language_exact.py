"""The language points of issue 13, each written from the ClassAd manual (or HTCondor's own function
tests) and checked against the official library (``classad2``) where it is installed."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.classad._convert import to_expr

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")


def _oracle() -> Any:
    try:
        importlib.import_module("htcondor2")  # classad2 needs it imported first
        return importlib.import_module("classad2")
    except ImportError:
        return None


ORACLE = _oracle()
needs_oracle = pytest.mark.skipif(ORACLE is None, reason="the official library (htcondor) is not installed")


# -- syntax ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ('"a" "b"', "ab"),                      # adjacent literals are one string
    ('strcat("a" "b", "c")', "abc"),
    ('"a" \n  "b" "c"', "abc"),
    ('"a\\1" "01"', "aA"),                   # joined before the escapes are read: \101 is "A"
])
def test_adjacent_string_literals_are_one(text: str, value: str) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value


@pytest.mark.parametrize("text", ["[ ;; a = 3;; ]", "[ ; a = 3 ]", "[ a = 3 ; ; ]"])
def test_empty_statements_in_an_ad(text: str) -> None:
    ad = ClassAd.parse(text)
    assert dict(ad) == {"a": 3}
    if ORACLE is not None:
        assert dict(ORACLE.ClassAd(text)) == {"a": 3}


@pytest.mark.parametrize("text", ["[ ; ]", "[ ;; ]"])
def test_an_ad_of_semicolons_only_is_not_an_ad(text: str) -> None:
    with pytest.raises(classad.ClassAdSyntaxError):
        ClassAd.parse(text)


def test_errors_after_joined_strings_point_at_the_right_column() -> None:
    with pytest.raises(classad.ClassAdSyntaxError) as caught:
        classad.parse('[a = "x"  "y" "z"; b = ]')
    assert caught.value.column == 24


# -- old syntax --------------------------------------------------------------------------------------

OLD = 'a = "C:\\temp\\new"\nb = regexp("S\\1", "S\\1")\nc = x =?= y\nd = x =!= y\ne = "a\\"b"\n'


def test_old_syntax_strings_keep_backslashes() -> None:
    ad = ClassAd.parse_old(OLD)
    assert ad["a"] == "C:\\temp\\new"
    assert ad["e"] == 'a"b'  # a backslash before a quote still escapes it
    assert ad.eval("b") is classad.ERROR  # the pattern S\1 names a group that does not exist
    if ORACLE is not None:
        oracle = ORACLE.parseOne(OLD, parser=ORACLE.Parser.Old)
        assert oracle["a"] == ad["a"] and oracle["e"] == ad["e"]


def test_old_syntax_output_spells_meta_operators_and_strings_the_old_way() -> None:
    text = ClassAd.parse_old(OLD).unparse_old()
    assert "c = x =?= y\n" in text and "d = x =!= y\n" in text
    assert 'a = "C:\\temp\\new"\n' in text
    assert ClassAd.parse_old(text) == ClassAd.parse_old(OLD)  # and it reads back
    assert "x is y" in ClassAd.parse_old(OLD).unparse()  # new syntax keeps is/isnt


# -- values and functions ------------------------------------------------------------------------------

def test_minus_infinity_prints_as_the_official_library_does() -> None:
    assert classad.evaluate('string(-real("INF"))') == 'real("-INF")'
    assert classad.unparse(to_expr(float("-inf"))) == 'real("-INF")'
    if ORACLE is not None:
        assert ORACLE.ExprTree('string(-real("INF"))').eval() == 'real("-INF")'


@pytest.mark.parametrize(("text", "value"), [
    ('stringListSubsetMatch(" ", "a")', False),      # blank items only: not a subset
    ('stringListSubsetMatch(",", "a")', False),
    ('stringListSubsetMatch(" ", "a b", ",")', False),
    ('stringListISubsetMatch(" , ", "a")', False),
    ('stringListSubsetMatch("", "a")', True),        # the empty string is
    ('stringListSubsetMatch(undefined, "a")', True),
    ('stringListSubsetMatch("a,,b", "a,b,c")', True),
    ('stringListSubsetMatch("b", undefined)', False),
])
def test_string_list_subset_match_with_blank_items(text: str, value: bool) -> None:
    assert classad.evaluate(text) is value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() is value
