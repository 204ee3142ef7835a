"""Language points, each written from the ClassAd manual (or HTCondor's own function
tests) and checked against the official library (``classad2``) where it is installed."""

from __future__ import annotations

import calendar
import importlib
import math
import os
import subprocess
import sys
import time
from typing import Any

import _differential
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.classad._convert import to_expr
from sheaf.classad._timetext import format_reltime_literal, parse_reltime

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")


def _oracle() -> Any:
    try:
        importlib.import_module("htcondor2")  # classad2 needs it imported first
        return importlib.import_module("classad2")
    except ImportError:
        return None


ORACLE = _oracle()


def agrees_with_oracle(expr: str, value: Any, *ads: str | None) -> bool:
    """Whether the official library gives ``value`` too (compared as the differential test does)."""
    import _oracle_worker  # here: it imports the official library
    theirs = ORACLE.ExprTree(expr).eval(*[ORACLE.ClassAd(ad) for ad in ads if ad])
    return _differential.same(_differential.normalise(value), _oracle_worker.normalise(theirs))


def assert_refused(text: str) -> None:
    """``text`` is a syntax error for sheaf, and for the official library where it is installed."""
    with pytest.raises(classad.ClassAdSyntaxError):
        classad.parse(text)
    if ORACLE is not None:
        with pytest.raises(Exception):  # noqa: B017  (the binding's own exception class)
            ORACLE.ExprTree(text)


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


@pytest.mark.parametrize(("text", "value"), [
    ("-07", -7), ("-017", -17), ("-00", 0), ("(-07)", -7), ("1+-07", -6), ("-07 + 1", -6), ("{-07}", [-7]),
    ("[a = -010].a", -10), ("-07.5", -7.5), ("-07e1", -70.0),
])
def test_a_minus_that_starts_a_literal_takes_leading_zeros(text: str, value: Any) -> None:
    """HTCondor's lexer reads "-017" where an operand starts as one decimal literal, though "017" alone
    (a leading zero) is refused."""
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, classad.evaluate(text))


@pytest.mark.parametrize("text", ["07", "1-07", "1 -07", "a-07", "-08", "-07.", "- 07", "[a = 1; b = a-07]"])
def test_a_leading_zero_anywhere_else_is_refused(text: str) -> None:
    assert_refused(text)


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


@pytest.mark.parametrize(("line", "value"), [
    ('a = "C:\\work\\"', "C:\\work\\"),           # the quote ending the line closes the string
    ('a = strcat("x", "e\\")', None),                 # (not the last token: ")" follows)
    ('a = nosuch ?: "e\\"', "e\\"),
    ('a = "q\\"x\\"', 'q"x\\'),                     # a quote after a backslash mid-line is the string's
])
def test_old_syntax_string_ending_in_a_backslash(line: str, value: str | None) -> None:
    """HTCondor's old lexer: a quote after a backslash is part of the string, unless the line ends
    there -- then the string ends with the backslash (a Windows directory, ``"C:\\work\\"``)."""
    if value is None:
        with pytest.raises(classad.ClassAdSyntaxError):
            ClassAd.parse_old(line)
        return
    for text in (line, line + "\n", "z = 1\n" + line + "\nw = 2\n"):
        ad = ClassAd.parse_old(text)
        assert ad.eval("a") == value
        assert ClassAd.parse_old(ad.unparse_old()) == ad  # written back the old way, read back
        if ORACLE is not None:
            assert ORACLE.parseOne(text, parser=ORACLE.Parser.Old).eval("a") == value
    with pytest.raises(classad.ClassAdSyntaxError):
        ClassAd.parse_old(line + " ")  # a space after it: the quote is the string's, never closed

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


# -- relative times with fractions of a second ----------------------------------------------------

