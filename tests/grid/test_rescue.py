"""Which done nodes of a group run again on the next site (``sheaf.backends.grid._rescue.to_rerun``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.backends.grid._rescue import to_rerun


def test_a_chain_reruns_everything_a_missing_step_needs() -> None:
    parents = {"b": ["a"], "c": ["b"], "d": ["c"], "out": ["b"]}
    nodes = ["a", "b", "c", "d", "out"]
    # c is not done: b (its input) and a (b's input) run again; the staged-out branch stays done
    assert to_rerun({"a", "b", "out"}, parents, nodes) == {"a", "b"}
    assert to_rerun({"a", "b", "c", "d", "out"}, parents, nodes) == set()


def _dag(data: st.DataObject) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """A random DAG (nodes in a topological order, each node's parents) and the nodes done."""
    n = data.draw(st.integers(1, 30))
    nodes = [f"n{i}" for i in range(n)]
    parents = {f"n{i}": [f"n{p}" for p in sorted(set(data.draw(st.lists(st.integers(0, i - 1), max_size=3))))]
               for i in range(1, n)}
    return nodes, parents, {node for node in nodes if data.draw(st.booleans())}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_kept_nodes_feed_no_unfinished_node(data: st.DataObject) -> None:
    nodes, parents, done = _dag(data)
    rerun = to_rerun(done, parents, nodes)
    keep = done - rerun
    assert rerun <= done
    todo = set(nodes) - keep  # every node that runs on the new site
    assert all(parent not in keep or child in keep for child in todo for parent in parents.get(child, ()))
    # minimal: a rerun node feeds something that runs
    children = {p: [c for c, ps in parents.items() if p in ps] for p in nodes}
    assert all(any(c in todo for c in children[node]) for node in rerun)


def test_only_lost_outputs_are_recomputed() -> None:
    parents = {"b": ["a"], "c": ["b"], "d": ["c"]}
    nodes = ["a", "b", "c", "d"]
    # d waits on c; c's output is on a dead site, b's is within reach: c runs again, b and a do not
    assert to_rerun({"a", "b", "c"}, parents, nodes, lost={"a", "c"}) == {"c"}
    assert to_rerun({"a", "b", "c"}, parents, nodes, lost=set()) == set()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_rescue_needs_nothing_out_of_reach_and_reruns_nothing_within(data: st.DataObject) -> None:
    nodes, parents, done = _dag(data)
    lost = {node for node in sorted(done) if data.draw(st.booleans())}
    rerun = to_rerun(done, parents, nodes, lost)
    keep = done - rerun
    assert rerun <= lost  # a finished node whose outputs are within reach never runs again
    todo = set(nodes) - keep
    # every input of a node that runs is produced again, or kept and within reach
    assert all(parent not in keep or parent not in lost
               for child in todo for parent in parents.get(child, ()))
    children = {p: [c for c, ps in parents.items() if p in ps] for p in nodes}
    assert all(any(c in todo for c in children[node]) for node in rerun)  # minimal
