"""The local backend's queue: priority first, FIFO among equals, one attempt per bucket per pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.backends._queue import LaunchQueue, shape_of
from sheaf.classad import ClassAd
from sheaf.engine import Launch

ADS = [ClassAd.parse_old("RequestMemory = 64"), ClassAd.parse_old("RequestMemory = 128"),
       ClassAd.parse_old('RequestMemory = 64\nConcurrencyLimits = "x"')]


def launch(i: int, priority: int, kind: int) -> Launch:
    return Launch(f"n{i}#0", f"n{i}", 0, ("/bin/true",), {}, "/", "o", "e", ADS[kind], priority)


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2)), max_size=40))
def test_everything_startable_leaves_in_priority_then_fifo_order(items: list[tuple[int, int]]) -> None:
    queue = LaunchQueue()
    for i, (priority, kind) in enumerate(items):
        queue.push(launch(i, priority, kind))
    started: list[str] = []
    assert queue.schedule(lambda lnch, shape: started.append(lnch.key) or "started") == len(items)
    expected = [f"n{i}#0" for i, _ in sorted(enumerate(items), key=lambda p: (-p[1][0], p[0]))]
    assert started == expected and len(queue) == 0


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2)), min_size=1, max_size=40),
       st.sets(st.integers(0, 2)))
def test_a_blocked_bucket_costs_one_attempt_and_keeps_its_order(items: list[tuple[int, int]],
                                                                 blocked: set[int]) -> None:
    queue = LaunchQueue()
    for i, (priority, kind) in enumerate(items):
        queue.push(launch(i, priority, kind))
    blocked_shapes = {shape_of(ADS[k]) for k in blocked}
    attempts: list[tuple[object, ...]] = []

    def attempt(lnch: Launch, shape: tuple[object, ...]) -> str:
        attempts.append(shape)
        return "blocked" if shape in blocked_shapes else "started"

    queue.schedule(attempt)
    assert all(attempts.count(shape) == 1 for shape in blocked_shapes if shape in attempts)
    waiting = sum(1 for _, kind in items if kind in blocked)
    assert len(queue) == waiting
    queue.remove("n0#0")
    assert len(queue) == waiting - (1 if items[0][1] in blocked else 0)


def test_shapes_tell_apart_what_matching_can() -> None:
    assert shape_of(ADS[0]) == shape_of(ClassAd.parse_old("RequestMemory = 64\nCmd = \"/bin/other\""))
    assert len({shape_of(ad) for ad in ADS}) == 3


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**70), 2**70), st.integers(0, 2**40)), min_size=2, max_size=20,
                unique_by=lambda item: item[1]))
def test_launches_put_back_keep_their_places_whatever_the_priority(orders: list[tuple[int, int]]) -> None:
    """A bucket's heap ranks (-priority, sequence) as one int: the same order as the tuples, for
    priorities of any size (launches put back in the queue keep the places they were given)."""
    queue = LaunchQueue()
    for i, order in enumerate(orders):
        queue.push(launch(i, -order[0], 0), order)
    started: list[str] = []
    queue.schedule(lambda lnch, shape: started.append(lnch.key) or "started")
    assert started == [f"n{i}#0" for i, _ in sorted(enumerate(orders), key=lambda p: p[1])]


def test_a_shape_is_handed_out_as_one_object_and_found_by_an_equal_one() -> None:
    """Buckets are found by the identity of the one object kept per shape (no tuple of ``Expr``
    hashed per lookup); an equal shape made elsewhere still finds its bucket."""
    queue = LaunchQueue()
    for i in range(3):
        queue.push(launch(i, 0, 0))
    queue.push(launch(3, 0, 1))
    first = queue.first()
    assert first is not None
    shape = first[2]
    again = shape_of(ADS[0])  # a new tuple, equal to the kept one
    assert again == shape and again is not shape
    queue.take_first(again)
    second = queue.first()
    assert second is not None and second[1].key == "n1#0" and second[2] is shape
    queue.push(launch(4, 0, 0), shape=again)  # into the kept shape's bucket
    assert [lnch.key for lnch in queue.launches()] == ["n1#0", "n2#0", "n3#0", "n4#0"]
    started: list[str] = []
    queue.schedule(lambda lnch, shp: started.append(lnch.key) or "started")
    assert started == ["n1#0", "n2#0", "n3#0", "n4#0"] and not queue
