"""The ClassAd language on fixed examples: the Pegasus manual, scopes, literals, errors, the public
surface."""

from __future__ import annotations

import pytest

from sheaf import classad
from sheaf.classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, evaluate, parse, unparse

USCMS_SITE = '''MyType = "Machine"
TargetType = "Job"
Name = "uw-hep-USCMS-Site"
StartdIpAddr = "<127.0.0.1:1234>"
UpdateSequenceNumber = 1057960761
Rank = 0.000000
CurrentRank = 0.000000
WantAdRevaluate = True
CurMatches = 0
MaxMatches = 2
Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)
Is_USCMS_Site = True
MatchmakerURL = "ramen.fnal.gov:/jobmanager-condor"
SiteEnvironment = "SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;SiteVDTLocation=/dpe;SiteWorkingArea=/scratch/work;SiteExportDir=/scratch/export"
MOP_SITE="uw-hep"
'''  # noqa: E501  (the Pegasus manual's site ad, verbatim)


def test_public_surface_is_pinned() -> None:
    language = {"AbsTime", "ClassAd", "ClassAdSyntaxError", "ERROR", "Expr", "RelTime", "UNDEFINED",
                "evaluate", "parse", "unparse"}
    assert language <= set(classad.__all__)
    assert all(hasattr(classad, name) for name in classad.__all__)


def test_uscms_site_ad_matches_only_jobs_that_want_the_matchmaker() -> None:
    site = ClassAd.parse_old(USCMS_SITE)
    assert site["MaxMatches"] == 2 and site["mop_site"] == "uw-hep"
    job = ClassAd.parse('[ WANT_USCMS_MATCHMAKER = True; Requirements = (Is_USCMS_Site =?= True) ]')
    assert site.eval("Requirements", target=job) is True
    assert job.eval("Requirements", target=site) is True
    assert site.eval("Requirements", target=ClassAd()) is False
    site["CurMatches"] = 2
    assert site.eval("Requirements", target=job) is False


def test_rank_is_minus_the_fill_ratio() -> None:
    site = ClassAd.parse_old("CurMatches = 1\nMaxMatches = 4\nRank = -CurMatches/MaxMatches")
    assert site.eval("Rank") == 0  # integer division, as HTCondor
    site["MaxMatches"] = 4.0
    assert site.eval("Rank") == -0.25


@pytest.mark.parametrize(("retry", "memory"), [(None, 1024), (0, 1024), (1, 4096)])
def test_retry_memory_expression(retry: int | None, memory: int) -> None:
    expr = parse("ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)")
    job = ClassAd() if retry is None else ClassAd({"DAGNodeRetry": retry})
    assert evaluate(expr, my=job) == memory


def test_contract_examples() -> None:
    assert evaluate(parse("TARGET.Memory > 1024"), my=None, target="[Memory = 2048]") is True
    ad = ClassAd.parse("[a = 1; b = a + 1]")
    assert ad.eval("b") == 2 and ClassAd.parse_old("a = 1\nb = a + 1").eval("b") == 2
    assert evaluate("x", my="[a = 1]", target="[x = a]") == 1
    assert evaluate("x", my="[a = 1]", target="[x = a]", strict=True) is UNDEFINED


@pytest.mark.parametrize(("text", "value"), [
    ("9223372036854775807 + 1", -9223372036854775808), ("-7 / 2", -3), ("-7 % 3", -1), ("7 / 0", ERROR),
    ('"abc" == "ABC"', True), ('"abc" =?= "ABC"', False), ("undefined && false", False),
    ("error || true", ERROR), ("true || error", True), ("undefined ?: 4", 4), ("1 ? 2 : 3", 2),
    ("{1, 2, 3}[1]", 2), ('[a = 1; b = a]["B"]', 1), ("1 << 65", 2), ("-8 >>> 60", 15),
    ("1.0 / 0", ERROR), ('real("INF")', float("inf")), ("isError(nosuchfunction(1))", True),
])
def test_operator_semantics(text: str, value: object) -> None:
    result = evaluate(text)
    assert type(result) is type(value) and result == value


