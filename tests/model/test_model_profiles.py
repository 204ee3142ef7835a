"""Profiles: the alias table, unknown keys with the nearest known key, precedence, malformed values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import ValidationError
from sheaf.model import (
    PEGASUS_ALIASES,
    PEGASUS_KEYS,
    Job,
    Properties,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    canonical_key,
    check_profile_values,
    effective_profiles,
    merge_profiles,
    normalize_profiles,
    profile_int,
)


def test_both_spellings_are_one_key() -> None:
    profiles, warnings = normalize_profiles({"pegasus": {"clusters_size": 3, "clusters.num": "2",
                                                         "job_aggregator": "mpiexec"}})
    assert profiles == {"pegasus": {"clusters.size": "3", "clusters.num": "2", "job.aggregator": "mpiexec"}}
    assert warnings == []


def test_no_blanket_underscore_rewrite() -> None:
    profiles, warnings = normalize_profiles({"pegasus": {"pmc_request_memory": 512},
                                             "condor": {"request_memory": "2048", "+ProjectName": "x"}})
    assert profiles == {"pegasus": {"pmc_request_memory": "512"},
                        "condor": {"request_memory": "2048", "+ProjectName": "x"}}
    assert warnings == []


def test_unknown_key_is_kept_and_names_the_nearest() -> None:
    profiles, warnings = normalize_profiles({"pegasus": {"maxruntime": 300, "clusters.sise": 2}})
    assert profiles == {"pegasus": {"maxruntime": "300", "clusters.sise": "2"}}
    assert "'maxruntime'" in warnings[0] and "did you mean 'clusters.maxruntime'" in warnings[0]
    assert "did you mean 'clusters.size'" in warnings[1]


def test_case_rules_per_namespace() -> None:
    profiles, _ = normalize_profiles({"DAGMAN": {"MAXJOBS": "10"}, "env": {"Path": "/bin"},
                                      "hints": {"execution.site": "x"}})
    assert profiles == {"dagman": {"maxjobs": "10"}, "env": {"Path": "/bin"},
                        "selector": {"execution.site": "x"}}


def test_values_are_strings_and_missing_values_warn() -> None:
    profiles, warnings = normalize_profiles(
        {"pegasus": {"runtime": 1.5, "nodes": True, "clusters.size:3": None}})
    assert profiles["pegasus"] == {"runtime": "1.5", "nodes": "true", "clusters.size:3": ""}
    assert any("'clusters.size:3' has no value (a missing space after ':'?)" in w for w in warnings)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(PEGASUS_KEYS | set(PEGASUS_ALIASES))))
def test_canonical_key_is_idempotent(key: str) -> None:
    canon, warning = canonical_key("pegasus", key)
    assert warning is None and canon in PEGASUS_KEYS
    assert canonical_key("pegasus", canon) == (canon, None)


def test_precedence_tc_over_site_over_job_over_properties() -> None:
    job = Job("j", "keg", profiles={"pegasus": {"runtime": "job", "clusters.size": "job", "nodes": "job"},
                                    "env": {"A": "job"}})
    props = Properties({"pegasus.runtime": "props", "pegasus.ppn": "props", "env.B": "props",
                        "pegasus.clusterer.preference": "Runtime"})
    sc = SiteCatalog({"s": Site("s", profiles={"pegasus": {"clusters.size": "site", "nodes": "site"}})})
    tc = TransformationCatalog()
    tc.add(Transformation("keg", profiles={"pegasus": {"nodes": "tc"}}, sites=(
        TransformationSite("s", "/bin/keg", profiles={"env": {"A": "tc-site"}}),)))
    result = effective_profiles(job, "s", tc, sc, props)
    assert result == {"pegasus": {"runtime": "job", "clusters.size": "site", "nodes": "tc", "ppn": "props"},
                      "env": {"A": "tc-site", "B": "props"}}
    assert effective_profiles(job, "elsewhere", tc, sc, props)["pegasus"]["clusters.size"] == "job"


def test_merge_profiles_later_wins() -> None:
    assert merge_profiles({"a": {"x": "1"}}, None, {"a": {"x": "2", "y": "3"}}) == {"a": {"x": "2", "y": "3"}}


@pytest.mark.parametrize(("profiles", "words"), [
    ({"pegasus": {"clusters.size": "three"}}, "must be an integer"),
    ({"pegasus": {"clusters.num": "0"}}, ">= 1"),
    ({"pegasus": {"runtime": "fast"}}, "must be a number"),
    ({"pegasus": {"runtime": "nan"}}, "finite"),
    ({"dagman": {"retry": "-1"}}, "0 to 2147483647"),
    ({"dagman": {"priority": "1e99"}}, "-2147483648 to 2147483647"),
])
def test_malformed_values(profiles: dict[str, dict[str, str]], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        check_profile_values(profiles, subject="job 'x'")


def test_well_formed_values() -> None:
    check_profile_values({"pegasus": {"clusters.size": "3", "runtime": "12.5", "pmc_priority": "-5"}})
    assert profile_int({"pegasus": {"clusters.size": "3.0"}}, "pegasus", "clusters.size") == 3
    assert profile_int({}, "pegasus", "clusters.size", 7) == 7


def test_workflow_profiles_sit_between_properties_and_the_job() -> None:
    job = Job("j", "keg", profiles={"env": {"A": "job"}})
    props = Properties({"env.A": "props", "env.B": "props", "env.C": "props"})
    result = effective_profiles(job, None, None, None, props,
                                workflow_profiles={"env": {"A": "wf", "B": "wf"}})
    assert result == {"env": {"A": "job", "B": "wf", "C": "props"}}
