"""Matchmaking between two ads: symmetric_match and rank, against the official library as oracle."""

from __future__ import annotations

import math
import os

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2  # noqa: F401  (must be imported before classad2)

# isort: split
import classad2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf import classad
from sheaf.classad._match import half_match, rank, symmetric_match

SITE_AD = """\
MyType = "Machine"
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
SiteEnvironment = "SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;SiteVDTLocation=/dpe"
MOP_SITE="uw-hep"
"""
DAG_JOB = ('[ WANT_USCMS_MATCHMAKER = True; Requirements = Is_USCMS_Site =?= True; '
           'Rank = -CurMatches/MaxMatches; GlobusScheduler = "$$(MatchmakerURL)" ]')


def _oracle_rank(my: classad2.ClassAd, target: classad2.ClassAd) -> float:
    """The negotiator's EvalFloat of the job's Rank: an attribute the job lacks is the slot's, in the slot."""
    if "Rank" not in my:
        if "Rank" not in target:
            return 0.0
        my, target = target, my
    value = my.lookup("Rank").eval(my, target)
    if isinstance(value, classad2.Value):  # Undefined/Error are IntEnum members: test them first
        return 0.0
    return float(value) if isinstance(value, (bool, int, float)) else 0.0


def test_seed_site_and_dag_job_match_until_the_site_is_full() -> None:
    site, job = classad.ClassAd.parse_old(SITE_AD), classad.ClassAd.parse(DAG_JOB)
    assert symmetric_match(job, site) and symmetric_match(site, job)
    assert rank(job, site) == 0.0  # -0/2 in integer arithmetic
    site["CurMatches"] = 2
    assert half_match(job, site) and not half_match(site, job)
    assert not symmetric_match(job, site)


def test_a_job_not_meant_for_the_grid_is_refused_by_the_site() -> None:
    site = classad.ClassAd.parse_old(SITE_AD)
    plain = classad.ClassAd.parse("[ Requirements = Is_USCMS_Site =?= True ]")
    assert half_match(plain, site) and not symmetric_match(plain, site)


@pytest.mark.parametrize(("requirements", "expected"), [
    ("true", True), ("false", False), ("1", True), ("0", False), ("2.5", True), ("0.0", False),
    ("undefined", False), ("error", False), ('"yes"', False), ("{1}", False), ("[a = 1]", False),
    ("relTime(1)", True), ("relTime(-1)", True), ("relTime(0.5)", True), ("relTime(0)", False),
    ("absTime(1)", False), ("absTime(0)", False),
])
def test_requirements_truth_follows_the_official_library(requirements: str, expected: bool) -> None:
    text = f"[ Requirements = {requirements} ]"
    other = "[ Requirements = true ]"
    assert symmetric_match(text, other) is expected
    assert classad2.ClassAd(text).symmetricMatch(classad2.ClassAd(other)) is expected


def test_an_ad_without_requirements_never_matches() -> None:
    assert not symmetric_match("[ a = 1 ]", "[ Requirements = true ]")
    assert not classad2.ClassAd("[ a = 1 ]").symmetricMatch(classad2.ClassAd("[ Requirements = true ]"))


@pytest.mark.parametrize(("rank_text", "expected"), [
    ("3", 3.0), ("2.5", 2.5), ("true", 1.0), ("false", 0.0), ("undefined", 0.0), ("error", 0.0),
    ('"high"', 0.0), ("TARGET.Memory / 1024", 2.0), ("TARGET.Nothing + 1", 0.0), ("{1}", 0.0),
])
def test_rank_is_read_as_a_float_as_the_negotiator_does(rank_text: str, expected: float) -> None:
    job = classad.ClassAd.parse(f"[ Rank = {rank_text} ]")
    assert rank(job, classad.ClassAd.parse("[ Memory = 2048 ]")) == expected


def test_missing_rank_is_zero() -> None:
    assert rank("[ a = 1 ]", "[ b = 2 ]") == 0.0