@pytest.mark.parametrize(("text", "secs", "written"), [
    # the manual: "[-]days+hh:mm:ss" or fields with units; the seconds may have a fraction
    ('relTime("2+25:14:16.123")', 263656.123, 'relTime("3+01:14:16.123")'),
    ('relTime("1d2h3m4.5s")', 93784.5, 'relTime("1+02:03:4.5")'),
    ('relTime("4.5")', 4.5, 'relTime("4.5")'),
    ('relTime(".5")', 0.5, 'relTime("0.5")'),
    ('relTime("01:02:03.5")', 3723.5, 'relTime("01:02:3.5")'),
    ('relTime("-1+00:00:00.25")', -86400.25, 'relTime("-1+00:00:0.25")'),
    ('relTime("+1:00")', 60.0, 'relTime("01:00")'),
])
def test_reltime_fractions_read_and_written(text: str, secs: float, written: str) -> None:
    expr = classad.parse(text)
    assert classad.evaluate(expr) == secs
    assert classad.unparse(expr) == written           # as HTCondor writes it
    assert classad.parse(written) == expr             # and it reads back
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == secs
        assert str(ORACLE.ExprTree(text)) == written


@pytest.mark.parametrize("text", ['relTime("1:2.5:3")', 'relTime("5.")', 'relTime("1.5m")', 'relTime("1e3")'])
def test_reltime_fraction_only_in_the_seconds(text: str) -> None:
    assert_refused(text)


def test_reltime_text_reads_back_exactly_where_htcondor_loses_digits() -> None:
    expr = classad.parse('relTime("16.1234567")')  # HTCondor writes 16.1235 (six digits of %g)
    assert classad.parse(classad.unparse(expr)) == expr


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False))
def test_any_reltime_literal_reads_back(secs: float) -> None:
    text = format_reltime_literal(secs)
    assert parse_reltime(text) == secs, text


# -- CurrentTime -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "my", "target"), [
    ("CurrentTime", "[a = 1]", None), ("CURRENTTIME", "[a = 1]", None), ("a", "[a = CurrentTime]", None),
    ("TARGET.CurrentTime", "[a = 1]", "[b = 1]"), ("nested.CurrentTime", "[nested = [x = 1]]", None),
])
def test_current_time_in_compat_mode_is_now(expr: str, my: str, target: str | None) -> None:
    # the manual: "all ClassAds have an implicit CurrentTime attribute, with a value of time()"
    before = int(time.time())
    value = classad.evaluate(expr, my=my, target=target)
    assert type(value) is int and before <= value <= int(time.time())
    assert classad.evaluate(expr, my=my, target=target, strict=True) is classad.UNDEFINED
    if ORACLE is not None:
        theirs = ORACLE.ExprTree(expr).eval(*[ORACLE.ClassAd(ad) for ad in (my, target) if ad])
        assert abs(theirs - value) <= 5


def test_current_time_defined_in_the_ad_wins_and_no_ad_has_none() -> None:
    assert classad.evaluate("CurrentTime", my="[CurrentTime = 5]") == 5
    assert classad.evaluate("CurrentTime") is classad.UNDEFINED


# -- evalInEachContext / countMatches with an attribute reference ------------------------------------

JOBS = ("[job1 = [Prio = 2; task = 1]; job2 = [Prio = 3; task = 2]; joblist = {job1, job2};"
        " jobtest = Prio > 2]")
GPUS = "e = p > 1; f = p + k; k = 1; l = {[p = 1], [p = 2], [p = 3; k = 5]}"


@pytest.mark.parametrize(("expr", "ad", "value"), [
    ("countMatches(e, l)", f"[{GPUS}]", 2),                  # e's expression, in each listed ad
    ("countMatches(MY.e, MY.l)", f"[{GPUS}]", 2),
    ("evalInEachContext(f, l)", f"[{GPUS}]", [2, 3, 8]),     # the listed ad first, then outwards
    ("evalInEachContext(nested.e, l)", f"[{GPUS}; nested = [e = p * 2]]", [2, 4, 6]),
    ("countMatches(p > 1, l)", f"[{GPUS}]", 2),              # not a reference: unchanged
    ("evalInEachContext(q, l)", f"[{GPUS}]", [classad.UNDEFINED] * 3),  # no such attribute
    # HTCondor's own test (OTEST_Old_Classads): integers count as true
    ("countMatches(task, joblist)", JOBS, 2),
    ("countMatches(jobtest, joblist)", JOBS, 1),
])
def test_in_each_context_reads_an_attribute_reference(expr: str, ad: str, value: Any) -> None:
    assert classad.evaluate(expr, my=ad) == value
    if ORACLE is not None:
        assert agrees_with_oracle(expr, value, ad)


