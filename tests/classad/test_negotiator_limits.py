"""Concurrency limits: parsing ``ConcurrencyLimits`` and the limit lookup order (HTCondor's)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheaf.classad._limits import HTCONDOR_DEFAULT_LIMIT, ConcurrencyLimits, parse_limits


def test_parse_names_weights_case_and_separators() -> None:
    assert parse_limits("a, B:2") == (("a", 1.0), ("b", 2.0))
    assert parse_limits("  x:0.5 y\tz ,,") == (("x", 0.5), ("y", 1.0), ("z", 1.0))
    assert parse_limits("Pegasus_Transfer.StageIn") == (("pegasus_transfer.stagein", 1.0),)


def test_parse_repeated_names_add_up_and_bad_weights_count_one() -> None:
    assert parse_limits("a, A:3") == (("a", 4.0),)
    assert parse_limits("a:zero b:-2 c:") == (("a", 1.0), ("b", 1.0), ("c", 1.0))
    assert parse_limits("") == ()


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


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 3)), max_size=40), st.integers(0, 6))
def test_usage_never_exceeds_the_limit(demands: list[tuple[str, int]], cap: int) -> None:
    limits = ConcurrencyLimits({"CONCURRENCY_LIMIT_DEFAULT": cap})
    for name, weight in demands:
        limits.try_acquire(parse_limits(f"{name}:{weight}"))
        assert all(used <= limit for used, limit in limits.statistics().values())
