"""Ads read by the compiled loader: compound values parsed on first use, and nothing else different.

Errors are reported when the ad is read (a syntax error in a value never used still fails the read,
with its line and column); every value, read lazily or not, equals what the Python parser makes of
it, in both syntaxes; printing, equality, copying and evaluation see the parsed values.
"""

from __future__ import annotations

import pickle

import pytest

from sheaf.classad import ClassAd, ClassAdSyntaxError, _parser, parse
from sheaf.classad._classad import LazyExpr as LazyExprType

NEW = ('[ Owner = "alice"; Requirements = TARGET.Memory >= RequestMemory && TARGET.Arch == "X86_64";'
       ' RequestMemory = 2048; Rank = -TARGET.Memory; Path = "C:\\\\temp\\\\new"; Args = strcat("a", Owner);'
       ' Nested = [ x = 1; y = x + 1 ]; L = { 1, 2 + 3 }; T = absTime("2020-01-01T00:00:00Z") ]')
OLD = ('Owner = "alice"\nRequirements = TARGET.Memory >= RequestMemory && TARGET.Arch == "X86_64"\n'
       'RequestMemory = 2048\nPath = "C:\\temp\\new"\nPattern = regexp("S\\1", Path) || Path == "C:\\temp"\n'
       '# a comment\n\nArgs = strcat("a", Owner)\n')


def pure_ad(text: str, old: bool) -> ClassAd:
    node = _parser.parse_old_ad(text) if old else _parser.parse_ad(text)
    return ClassAd._from_node(node)


@pytest.mark.parametrize(("text", "old"), [(NEW, False), (OLD, True)])
def test_every_value_is_what_the_python_parser_reads(text: str, old: bool) -> None:
    ad = ClassAd.parse_old(text) if old else ClassAd.parse(text)
    expected = pure_ad(text, old)
    assert list(ad) == list(expected)
    for name in expected:
        assert ad.lookup(name).node == expected.lookup(name).node, name
    assert ad == expected and ad.unparse() == expected.unparse()


def test_compound_values_are_read_on_first_use_only() -> None:
    if not _parser.ACCELERATED:
        pytest.skip("the compiled parser is switched off")
    ad = ClassAd.parse(NEW)
    lazy = ad.lookup("Requirements")
    assert isinstance(lazy, LazyExprType)
    assert not isinstance(ad.lookup("RequestMemory"), LazyExprType)  # constants at once
    assert lazy.evaluate_in(ad, ClassAd.parse('[ Memory = 4096; Arch = "x86_64" ]')) is True
    assert lazy == parse('TARGET.Memory >= RequestMemory && TARGET.Arch == "X86_64"')
    assert pickle.loads(pickle.dumps(lazy)) == lazy
    assert ad.eval("Args") == "aalice" and ad.eval("L") == [1, 5] and ad.eval("Nested").eval("y") == 2


@pytest.mark.parametrize(("text", "old"), [
    ("[ a = 1; b = (2 +; c = 3 ]", False),
    ("[ a = 1;\n  unused = f(1,, 2) ]", False),
    ("A = 1\nUnused = (2 + \nC = 3\n", True),
    ("A = 1\nB = TARGET.x &&& y\n", True),
])
def test_a_syntax_error_in_a_value_never_used_fails_the_read(text: str, old: bool) -> None:
    with pytest.raises(ClassAdSyntaxError) as caught:
        ClassAd.parse_old(text) if old else ClassAd.parse(text)
    with pytest.raises(ClassAdSyntaxError) as expected:
        pure_ad(text, old)
    assert str(caught.value) == str(expected.value)  # the same message, line, column and caret
    assert caught.value.line == text.count("\n", 0, caught.value.pos) + 1 > 0


def test_old_syntax_backslashes_in_compound_values() -> None:
    ad = ClassAd.parse_old(OLD)
    assert ad.eval("Path") == "C:\\temp\\new"
    assert ad.lookup("Pattern").node == pure_ad(OLD, old=True).lookup("Pattern").node