def test_a_job_without_rank_takes_the_slots_rank_of_it() -> None:
    """The negotiator reads a job's Rank with EvalFloat, which finds a name the job lacks in the other
    ad and evaluates it there: the slot's Rank, with the slot as MY and the job as TARGET."""
    slot = classad.ClassAd.parse('[ Rank = TARGET.Owner == "alice" ? 10 : MY.Base; Base = 3 ]')
    assert rank(classad.ClassAd.parse('[ Owner = "alice" ]'), slot) == 10.0
    assert rank(classad.ClassAd.parse('[ Owner = "bob" ]'), slot) == 3.0
    assert rank(classad.ClassAd.parse('[ Owner = "bob"; Rank = 1 ]'), slot) == 1.0  # the job's own wins


# -- differential: random pairs of ads ----------------------------------------------------------

_NAMES = ["Memory", "Cpus", "Arch", "Owner", "CurMatches", "MaxMatches", "Flag", "Missing"]
_LITERALS = st.sampled_from(["0", "1", "2", "-3", "1024", "2.5", "0.0", "true", "false", "undefined",
                             "error", '"x86_64"', '"INTEL"', '"alice"', '"ALICE"'])


def _refs() -> st.SearchStrategy[str]:
    name = st.sampled_from(_NAMES)
    return st.one_of(name, name.map("MY.{}".format), name.map("TARGET.{}".format))


def _exprs() -> st.SearchStrategy[str]:
    leaf = st.one_of(_LITERALS, _refs())
    binary = st.sampled_from(["+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=",
                              "&&", "||"])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, binary, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map("!({})".format),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
            inner.map("isUndefined({})".format),
        )

    return st.recursive(leaf, extend, max_leaves=8)


_EXPRS = _exprs()  # built once: building a recursive strategy per draw is what costs time


@st.composite
def _ads(draw: st.DrawFn) -> str:
    attrs = draw(st.dictionaries(st.sampled_from(_NAMES[:-1]), st.one_of(_LITERALS, _EXPRS), max_size=5))
    attrs["Requirements"] = draw(_EXPRS)
    if draw(st.booleans()):
        attrs["Rank"] = draw(_EXPRS)
    return "[ " + "; ".join(f"{k} = {v}" for k, v in attrs.items()) + " ]"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ads(), _ads())
def test_symmetric_match_and_rank_agree_with_classad2(left: str, right: str) -> None:
    ours_l, ours_r = classad.ClassAd.parse(left), classad.ClassAd.parse(right)
    theirs_l, theirs_r = classad2.ClassAd(left), classad2.ClassAd(right)
    assert symmetric_match(ours_l, ours_r) == theirs_l.symmetricMatch(theirs_r), (left, right)
    assert half_match(ours_r, ours_l) == theirs_l.matches(theirs_r), (left, right)
    ours, theirs = rank(ours_l, ours_r), _oracle_rank(theirs_l, theirs_r)
    assert ours == theirs or (math.isnan(ours) and math.isnan(theirs)), (left, right, ours, theirs)


def test_matchmaking_names_are_public() -> None:
    assert set(classad.__all__) >= {"ConcurrencyLimits", "Cycle", "Expansion", "Match", "expand",
                                    "half_match", "negotiate", "rank", "recount_matches", "symmetric_match",
                                    "unmatch"}
    assert classad.symmetric_match is symmetric_match


def test_limit_semantics_are_shared_with_the_engine() -> None:
    from sheaf.classad import limit_for, parse_limits

    assert parse_limits("A, b:2, a:0.5, c:bad") == (("a", 1.0), ("b", 2.0), ("a", 0.5), ("c", 1.0))
    knobs = {"PEGASUS_TRANSFER.STAGEIN_LIMIT": 4.0, "CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER": 2.0,
             "CONCURRENCY_LIMIT_DEFAULT": 9.0}
    assert limit_for("pegasus_transfer.stagein", knobs) == 4.0
    assert limit_for("pegasus_transfer.stageout", knobs) == 2.0
    assert limit_for("other", knobs) == 9.0
    assert limit_for("other", {}) == 2308032.0