@pytest.mark.parametrize("ad", ["[a = a]", "[a = b; b = a]", "[a = {a}[0]]"])
def test_self_reference_is_undefined_not_a_hang(ad: str) -> None:
    assert ClassAd.parse(ad).eval("a") is UNDEFINED


def test_exponential_sharing_is_linear() -> None:
    body = "; ".join(f"a{i + 1} = a{i} + a{i}" for i in range(200))
    assert ClassAd.parse(f"[a0 = 1; {body}]").eval("a200") == 0  # 2**200 wraps to 0 in 64 bits


def test_catastrophic_regexp_backtracking_ends() -> None:
    # PCRE stops at its match limit (ERROR); sheaf's engine answers at once or times out (ERROR)
    assert evaluate('regexp("(a+)+$", "' + "a" * 40 + '!")') in (False, ERROR)
    assert evaluate('regexp("^(\\w+\\s?)*$", "' + "word " * 12 + '!")') in (False, ERROR)


def test_string_doubling_is_bounded() -> None:
    body = "; ".join(f"s{i + 1} = strcat(s{i}, s{i})" for i in range(40))
    assert ClassAd.parse(f'[s0 = "x"; {body}]').eval("s40") is ERROR  # 2**40 characters: refused


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(ClassAdSyntaxError):
        parse("(" * 166 + "1" + ")" * 166)  # the official parser's limit is 165
    assert evaluate("(" * 165 + "1" + ")" * 165) == 1
    assert evaluate("-" * 900 + "1") == 1 and evaluate(" + ".join(["1"] * 900)) == 900


def test_syntax_error_shows_line_column_and_caret() -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse("a +\n  (b * )")
    message = str(info.value)
    assert "line 2, column 8" in message and "  (b * )" in message
    assert message.splitlines()[-1].endswith("^") and isinstance(info.value, ValueError)


def test_classad_mapping_is_case_insensitive_and_keeps_case() -> None:
    ad = ClassAd.parse("[Memory = 2048; Req = Memory > 1024]")
    assert ad["memory"] == 2048 and list(ad) == ["Memory", "Req"] and "MEMORY" in ad
    assert isinstance(ad["Req"], classad.Expr) and ad.lookup("req") == parse("Memory > 1024")
    ad["memory"] = 512
    assert ad.eval("REQ") is False and list(ad) == ["Memory", "Req"]
    assert str(ad) == "[ Memory = 512; Req = Memory > 1024 ]"
    assert ClassAd.parse_old(ad.unparse_old()) == ad


def test_unparse_round_trips() -> None:
    for text in ['a =?= b ? -1 : f(x, "y\\n")[2].z', "{ 1, [ a = .b ], -(2) }", "a ?: b ?: c",
                 'absTime("2020-01-01T00:00:00Z") + relTime("1+00:00:00")']:
        assert parse(unparse(text)) == parse(text)


def test_derived_ads_share_nothing_they_change() -> None:
    """``ClassAd.derived``: a copy of a base ad with some values bound anew, in the base's places and
    spelling; writes to the base, to a derived ad or to a sibling afterwards stay in the ad written."""
    base = ClassAd.parse('[ Cmd = "/bin/true"; DAGNodeName = "x"; ClusterId = 0 ]')
    one = ClassAd.derived(base, {"dagnodename": "a", "clusterid": parse("1 + 1")})
    two = ClassAd.derived(base, {"dagnodename": "b", "clusterid": 3})
    assert one.unparse() == '[ Cmd = "/bin/true"; DAGNodeName = "a"; ClusterId = 1 + 1 ]'
    assert two.unparse() == '[ Cmd = "/bin/true"; DAGNodeName = "b"; ClusterId = 3 ]'
    one["Extra"] = 1
    base["Cmd"] = "/bin/false"
    base["New"] = 1
    del two["Cmd"]
    assert list(one) == ["Cmd", "DAGNodeName", "ClusterId", "Extra"] and one["Cmd"] == "/bin/true"
    assert list(two) == ["DAGNodeName", "ClusterId"]
    assert base.unparse() == '[ Cmd = "/bin/false"; DAGNodeName = "x"; ClusterId = 0; New = 1 ]'
