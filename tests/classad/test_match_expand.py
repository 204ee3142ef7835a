"""$$() substitution after a match: condor_schedd's expansion, MATCH_ and MATCH_EXP_ attributes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheaf import classad
from sheaf.classad._match_dollar import find_reference
from sheaf.classad._match_expand import expand

ClassAd = classad.ClassAd
SITE = ClassAd.parse_old("""\
Name = "uw-hep-USCMS-Site"
MatchmakerURL = "ramen.fnal.gov:/jobmanager-condor"
SiteEnvironment = "SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;SiteVDTLocation=/dpe"
Memory = 2048
Quoted = "say \\"hi\\""
Twice = Memory * 2
""")


def test_the_uscms_dag_job_gets_the_sites_environment_and_gatekeeper() -> None:
    job = ClassAd.parse('[ Cmd = "/condor/bin/condor_dagman"; GlobusScheduler = "$$(MatchmakerURL)";'
                        ' Environment = "$$(SiteEnvironment);PATH=/bin;USER=cms" ]')
    result = expand(job, SITE)
    assert result.ok and result.reason is None
    assert result.ad["GlobusScheduler"] == "ramen.fnal.gov:/jobmanager-condor"
    assert result.ad["Environment"] == ("SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;"
                                        "SiteVDTLocation=/dpe;PATH=/bin;USER=cms")
    assert result.ad["MATCH_SiteEnvironment"] == SITE["SiteEnvironment"]
    assert result.ad["MATCH_MatchmakerURL"] == "ramen.fnal.gov:/jobmanager-condor"
    assert result.ad["MATCH_EXP_GlobusScheduler"] == "ramen.fnal.gov:/jobmanager-condor"
    assert set(result.recorded) == {"MATCH_MatchmakerURL", "MATCH_SiteEnvironment",
                                    "MATCH_EXP_GlobusScheduler", "MATCH_EXP_Environment"}
    assert job["GlobusScheduler"] == "$$(MatchmakerURL)"  # the job ad given is not modified


def test_defaults_expressions_and_non_string_values() -> None:
    job = ClassAd.parse('[ A = "$$(Nearest:turkey)"; B = "$$(Nearest:)"; C = "$$(Nearest:\\"x y\\")";'
                        ' D = "mem=$$(Memory) twice=$$(Twice)"; E = "$$([TARGET.Memory * 2 + 1])";'
                        ' F = strcat("$$(Quoted)", "!"); G = { "$$(Memory)", 3 };'
                        ' H = "$$(DOLLARDOLLAR)(x)" ]')
    result = expand(job, SITE)
    assert result.ok, result.reason
    ad = result.ad
    assert (ad["A"], ad["B"]) == ("turkey", "")
    assert ad["C"] == '$$(Nearest:"x y")'  # a quote is not allowed in a default: no reference
    assert ad["D"] == "mem=2048 twice=Memory * 2"
    assert ad["E"] == "4097"
    assert ad.eval("F") == 'say "hi"!'
    assert ad["G"] == ["2048", 3]
    assert ad["H"] == "$$(x)"  # a literal $$ is not expanded again
    assert "MATCH_Nearest" not in ad and ad["MATCH_Memory"] == 2048


@pytest.mark.parametrize(("text", "name"), [
    ('"$$(NoSuchAttr)"', "NoSuchAttr"), ('"ok $$(Memory) then $$(Gone)"', "Gone"),
    ('"$$([TARGET.Gone + 1])"', "[TARGET.Gone + 1]"), ('"$$([1 +])"', "[1 +]"),
    # a dotted name is refused whatever the default, and whether or not the slot has it
    ('"$$(TARGET.Memory)"', "TARGET.Memory"), ('"$$(a.b:default)"', "a.b"),
    ('"$$(Memory) $$(MY.Memory:1)"', "MY.Memory"), ('"$$(.:x)"', "."),
])
def test_an_unexpandable_reference_keeps_the_job_from_starting(text: str, name: str) -> None:
    result = expand(ClassAd.parse(f"[ Cmd = {text} ]"), SITE)
    assert not result.ok
    assert result.reason == f"Cannot expand $$ expression ({name})."


def test_match_attributes_are_not_expanded_again_and_expansion_works_without_the_resource() -> None:
    job = ClassAd.parse('[ GlobusScheduler = "$$(MatchmakerURL)"; Arguments = "-x $$(Memory)";'
                        ' MATCH_Note = "$$(Unknown)" ]')
    first = expand(job, SITE)
    assert first.ok
    again = ClassAd.parse(f"[ {'; '.join(f'{k} = {job.lookup(k)}' for k in job)} ]")
    for name, expr in first.recorded.items():
        again[name] = expr
    del again["MATCH_EXP_Arguments"]
    later = expand(again, None)  # the match is gone: MATCH_EXP_ and MATCH_ values are used
    assert later.ok
    assert later.ad["GlobusScheduler"] == "ramen.fnal.gov:/jobmanager-condor"
    assert later.ad["Arguments"] == "-x 2048"
    expected = "Cannot expand $$ expression (Memory)."
    assert expand(ClassAd.parse('[ A = "$$(Memory)" ]'), None).reason == expected


def test_a_default_holds_what_the_schedd_allows() -> None:
    """Defaults are id characters plus ``$ ,\\:`` and ``(...)`` groups; slashes work in names too."""
    job = ClassAd.parse('[ A = "$$(Gone:/usr/foo)"; B = "$$(Gone:a b,c:d$e(f=g))"; C = "$$(Gone:x-y)";'
                        ' D = "$$(Gone:x=1)"; E = "$$(a/b:dflt)"; F = "$$(Nearest:a.b)" ]')
    result = expand(job, SITE)
    assert result.ok, result.reason
    assert [result.ad[name] for name in "ABCDEF"] == [
        "/usr/foo", "a b,c:d$e(f=g)", "$$(Gone:x-y)", "$$(Gone:x=1)", "dflt", "a.b"]


def test_finding_references() -> None:
    assert find_reference("no refs $( $$ $$(bad name)") is None
    ref = find_reference('a $$([ifThenElse(x, "])", "b")]) z')
    assert ref is not None and ref.expression == 'ifThenElse(x, "])", "b")' and ref.name is None
    ref = find_reference("$$(a.b_1:dflt) and more")
    assert ref is not None and (ref.name, ref.default, ref.start, ref.end) == ("a.b_1", "dflt", 0, 14)


@given(st.text(alphabet=st.sampled_from("ab$()[]:x \"\\"), max_size=30))
def test_the_scanner_never_fails_and_finds_well_formed_references(text: str) -> None:
    pos = 0
    while (ref := find_reference(text, pos)) is not None:
        assert text[ref.start:ref.end] == f"$$({ref.body})"
        pos = ref.end


@given(st.one_of(st.text(max_size=20), st.integers(-5, 5)),
       st.text(alphabet=st.characters(blacklist_characters="$"), max_size=10))
def test_any_value_is_spliced_into_the_string_exactly(value: str | int, around: str) -> None:
    resource = ClassAd()
    resource["Value"] = value
    job = ClassAd()
    job["Text"] = f"{around}$$(Value){around}"
    result = expand(job, resource)
    assert result.ok
    assert result.ad["Text"] == f"{around}{value}{around}"
    assert ClassAd.parse(result.ad.unparse()) == result.ad  # the expanded ad is still a well-formed ad


def test_the_old_cmd_spelling_is_expanded() -> None:
    resource = ClassAd.parse('[ OpSys = "LINUX"; Arch = "X86_64" ]')
    job = ClassAd.parse('[ Cmd = "/home/u/prog.$$OpSys.$$Arch"; Other = "x.$$OPSYS.$$ARCH" ]')
    result = expand(job, resource)
    assert result.ad["Cmd"] == "/home/u/prog.LINUX.X86_64" and result.ad["Other"] == "x.$$OPSYS.$$ARCH"
    assert result.ad["MATCH_OPSYS"] == "LINUX"