def test_in_each_context_reference_falls_back_to_target_in_compat_mode() -> None:
    my, target = "[e = p + f; l = {[p = 1], [p = 2]}]", "[f = 10]"
    assert classad.evaluate("evalInEachContext(e, l)", my=my, target=target) == [11, 12]
    assert classad.evaluate("evalInEachContext(e, l)", my=my, target=target, strict=True) == [
        classad.UNDEFINED, classad.UNDEFINED]


# -- unresolved() ------------------------------------------------------------------------------------

REQS = '[Requirements = OpSys == "LINUX" && TARGET.Arch == "ARM" && Cpus >= RequestCpus; RequestCpus = 1]'


@pytest.mark.parametrize(("expr", "ad", "value"), [
    ("unresolved(Requirements)", REQS, "Cpus,OpSys,Arch"),  # the manual's example (set order, no case)
    ('unresolved(Requirements, "^OpSys")', '[Requirements = OpSys == "LINUX" && Arch == "ARM"]', True),
    ('unresolved(Requirements, "OpSys.+")', '[Requirements = OpSys == "LINUX" && Arch == "ARM"]', False),
    ("unresolved(a)", "[a = x]", "x"),
    ('unresolved(a, "X")', "[a = x]", True),                  # caseless
    ("unresolved(a)", "[a = z + x + b; b = w]", "w,x,z"),     # followed through b, sorted
    ("unresolved(a)", "[a = X + x]", "X"),                    # one name, its first spelling
    ("unresolved(a)", "[a = n.q; n = [r = 1]]", "q"),
    ("unresolved(a)", "[a = strcat(x, y)]", "x,y"),
    ("unresolved(a)", "[a = 1]", ""),
    ("unresolved(a)", "[a = x + a]", ""),                     # a cycle: the walk fails
    ("unresolved(a)", "[a = CurrentTime]", ""),               # compat mode: always there
    ("unresolved(nosuch)", "[a = 1]", classad.UNDEFINED),
    ('unresolved("a")', "[a = x]", classad.ERROR),
    ("unresolved(a, 1)", "[a = x]", classad.ERROR),
    ('unresolved(a, "x", 1)', "[a = x]", classad.ERROR),
])
def test_unresolved(expr: str, ad: str, value: Any) -> None:
    assert classad.evaluate(expr, my=ad) == value
    if ORACLE is not None and value is not classad.ERROR:  # the binding raises for some of those
        assert agrees_with_oracle(expr, value, ad)


def test_unresolved_in_strict_mode() -> None:
    assert classad.evaluate("unresolved(a)", my="[a = CurrentTime]", strict=True) == "CurrentTime"
    assert classad.evaluate("unresolved(MY.a)", my="[a = x]", strict=True) is classad.UNDEFINED
    assert classad.evaluate("unresolved(MY.a)", my="[a = x]") == "x"


# -- absTime: the lenient forms the official library reads --------------------------------------------

@pytest.mark.parametrize(("text", "utc"), [
    ("2020-06-01T12Z", "2020-06-01T12:00:00"), ("2020-06-01 12Z", "2020-06-01T12:00:00"),
    ("2020-06Z", "2020-05-31T00:00:00"), ("2020Z", "2019-12-31T00:00:00"),
    ("2020-13-01Z", "2021-01-01T00:00:00"), ("2020-00-00Z", "2019-11-30T00:00:00"),
    ("20200601120000Z", "2020-06-01T12:00:00"), ("2020-06-01TZ", "2020-06-01T00:00:00"),
])
def test_lenient_abstime_forms(text: str, utc: str) -> None:
    secs = calendar.timegm(time.strptime(utc, "%Y-%m-%dT%H:%M:%S"))
    assert classad.evaluate(f'absTime("{text}")').secs == secs
    if ORACLE is not None:
        assert ORACLE.ExprTree(f'absTime("{text}")').eval().timestamp() == secs


