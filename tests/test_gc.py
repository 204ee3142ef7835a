"""The one pause of the cyclic garbage collector (``sheaf._gc``)."""

from __future__ import annotations

import gc

import pytest

from sheaf._gc import freeze, gc_paused, unfreeze


def test_gc_paused_leaves_the_collector_on_with_what_was_built_unscanned() -> None:
    """What the pause built is promoted to the oldest generation as it ends (no collection of it on
    the next allocation); the collector is on again.  Where another caller froze objects, they stay
    frozen and what the pause built joins them, out of the young generations as well."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        built = [{"n": [i]} for i in range(50_000)]
    assert gc.isenabled() and gc.get_count()[0] < 50 and gc.is_tracked(built)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            more = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() >= frozen + len(more) and gc.isenabled()
        assert gc.get_count()[0] < 50 and gc.is_tracked(more)
    finally:
        gc.unfreeze()


def test_nested_pauses_are_one_pause() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_after_sheafs_own_freeze_joins_it_without_counting_the_frozen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting frozen objects walks them all (millions after a large workflow is read): after
    ``freeze`` a pause knows they are there.  After ``unfreeze`` it counts again, and with nothing
    frozen it leaves nothing frozen."""
    def counted() -> int:
        raise AssertionError("the frozen objects were counted")

    freeze()
    try:
        with monkeypatch.context() as patch:
            patch.setattr(gc, "get_freeze_count", counted)
            with gc_paused():
                more = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() >= len(more) and gc.isenabled()
    finally:
        unfreeze()
    assert gc.get_freeze_count() == 0
    with gc_paused():
        built = [[i] for i in range(1_000)]
    assert gc.get_freeze_count() == 0 and gc.is_tracked(built) and gc.get_count()[0] < 50
