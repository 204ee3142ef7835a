"""Text transformation catalogs: the Pegasus manual's multi-line and 4.x one-line formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats._text_tc import dumps_text_tc, loads_text_tc, read_text_tc
from sheaf.model import (
    Container,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    normalize_profiles,
    split_fqn,
)

#: the Text TC examples of Pegasus's optimization chapter, as printed there
CHAPTER = Path(__file__).parent / "data" / "chapter"


@pytest.mark.parametrize(("name", "expected"), [
    ("tc_text_clusters_size.txt", {"B": {"clusters.size": "3"}, "C": {"clusters.size": "2"}}),
    ("tc_text_clusters_num.txt", {"B": {"clusters.num": "3"}, "C": {"clusters.num": "2"}}),
    ("tc_text_runtime_maxruntime.txt", {"B": {"clusters.num": "2", "runtime": "100"},
                                        "C": {"clusters.maxruntime": "300", "runtime": "100"}}),
    ("tc_text_seqexec.txt", {"pegasus::seqexec": {}}),
    ("tc_text_mpiexec.txt", {"pegasus::mpiexec": {"nodes": "1", "ppn": "32"}}),
    ("tc_text_job_aggregator.txt", {"B": {"clusters.num": "2", "job.aggregator": "mpiexec"}}),
])
def test_every_text_tc_of_the_chapter_loads(name: str, expected: dict[str, dict[str, str]]) -> None:
    tc = read_text_tc(CHAPTER / name)
    found = {}
    for transformation in tc:
        (site,) = transformation.sites
        assert site.name == "siteX" and site.os_type == "linux" and site.type == "installed"
        assert site.pfn.startswith(("/shared/PEGASUS/bin/", "/user/bin/pegasus-"))
        fqn = "::".join(filter(None, (transformation.namespace, transformation.name)))
        found[fqn] = dict(site.profiles.get("pegasus", {}))
    assert found == expected


def test_the_chapters_clusters_example_reads_profiles_arch_os_and_type() -> None:
    tc = loads_text_tc('''
# multiple line text-based transformation catalog
tr B {
        site siteX {
                profile pegasus "clusters.num" "3"
                profile pegasus "clusters.size" "3"
                pfn "/shared/PEGASUS/bin/jobB"
                arch "x86"
                os "LINUX"
                type "INSTALLED"
        }
}''')
    entry = tc.lookup(None, "B", None)
    assert entry is not None
    site = entry.site("siteX")
    assert site is not None
    assert site.profiles == {"pegasus": {"clusters.num": "3", "clusters.size": "3"}}
    assert (site.arch, site.os_type, site.type) == ("x86", "linux", "installed")


def test_unquoted_values_and_transformation_level_profiles() -> None:
    tc = loads_text_tc('''tr pegasus::mpiexec {
        profile env "HOME" "/h"
        site siteX { pfn /usr/bin/pegasus-mpi-cluster  profile pegasus nodes 1  profile pegasus ppn  32 }
    }''')
    pmc = tc.lookup("pegasus", "mpiexec", None)
    assert pmc is not None and pmc.profiles == {"env": {"HOME": "/h"}}
    assert pmc.sites[0].profiles == {"pegasus": {"nodes": "1", "ppn": "32"}}


def test_one_line_format_of_pegasus_4x() -> None:
    tc = loads_text_tc(
        "#site  transformation   pfn            type                 architecture    profiles\n\n"
        "siteX    pegasus::seqexec     /usr/pegasus/bin/pegasus-cluster"
        " INSTALLED       INTEL32::LINUX NULL\n"
        'siteY    diamond::keg:4.0 /bin/keg STAGEABLE INTEL64::LINUX'
        ' ENV::PATH="/bin";PEGASUS::clusters_size="3"\n')
    seqexec = tc.lookup("pegasus", "seqexec", None)
    assert seqexec is not None
    assert seqexec.sites[0] == TransformationSite("siteX", "/usr/pegasus/bin/pegasus-cluster", "installed",
                                                  arch="x86", os_type="linux")
    keg = tc.lookup("diamond", "keg", "4.0")
    assert keg is not None and keg.sites[0].type == "stageable"
    assert keg.sites[0].profiles == {"env": {"PATH": "/bin"}, "pegasus": {"clusters.size": "3"}}


def test_containers_are_read_and_written() -> None:
    tc = loads_text_tc('''cont centos { type "singularity" image "docker:///centos:7" image_site "local"
        mount "/a:/b" mount "/c:/d" profile env "X" "y" }
    tr keg { site local { pfn "/bin/keg" container "centos" } }''')
    assert tc.containers["centos"] == Container("centos", "singularity", "docker:///centos:7", "local",
                                                mounts=("/a:/b", "/c:/d"), profiles={"env": {"X": "y"}})
    assert loads_text_tc(dumps_text_tc(tc)) == tc


def test_unknown_profile_key_is_warned_with_the_nearest_key() -> None:
    warnings: list[str] = []
    loads_text_tc('tr C {\n site siteX {\n  profile pegasus "maxruntime" "300"\n  pfn "/b"\n }\n}',
                  source="tc.txt", warnings=warnings)
    assert len(warnings) == 1
    assert "maxruntime" in warnings[0] and "clusters.maxruntime" in warnings[0]
    assert warnings[0].startswith("tc.txt:2:")


@pytest.mark.parametrize(("text", "line", "column", "rule"), [
    ('tr B {\n site X {\n  pfn\n }\n}', 4, 2, "a pfn is a word or a quoted string"),
    ('tr B {\n site X {\n  arch "x86"\n }\n}', 2, 7, "every site entry has a pfn"),
    ("tr B {\n  bogus\n}", 2, 3, "a tr block holds profiles and sites"),
    ('tr B {\n site X {\n  pfn "/b"\n  type "WEIRD"\n }\n}', 4, 8, "type is INSTALLED or STAGEABLE"),
    ('tr B {\n site X {\n  pfn "/b\n }\n}', 3, 7, "strings close on the same line"),
    ("tr B {\n site X { pfn /b }", 2, 18, "expected 'profile', 'site' or '}'"),
    ("siteX a b", 1, 1, "site transformation pfn type [sysinfo [profiles]]"),
    ("siteX a /b INSTALLED INTEL32 NULL", 1, None, "sysinfo is ARCH::OS[:VERSION[:GLIBC]]"),
    ('siteX a /b INSTALLED INTEL32::LINUX ENV::X', 1, None, "profiles are NULL"),
    ('tr B { site X { pfn "/b" } }\ntr B { site Y { pfn "/c" } }', 2, 1, "transformations are declared once"),
])
def test_malformed_catalogs_name_line_column_and_rule(text: str, line: int, column: int | None,
                                                      rule: str) -> None:
    with pytest.raises(FormatError) as info:
        loads_text_tc(text, source="tc.txt")
    error = info.value
    assert error.path == "tc.txt" and error.line == line
    if column is not None:
        assert error.column == column
    assert error.rule is not None and rule in error.rule + " " + error.message


def test_read_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "tc.txt"
    path.write_text('tr a::b:1.0 { site s { pfn "/x y" } }')
    assert read_text_tc(path).lookup("a", "b", "1.0") is not None


_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,8}", fullmatch=True)
_values = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=12)
_profiles = st.dictionaries(st.sampled_from(["env", "condor", "globus"]),
                            st.dictionaries(_names, _values, min_size=1, max_size=3), max_size=2)


@st.composite
def catalogs(draw: st.DrawFn) -> TransformationCatalog:
    tc = TransformationCatalog()
    for name in draw(st.lists(_names, max_size=4, unique=True)):
        sites = tuple(
            TransformationSite(site, draw(_values.filter(bool)),
                               draw(st.sampled_from(["installed", "stageable"])),
                               arch=draw(st.none() | st.sampled_from(["x86", "x86_64", "aarch64"])),
                               os_type=draw(st.none() | st.just("linux")),
                               profiles=normalize_profiles(draw(_profiles))[0])
            for site in draw(st.lists(_names, min_size=1, max_size=3, unique=True)))
        tc.add(Transformation(name, namespace=draw(st.none() | _names),
                              version=draw(st.none() | st.just("4.0")), sites=sites,
                              profiles=normalize_profiles(draw(_profiles))[0]))
    return tc


@settings(max_examples=60, deadline=None)
@given(catalogs())
def test_round_trip(tc: TransformationCatalog) -> None:
    assert loads_text_tc(dumps_text_tc(tc)) == tc


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='tr site cont profile pfn{}"#\n\\ abc:x', max_size=80))
def test_fuzz_only_format_errors(text: str) -> None:
    try:
        loads_text_tc(text, source="fuzz")
    except FormatError as error:
        assert error.path == "fuzz" and error.line is not None


@given(st.tuples(st.none() | _names, _names, st.none() | st.from_regex(r"[0-9][0-9.]{0,4}", fullmatch=True)))
def test_split_fqn_inverts_fqn(parts: tuple[str | None, str, str | None]) -> None:
    namespace, name, version = parts
    assert split_fqn(Transformation(name, namespace, version).fqn) == parts


@pytest.mark.parametrize(("text", "line", "value"), [
    ('tr t {\n  site s {\n    pfn "/x"\n    type "INSTALED"\n  }\n}\n', 4, "INSTALED"),
    ('tr t {\n  site s {\n    type stagable\n    pfn "/x"\n  }\n}\n', 3, "stagable"),
])
def test_a_bad_type_is_named_at_its_own_line(text: str, line: int, value: str) -> None:
    with pytest.raises(FormatError) as caught:
        loads_text_tc(text)
    assert (caught.value.line, caught.value.value) == (line, value)
