"""``environment = $$(SiteEnvironment);...``: the whole-entry reference becomes the site's entries."""

from __future__ import annotations

import os

import pytest

from sheaf.classad import ClassAd
from sheaf.engine import Launch, split_environment
from sheaf.engine._dollar import expand_launch

SITE = ClassAd.parse_old('SiteEnvironment = "SheafSite=uw;SiteVDTLocation=/dpe"\nName = "uw-Site"\n')


def _launch(env: dict[str, str]) -> Launch:
    return Launch("g#0", "g", 0, ("/bin/true",), env, "/tmp", os.devnull, os.devnull, ClassAd())


def test_the_reports_environment_line_splits_and_expands() -> None:
    env = split_environment("$$(SiteEnvironment);PATH=/bin;_CONDOR_MAX_DAGMAN_LOG=0")
    launch, reason = expand_launch(_launch(env), SITE)
    assert reason is None
    assert launch.env == {"SheafSite": "uw", "SiteVDTLocation": "/dpe", "PATH": "/bin",
                          "_CONDOR_MAX_DAGMAN_LOG": "0"}
    assert launch.job_ad.eval("MATCH_SiteEnvironment") == "SheafSite=uw;SiteVDTLocation=/dpe"


def test_a_site_without_the_attribute_holds_the_job() -> None:
    env = split_environment("$$(SiteEnvironment);PATH=/bin")
    _, reason = expand_launch(_launch(env), ClassAd.parse_old('Name = "x"'))
    assert reason == "Cannot expand $$ expression (SiteEnvironment)."


@pytest.mark.parametrize("text", ["FOO;PATH=/bin", "$$(X)junk;A=1"])
def test_other_entries_without_a_value_are_still_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not name=value"):
        split_environment(text)
