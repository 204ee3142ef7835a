"""Site ads from the site configuration: the report's attributes, MaxMatches, matching a group job."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import classad
from sheaf.backends.grid import read_site_config, site_ads, site_of_environment
from sheaf.errors import FormatError

CONFIG = """\
group_size: 50
sites:
  one: {max_queued: 50, backend: local, slots: 1}
  four: {max_queued: 200, backend: local, slots: 4, environment: {SiteWorkingArea: /scratch/work}}
  tiny: {max_queued: 10, backend: stall}
"""
GROUP_JOB = classad.ClassAd.parse_old(
    "WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True\nRank = -CurMatches/MaxMatches\n")


@pytest.fixture
def ads(tmp_path: Path) -> list[classad.ClassAd]:
    (tmp_path / "sites.yml").write_text(CONFIG)
    return site_ads(read_site_config(tmp_path / "sites.yml"))


def test_max_matches_is_max_queued_over_group_size(ads: list[classad.ClassAd]) -> None:
    assert [ad.eval("MaxMatches") for ad in ads] == [1, 4, 1]  # 10 // 50 is still one group
    assert len({ad.eval("Name") for ad in ads}) == 3
    env = ads[1].eval("SiteEnvironment")
    assert "SiteWorkingArea=/scratch/work" in env and site_of_environment(env) == "four"


def test_a_group_job_matches_and_spreads_by_rank(ads: list[classad.ClassAd]) -> None:
    cycle = classad.negotiate({f"g{i}": GROUP_JOB for i in range(7)}, ads)
    taken = [match.resource for match in cycle.matches]
    assert sorted(taken) == ["four-Site"] * 4 + ["one-Site", "tiny-Site"]  # MaxMatches caps each site
    assert set(cycle.unmatched) == {"g6"}
    # a job not meant for the grid is refused by every site ad
    assert not classad.negotiate({"x": classad.ClassAd.parse_old("Requirements = true")}, ads).matches


def test_site_ad_files_parse_with_the_official_library(ads: list[classad.ClassAd]) -> None:
    import classad2
    import htcondor2  # noqa: F401  (imported before classad2, as the bindings require)

    text = "\n".join(ad.unparse_old() for ad in ads)
    theirs = list(classad2.parseAds(text))
    assert [ad["Name"] for ad in theirs] == ["one-Site", "four-Site", "tiny-Site"]
    assert theirs[1].eval("MaxMatches") == 4
    job = classad2.parseOne(GROUP_JOB.unparse_old())
    assert theirs[0].symmetricMatch(job)
    assert not theirs[0].symmetricMatch(classad2.parseOne("Requirements = true"))


@pytest.mark.parametrize("body", ["sites:\n  a: {max_queued: -1}\n", "sites:\n  a: {backend: local}\n",
                                  "sites:\n  a: {max_queued: 1, environment: {X: 'a;b'}}\n",
                                  "sites: [1, 2]\n"])
def test_bad_configuration_is_a_format_error(tmp_path: Path, body: str) -> None:
    (tmp_path / "bad.yml").write_text(body)
    with pytest.raises(FormatError) as info:
        read_site_config(tmp_path / "bad.yml")
    assert info.value.location.path == str(tmp_path / "bad.yml")