@pytest.mark.parametrize("text", ["2020-06-01T12:00:00:1", "junk", "", "202", "2020-06-01T12:00:00+02:00 "])
def test_abstime_junk_stays_a_syntax_error(text: str) -> None:
    """Texts the official library refuses too (a digit left over, no year, blanks after a zone)."""
    assert_refused(f'absTime("{text}")')


# -- list subscripts: the index is read into a C int ---------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("({1, 2})[ceil(1e308)]", 1),        # ceil(1e308) is the 64-bit minimum, whose low 32 bits are 0
    ("({1, 2})[4294967297]", 2),         # 2**32 + 1 -> 1
    ("({1, 2})[-4294967295]", 2),
    ("({1, 2})[2147483648]", classad.ERROR),   # 2**31 -> the 32-bit minimum: out of range
    ("({1, 2})[ceil(1e18)]", classad.ERROR),
    ("({1, 2})[1]", 2), ("({1, 2})[2]", classad.ERROR), ("({1, 2})[-1]", classad.ERROR),
    ("({1, 2})[1.0]", classad.ERROR),
])
def test_a_list_index_keeps_its_low_32_bits(text: str, value: Any) -> None:
    """operators.cpp: ``val2.IsIntegerValue(index)`` with ``int index``, then the bounds check."""
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


# -- found by the differential run's Language-list constructs -----------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    # splitArb_func: empty items dropped, except between two of the same non-blank separator
    ('split("a,,b")', ["a", "", "b"]), ('split("a, ,c")', ["a", "", "c"]),
    ('split("a, ,, b")', ["a", "", "", "b"]),
    ('split(",,")', [""]), ('split(",")', []), ('split(" ")', []), ('split("a, b")', ["a", "b"]),
    ('split(";a;;b;", ";")', ["a", "", "b"]), ('split("a b", "")', ["a b"]), ('split("a\t\tb")', ["a", "b"]),
])
def test_split_keeps_an_empty_item_between_repeated_separators(text: str, value: list[str]) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value


