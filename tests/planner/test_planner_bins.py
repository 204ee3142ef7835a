"""The bin invariants of horizontal and runtime clustering, checked with hypothesis."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.planner import _bins

sizes = st.integers(min_value=0, max_value=60)
runtimes = st.lists(st.integers(min_value=0, max_value=100).map(float), max_size=40)


def flat(bins: list[list[int]]) -> list[int]:
    return sorted(i for b in bins for i in b)


@given(sizes, st.integers(min_value=1, max_value=70))
def test_by_size_chunks(n: int, size: int) -> None:
    bins = _bins.by_size(n, size)
    assert flat(bins) == list(range(n)) and [i for b in bins for i in b] == list(range(n))
    assert all(len(b) == size for b in bins[:-1]) and all(1 <= len(b) <= size for b in bins)


@given(sizes, st.integers(min_value=1, max_value=70))
def test_by_num_even_split(n: int, num: int) -> None:
    bins = _bins.by_num(n, num)
    assert [i for b in bins for i in b] == list(range(n))
    assert len(bins) == min(n, num)
    lengths = [len(b) for b in bins]
    assert not lengths or max(lengths) - min(lengths) <= 1
    assert lengths == sorted(lengths, reverse=True)


def test_seed_examples() -> None:
    assert [len(b) for b in _bins.by_size(4, 3)] == [3, 1]
    assert [len(b) for b in _bins.by_num(4, 3)] == [2, 1, 1]


@given(runtimes, st.integers(min_value=1, max_value=150).map(float))
def test_first_fit_decreasing(rt: list[float], limit: float) -> None:
    bins, too_long = _bins.first_fit_decreasing(rt, limit)
    assert sorted(flat(bins) + too_long) == list(range(len(rt)))  # every job exactly once
    assert all(rt[i] > limit for i in too_long)
    loads = [sum(rt[i] for i in b) for b in bins]
    assert all(load <= limit for load in loads)
    # first fit: the job that opened bin j did not fit into any earlier bin (which only grew since)
    order = sorted(range(len(rt)), key=lambda i: -rt[i])
    opener: dict[int, int] = {}
    for i in order:
        for k, b in enumerate(bins):
            if i in b:
                opener.setdefault(k, i)
    for j in range(len(bins)):
        for k in range(j):
            assert loads[k] + rt[opener[j]] > limit


@given(runtimes, st.integers(min_value=1, max_value=8))
def test_longest_processing_time(rt: list[float], k: int) -> None:
    bins = _bins.longest_processing_time(rt, k)
    assert flat(bins) == list(range(len(rt)))
    assert len(bins) <= min(k, len(rt))
    if all(r > 0 for r in rt):
        assert len(bins) == min(k, len(rt))
    if rt:
        makespan = max(sum(rt[i] for i in b) for b in bins)
        assert makespan <= sum(rt) / k + max(rt) + 1e-9  # Graham's list-scheduling bound


@settings(max_examples=60)
@given(st.lists(st.integers(min_value=1, max_value=50).map(float), min_size=1, max_size=7),
       st.integers(min_value=1, max_value=3))
def test_lpt_within_four_thirds_of_optimal(rt: list[float], k: int) -> None:
    bins = _bins.longest_processing_time(rt, k)
    makespan = max(sum(rt[i] for i in b) for b in bins)
    best = min(max(sum(rt[i] for i in range(len(rt)) if assign[i] == m) for m in range(k))
               for assign in itertools.product(range(k), repeat=len(rt)))
    assert makespan <= (4 / 3 - 1 / (3 * k)) * best + 1e-9


def test_lpt_ties_lowest_bin_and_file_order() -> None:
    assert _bins.longest_processing_time([10.0, 10.0, 10.0, 10.0], 2) == [[0, 2], [1, 3]]
    assert _bins.longest_processing_time([1.0], 3) == [[0]]


def test_ffd_large_group() -> None:
    rt = [float(i % 97 + 1) for i in range(20000)]
    bins, too_long = _bins.first_fit_decreasing(rt, 500.0)
    assert not too_long and sum(len(b) for b in bins) == 20000
