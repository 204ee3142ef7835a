"""Concurrency limits: parsing ``ConcurrencyLimits`` and the limit lookup order (HTCondor's)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.classad import ClassAd, negotiate
from sheaf.classad._limits import HTCONDOR_DEFAULT_LIMIT, ConcurrencyLimits, parse_limits


def test_parse_names_weights_case_and_separators() -> None:
    assert parse_limits("a, B:2") == (("a", 1.0), ("b", 2.0))
    assert parse_limits("  x:0.5 y\tz ,,") == (("x", 0.5), ("y", 1.0), ("z", 1.0))
    assert parse_limits("Pegasus_Transfer.StageIn") == (("pegasus_transfer.stagein", 1.0),)


def test_parse_repeated_names_stay_tokens_and_bad_weights_count_one() -> None:
    assert parse_limits("a, A:3") == (("a", 1.0), ("a", 3.0))
    assert parse_limits("a:zero b:-2 c: d:0") == (("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 1.0))
    assert parse_limits("") == ()


@pytest.mark.parametrize(("weight", "read"), [
    ("2", 2.0), ("2.5", 2.5), ("2x", 2.0), ("2.5.1", 2.5), ("1e1", 10.0), ("1e", 1.0), (".5e1x", 5.0),
    ("0x10", 16.0), ("0x", 1.0), ("0x1p2", 4.0), ("+3", 3.0), ("x2", 1.0), ("1e999", float("inf")),
    ("inf", float("inf")), ("Infinity", float("inf")), ("-inf", 1.0), ("nan", 1.0), ("0.0001", 0.0001),
])
def test_a_weight_is_what_strtod_reads(weight: str, read: float) -> None:
    """``ParseConcurrencyLimit``: ``strtod`` of the text after ``:``; not positive counts as 1."""
    assert parse_limits(f"lic:{weight}") == (("lic", read),)


def test_invalid_names_are_ignored_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="sheaf.classad")
    text = "ok, A-B:2, 1st, _x1, a.b.c, .a, b., :3, x.y_2, per%cent, ümlaut"
    assert parse_limits(text) == (("ok", 1.0), ("_x1", 1.0), ("x.y_2", 1.0))
    ignored = [r.getMessage() for r in caplog.records if r.name == "sheaf.classad"]
    assert ignored == [f"Ignoring invalid concurrency limit '{token}'"
                       for token in ("a-b:2", "1st", "a.b.c", ".a", "b.", ":3", "per%cent", "ümlaut")]


def test_a_repeated_name_is_checked_per_token_and_held_twice() -> None:
    """``"a, a"`` with room for one: each token sees the usage before the job, so it is granted."""
    limits = ConcurrencyLimits({"A_LIMIT": 1})
    assert limits.try_acquire(parse_limits("a, a"))
    assert limits.usage("a") == 2
    assert not limits.try_acquire(parse_limits("a"))
    limits.release(parse_limits("a, a"))
    assert limits.usage("a") == 0
    assert not ConcurrencyLimits({"A_LIMIT": 1}).try_acquire(parse_limits("a:2, a"))


def test_the_negotiator_reads_limits_as_htcondor() -> None:
    slots = [ClassAd.parse(f'[ Name = "s{n}"; Requirements = true ]') for n in range(4)]
    jobs = [ClassAd.parse(f'[ Requirements = true; ConcurrencyLimits = "{text}" ]')
            for text in ("lic:2x", "lic", "bad-name, lic", "lic, lic")]
    cycle = negotiate(jobs, slots, {"LIC_LIMIT": 3})
    # lic:2x weighs 2; the next "lic" fills the limit; the invalid name is ignored but lic is full;
    # "lic, lic" is refused too (3 + 1 > 3 for each token)
    assert sorted(match.job for match in cycle.matches) == [0, 1]
    assert cycle.limits.usage("lic") == 3


def test_lookup_order_full_name_then_prefix_default_then_default() -> None:
    limits = ConcurrencyLimits({
        "pegasus_transfer.stagein_LIMIT": 3,
        "CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER": 7,
        "concurrency_limit_default": 11,
        "LICENSE_LIMIT": "2",
    })
    assert limits.limit("PEGASUS_TRANSFER.STAGEIN") == 3
    assert limits.limit("pegasus_transfer.stageout") == 7
    assert limits.limit("other.thing") == 11
    assert limits.limit("plain") == 11
    assert limits.limit("license") == 2
    assert ConcurrencyLimits().limit("x") == HTCONDOR_DEFAULT_LIMIT


def test_acquire_is_all_or_nothing_and_release_gives_back() -> None:
    limits = ConcurrencyLimits({"A_LIMIT": 2, "B_LIMIT": 1}, usage={"a": 1})
    assert limits.refusal(parse_limits("a")) is None
    assert not limits.try_acquire(parse_limits("a, b:2"))
    assert limits.statistics() == {"a": (1.0, 2.0)}
    assert limits.try_acquire(parse_limits("a, b"))
    reason = limits.refusal(parse_limits("a"))
    assert reason is not None and "a" in reason
    limits.release(parse_limits("a, b"))
    assert limits.usage("A") == 1 and limits.usage("b") == 0


@pytest.mark.parametrize("bad", [-1, "many", True, None])
def test_capacity_is_validated(bad: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        ConcurrencyLimits({"A_LIMIT": bad})


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 3)), max_size=40), st.integers(0, 6))
def test_usage_never_exceeds_the_limit(demands: list[tuple[str, int]], cap: int) -> None:
    limits = ConcurrencyLimits({"CONCURRENCY_LIMIT_DEFAULT": cap})
    for name, weight in demands:
        limits.try_acquire(parse_limits(f"{name}:{weight}"))
        assert all(used <= limit for used, limit in limits.statistics().values())