@pytest.mark.parametrize(("text", "value"), [
    ("countMatches(relTime(5), {[p = 1]})", 0),   # a relative time is no boolean (IsBooleanValueEquiv)
    ('countMatches(q, {[q = 2.5], [q = relTime(3)], [q = 0.0], [q = "x"], [q = 1]})', 2),
    ("evalInEachContext(q, {[q = relTime(3.7)]})", [3.0]),  # stored as a literal: whole seconds
])
def test_count_matches_reads_a_relative_time_as_no_match(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


SCOPES = "[a = TARGET + 1; b = MY + 1; g = parent + 1; d = TARGET.q]"


@pytest.mark.parametrize(("expr", "target", "value"), [
    ("unresolved(b)", None, ""), ("unresolved(b)", "[q = 1]", ""),          # MY is always an ad
    ("unresolved(a)", None, "TARGET"), ("unresolved(a)", "[q = 1]", ""),    # TARGET only in a match
    ("unresolved(g)", None, "parent"), ("unresolved(g)", "[q = 1]", ""),
    ("unresolved(d)", None, "q"), ("unresolved(d)", "[q = 1]", ""),
])
def test_unresolved_counts_scope_names_that_name_an_ad_as_resolved(expr: str, target: str | None,
                                                                   value: str) -> None:
    assert classad.evaluate(expr, my=SCOPES, target=target) == value
    if ORACLE is not None:
        assert agrees_with_oracle(expr, value, SCOPES, target)


@pytest.mark.parametrize(("text", "value"), [
    # a selection from a list is a list of HTCondor's literal kind: "is" against a literal list is
    # ERROR, against a built-in's list false (the two kinds are different types there)
    ("({[a = 1]}).a is {1}", classad.ERROR), ("{1} isnt ({}).Rank", classad.ERROR),
    ('({[a = 1]}).a is split("a")', False), ('split("a") isnt ({}).a', True),
    ('{1} is split("a")', False), ("{1} is {1}", classad.ERROR),
    ("string(({[a = 1 + 1]}).a)", "{ 2 }"),
])
def test_is_between_lists_by_their_kind(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


@pytest.mark.parametrize(("text", "value"), [
    # the separator goes before an item only once the text so far is not empty
    ('join(",", {"", "a"})', "a"), ('join(",", {"", "", "a"})', "a"), ('join(",", "", "a")', "a"),
    ('join(",", {"a", "", "b"})', "a,,b"), ('join(",", {"a", ""})', "a,"), ('join(",", {"", ""})', ""),
    ('join(false, {"", undefined, 1})', "1"), ('join(",", {"a", undefined, "b"})', "a,b"),
])
def test_join_leaves_out_separators_before_the_first_text(text: str, value: str) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value


@pytest.mark.parametrize(("text", "year"), [
    # doSplitTime reads a real into a C int: out of 32-bit range it is INT_MIN, in December 1901
    ("splitTime(3e9).Year", 1901), ("splitTime(2147483648.0).Year", 1901), ("splitTime(-1e12).Year", 1901),
    ('formatTime(1e18, "%Y")', "1901"), ("splitTime(1.5e9).Year", 2017), ("splitTime(3000000000).Year", 2065),
])
def test_a_real_time_is_read_as_a_c_int(text: str, year: Any) -> None:
    assert classad.evaluate(text) == year
    if ORACLE is not None:
        assert agrees_with_oracle(text, year)


@pytest.mark.parametrize(("text", "value"), [
    # ad["name"] hands a list literal's value back as a shared list: the built-ins' kind for "is",
    # but it still turns into text by its source
    ('{1} isnt [a = {"x"}]["a"]', True), ('[a = {1}]["a"] is split("a")', classad.ERROR),
    ('string([a = {1 + 1}]["a"])', "{ 1 + 1 }"), ('[a = {1}]["a"][0]', 1),
])
def test_a_list_read_by_subscript_is_a_shared_list(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


# -- SELF: the current ad, in both modes (classad.cpp's special names) ---------------------------------

@pytest.mark.parametrize(("expr", "value"), [
    ("v", 1), ("n.q", 5), ("n.r", 5), ("w", 4), ("SELF.a", 1), ("TARGET.t", 100),
    ("[a = 4; b = self.a].b", 4), ("evalInEachContext(self.a, {[a = 9]})", [1]),
])
@pytest.mark.parametrize("strict", [False, True])
def test_self_is_the_current_ad(expr: str, value: Any, strict: bool) -> None:
    my = "[a = 1; v = self.a; n = [a = 5; q = self.a; r = SELF.a]; w = size(Self)]"
    target = "[a = 100; t = self.a]"
    assert classad.evaluate(expr, my=my, target=target, strict=strict) == value
    if ORACLE is not None and not strict:  # the oracle's mode is fixed when it loads: compat here
        assert agrees_with_oracle(expr, value, my, target)


def test_an_attribute_named_self_hides_the_special_name() -> None:
    assert classad.evaluate("self", my="[self = 3]") == 3


# -- unresolved(): references read where the expression is defined, spelled as HTCondor spells them --

@pytest.mark.parametrize(("expr", "my", "value"), [
    ("unresolved(q.b)", "[q = [a = x; b = a]]", "x"),            # b's "a" is q's, which is x
    ("unresolved([a = x; b = a].b)", None, "x"),                  # an ad literal needs no scope
    ("unresolved([a = x].a, \"x\")", None, True),
    ("unresolved([a = error].a)", None, ""),
    ("unresolved(n)", "[n = [inner = x; up = parent.a]]", "'parent'.a,x"),  # 'parent' quoted, then sorted
])
def test_unresolved_follows_the_defining_ad(expr: str, my: str | None, value: Any) -> None:
    assert classad.evaluate(expr, my=my) == value
    if ORACLE is not None:
        assert agrees_with_oracle(expr, value, my)


# -- found by the audit against HTCondor's own tests: C's bytes, digits and doubles --------------------

@pytest.mark.parametrize(("text", "value"), [
    ('versioncmp("a²", "a3")', -113),   # versioncmp subtracts C chars, signed: 0xC2 is -62
    ('versioncmp("é", "e")', -162), ('versionLT("é", "e")', True), ('versioncmp("1é", "1")', -61),
    ('int("\u0661\u0662")', classad.ERROR),   # Arabic-Indic digits: strtod reads ASCII ones only
    ('real("\u0661\u0662")', classad.ERROR), ('stringListSum("\u0661,2")', classad.ERROR),
    ("string([])", "[  ]"), ("string({[], {}})", "{ [  ],{  } }"),  # HTCondor's empty ad: two spaces
    ("string(relTime(5) / 0)", "--24855+-3:-14:-8"),              # an infinite relative time
    ("isRelTime(relTime(-5) / 0)", True),
])
def test_c_semantics_of_the_official_library(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


def test_a_relative_time_over_zero_is_infinite() -> None:
    assert classad.evaluate("relTime(5) / 0").secs == math.inf
    assert classad.evaluate("relTime(-5) / 0").secs == -math.inf
    assert math.isnan(classad.evaluate("relTime(0) / 0").secs)


@pytest.mark.parametrize(("ad", "value"), [
    ("[x = [a = 1; a = 2].a]", "\n    [\n        a = 2\n    ].a"),
    ("[x = [A = 1; b = 0; a = 2]]", "\n    [\n        A = 2; \n        b = 0\n    ]"),
])
def test_unparse_writes_a_name_bound_twice_once(ad: str, value: str) -> None:
    """The official library keeps one binding per name: the first spelling, the last value."""
    assert classad.evaluate("unparse(x)", my=ad) == value
    if ORACLE is not None:
        assert agrees_with_oracle("unparse(x)", value, ad)


@pytest.mark.parametrize("text", ["3.a", "3.e5", "3.E2", "0.a", "-3.a", "12.x", "[a = 3.b]"])
def test_an_integer_before_a_dot_without_a_fraction_is_a_syntax_error(text: str) -> None:
    """The official lexer reads ``3.`` as a broken real; ``3 .a`` and ``3.5.a`` are selections."""
    assert_refused(text)


@pytest.mark.parametrize("text", ["3 .a", "(3).a", "3.5.a", "3e5.a", "3.0.a"])
def test_a_number_then_a_selection_is_error(text: str) -> None:
    assert classad.evaluate(text) is classad.ERROR


@pytest.mark.parametrize(("text", "value"), [
    # substr's offset and length are C ints: their low 32 bits, signed
    ('substr("abc", 4294967295)', "c"), ('substr("abc", 4294967297, 1)', "b"),
    ('substr("abc", -4294967295)', "bc"), ('substr("abcdef", 1, -4294967295)', "b"),
    ('substr("abc", 1, 2147483648)', ""), ('substr("abc", 9223372036854775807)', "c"),
    # an absTime is identical only to the same instant at the same offset; == compares instants
    ("absTime(0) is absTime(0, 3600)", False), ("absTime(0, 3600) is absTime(0, 3600)", True),
    ("absTime(0) =!= absTime(0, 3600)", True), ("absTime(0) == absTime(0, 3600)", True),
    ('absTime("2020-01-01T00:00:00Z") is absTime("2020-01-01T01:00:00+01:00")', False),
    ("identicalMember(absTime(0), {absTime(0, 3600)})", False),
    ("member(absTime(0), {absTime(0, 3600)})", True),
])
def test_c_int_offsets_and_the_identity_of_times(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)



_HANDED = '[x = [a = [b = 1]]; v = x["a"]]'


@pytest.mark.parametrize(("expr", "value"), [
    ('x["a"].b', classad.UNDEFINED),        # an ad handed out by ["name"]: .name is UNDEFINED
    ('(x["a"]).b', classad.UNDEFINED),
    ("v.b", classad.UNDEFINED),             # ... after it was bound to another name too
    ('isUndefined(x["a"].b)', True),
    ('x["a"]["b"]', 1),                     # a subscript of it, and .a.b, are 1
    ("x.a.b", 1),
    ('isClassAd(x["a"])', True),
    ("{[b = 1]}[0].b", 1),                  # an ad of a list: no such rule
])
def test_selecting_from_an_ad_a_subscript_handed_out(expr: str, value: Any) -> None:
    got = classad.evaluate(expr, ClassAd.parse(_HANDED))
    assert got is value if value is classad.UNDEFINED else got == value
    if ORACLE is not None:
        assert agrees_with_oracle(expr, got, _HANDED)


@pytest.mark.parametrize(("pattern", "target", "found"), [
    (r"(?<n>a)\k<n>", "aa", True), (r"(?'n'a)\k'n'", "aa", True), (r"(?<n>a)\k{n}", "aa", True),
    (r"(?<n>a)\g{n}", "aa", True), (r"\x{41}", "A", True), (r"\o{101}", "A", True),
    (r"\Qa.b\E", "a.b", True), (r"\Qa.b\E", "axb", False), (r"\Qa.b", "a.b", True), (r"[\Q]\E]", "]", True),
    (r"\Qa\E+", "aa", True), (r"(a)\g1", "aa", True), (r"(a)(b)\g{-1}", "abb", True),
    (r"(a)(b)\g{-2}", "aba", True), (r"(?:a)(b)\g{-1}", "abb", True), (r"\v", "\n", True),
    (r"\v", " ", False),
    (r"[\v]", "\n", True), (r"\V", "\n", False), (r"\N", "a", True), (r"\N", "\n", False),
    (r"a\Z", "a\n", True), (r"a\Z", "a\nb", False), (r"a{,3}", "aaa", False), (r"a{,3}", "a{,3}", True),
    (r"[]a]", "]", True), (r"[^]a]", "b", True), (r"[[:digit:]]+", "5", True),
])
def test_pcre_syntax_the_regex_package_reads_otherwise(pattern: str, target: str, found: bool) -> None:
    """PCRE's constructs that the ``regex`` package refuses or reads otherwise (``_pcre``), as
    HTCondor's ``regexp`` reads them."""
    expr = "regexp(p, t)"
    ad = ClassAd({"p": pattern, "t": target})
    assert classad.evaluate(expr, ad) is found
    if ORACLE is not None:
        assert ORACLE.ExprTree(expr).eval(ORACLE.ClassAd({"p": pattern, "t": target})) is found


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab.*+?()[]{}^$|\\-:", min_size=1, max_size=12).filter(lambda t: "\\E" not in t))
def test_quoted_text_matches_itself_literally(text: str) -> None:
    """``\\Q...\\E`` is literal text whatever it holds, outside a class and inside one."""
    ad = ClassAd({"p": f"^\\Q{text}\\E$", "c": f"^[\\Q{text}\\E]+$", "t": text})
    assert classad.evaluate("regexp(p, t)", ad) is True
    assert classad.evaluate("regexp(c, t)", ad) is True


@pytest.mark.parametrize(("text", "expected"), [
    ("A = 1;\nB = 2", {"A": 1, "B": 2}), ("A = 1 ;", {"A": 1}), ('A = "x;";', {"A": "x;"}),
    ("A = 1;;", {"A": 1}), ('A = "x;"', {"A": "x;"}),
])
def test_old_syntax_lines_may_end_in_semicolons(text: str, expected: dict[str, Any]) -> None:
    assert dict(ClassAd.parse_old(text)) == expected
    if ORACLE is not None:
        assert dict(ORACLE.parseOne(text, ORACLE.Parser.Old)) == expected


@pytest.mark.parametrize("text", ["[true = 1]", "[TRUE = 1]", "[error = 1]", "[undefined = 1]", "[False = 0]",
                                  "[x = [a = 'true'; true = 5]].x.a", "a.true", "MY.error", ".false",
                                  "[a = 1].undefined", "['' = 1]", "[a = 1; '' = 2]"])
def test_keywords_and_the_empty_name_are_no_attribute_names(text: str) -> None:
    """``true``, ``false``, ``undefined`` and ``error`` are literals, never bare names (quoted they are
    names), and no binding has an empty name, in HTCondor's parser."""
    assert_refused(text)


@pytest.mark.parametrize(("text", "value"), [
    ("['true' = 1].'true'", 1), ("[a = ['error' = 2]].a.'error'", 2), ("[b = 3].''", classad.UNDEFINED),
])
def test_quoted_keywords_are_names(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


def test_an_old_syntax_name_may_be_a_keyword() -> None:
    ad = ClassAd.parse_old("true = 1\nerror = 2\nfoo = true")
    assert ad["true"] == 1 and ad["error"] == 2 and ad["foo"] is True
    if ORACLE is not None:
        theirs = ORACLE.parseOne("true = 1\nerror = 2\nfoo = true", ORACLE.ParserType.Old)
        assert theirs["true"] == 1 and theirs["error"] == 2 and theirs["foo"] is True


@pytest.mark.parametrize(("text", "value"), [
    ("1 ? : 2", 1), ("x ? : 2", 2), ("[a = 1; b = 1 ? : 3].b", 1), ("undefined ?   : 7", 7),
    ("undefined ?\t\n: 7", 7), ('"a ? : b" ? : 1', "a ? : b"), ("error ? : 1", classad.ERROR),
])
def test_a_question_mark_and_colon_with_white_space_between_are_elvis(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    assert classad.evaluate(classad.unparse(classad.parse(text))) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


def test_a_comment_between_question_mark_and_colon_leaves_a_ternary_without_its_middle() -> None:
    assert_refused("true ? /* c */ : 2")


@pytest.mark.parametrize(("text", "value"), [
    ('userMap(error, "u")', classad.ERROR), ('userMap("m", error)', classad.ERROR),
    ('userMap(error, "u", "p", 5)', classad.ERROR), ('userMap("m", "u", "p", error)', classad.ERROR),
    ('userMap("m", "u", error)', classad.UNDEFINED), ('userMap(1, "u")', classad.UNDEFINED),
    ('userMap(undefined, "u", "p", 5)', 5), ('userMap("m", "u", "p", 7)', 7), ('userMap("m")', classad.ERROR),
])
def test_user_map_with_no_map_files(text: str, value: Any) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


@pytest.mark.parametrize(("text", "value"), [
    ('[a = relTime("100000000000"); b = unparse(a)].b', 'relTime("-24855+-3:-14:-8")'),
    ('[a = relTime("2147483648"); b = unparse(a)].b', 'relTime("-24855+-3:-14:-8")'),
    ('[a = relTime("-2147483649"); b = unparse(a)].b', 'relTime("--24855+-3:-14:-8")'),
    ('[a = relTime("2147483647"); b = unparse(a)].b', 'relTime("24855+03:14:07")'),
    ("string(relTime(2147483648))", "--24855+-3:-14:-8"), ("string(relTime(-2147483649))", "24855+03:14:07"),
    ('string(relTime("2147483648"))', "2.147483648000000E+09"), ("string(relTime(-90061.7))", "-1+01:01:01"),
])
def test_a_relative_time_past_32_bits_is_written_as_htcondor_writes_it(text: str, value: str) -> None:
    """Written from the double, its sign first: past INT_MAX the C cast gives INT_MIN's fields."""
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert agrees_with_oracle(text, value)


@pytest.mark.parametrize(("zone", "text", "valid"), [
    ("UTC", "1969-12-31T23:59:59Z", False), ("UTC", "1969-12-31T23:59:59", False),
    ("UTC", "1969-12-31T23:59:58Z", True), ("UTC", "1970-01-01T00:59:59+01:00", True),
    ("America/New_York", "1969-12-31T18:59:59", False), ("America/New_York", "1969-12-31T23:59:59Z", True),
])
def test_an_abstime_at_mktimes_failure_value_is_refused(zone: str, text: str, valid: bool) -> None:
    """The library reads the fields as local time with mktime, and takes its -1 for a failure."""
    code = ("import sys\nfrom sheaf import classad\ntry:\n    classad.parse(sys.argv[1])\n"
            "except classad.ClassAdSyntaxError:\n    print('refused')\nelse:\n    print('read')\n")
    env = {**os.environ, "TZ": zone}
    done = subprocess.run([sys.executable, "-c", code, f'absTime("{text}")'], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == ("read" if valid else "refused")
