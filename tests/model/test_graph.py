"""The job graph: CSR structure, topological order, levels, cycles as data, file-implied edges."""

from __future__ import annotations

import graphlib
import itertools
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import ValidationError
from sheaf.model import Job, Use, Workflow, all_uses, build_graph, cycle_in, kahn_levels, validate


def _workflow(n: int, edges: list[tuple[int, int]], names: list[str] | None = None) -> Workflow:
    ids = names or [f"j{i}" for i in range(n)]
    wf = Workflow("g")
    for jid in ids:
        wf.jobs[jid] = Job(jid, "t")
    for parent, child in edges:
        wf.add_dependency(ids[parent], ids[child])
    return wf


@st.composite
def dags(draw: Any) -> tuple[int, list[tuple[int, int]], list[int]]:
    """A random DAG: edges go forward in a random permutation of the nodes."""
    n = draw(st.integers(1, 25))
    perm = draw(st.permutations(list(range(n))))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=60)) if pairs else []
    return n, [(perm[a], perm[b]) for a, b in chosen], perm


def _reference_levels(n: int, edges: list[tuple[int, int]]) -> list[int]:
    level = [1] * n
    for _ in range(n):  # Bellman-Ford-style relaxation: fine for small graphs, obviously right
        for parent, child in edges:
            level[child] = max(level[child], level[parent] + 1)
    return level


@settings(max_examples=150, deadline=None)
@given(dags())
def test_dag_order_levels_and_csr(case: tuple[int, list[tuple[int, int]], list[int]]) -> None:
    n, edges, _ = case
    graph = build_graph(_workflow(n, edges))
    unique = set(edges)
    assert graph.edge_count == len(unique)
    assert set(graph.edges()) == unique
    for node in range(n):
        assert list(graph.parents(node)) == sorted({p for p, c in unique if c == node})
        assert list(graph.children(node)) == sorted({c for p, c in unique if p == node})
    order = graph.topological_order()
    assert order is not None and sorted(order) == list(range(n))
    position = {node: i for i, node in enumerate(order)}
    assert all(position[p] < position[c] for p, c in unique)
    assert graph.levels(order) == _reference_levels(n, edges)
    assert graph.find_cycle() is None
    assert graph.roots() == [i for i in range(n) if not any(c == i for _, c in unique)]


@settings(max_examples=150, deadline=None)
@given(dags(), st.data())
def test_a_back_edge_makes_a_cycle_reported_as_a_path(case: tuple[int, list[tuple[int, int]], list[int]],
                                                      data: st.DataObject) -> None:
    n, edges, perm = case
    if n < 2:
        return
    a, b = sorted(data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True)))
    # a forward path perm[a] -> perm[b] plus the edge back closes a cycle
    edges = [*edges, (perm[a], perm[b]), (perm[b], perm[a])]
    wf = _workflow(n, edges)
    graph = build_graph(wf)
    assert graph.topological_order() is None
    cycle = graph.find_cycle()
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) >= 3
    index = graph.index
    unique = set(edges)
    assert all((index[x], index[y]) in unique for x, y in itertools.pairwise(cycle))
    with pytest.raises(ValidationError, match="cycle") as info:
        validate(wf)
    assert info.value.detail is not None and info.value.detail.startswith("cycle: ")


def test_file_implied_edges() -> None:
    wf = Workflow("f")
    wf.jobs["a"] = Job("a", "t", uses=(Use("x", "output"),))
    wf.jobs["b"] = Job("b", "t", uses=(Use("x"), Use("y", "output")))
    wf.jobs["c"] = Job("c", "t", uses=(Use("x"), Use("y"), Use("z", "checkpoint")))
    wf.jobs["d"] = Job("d", "t", uses=(Use("z"),))
    graph = build_graph(wf)
    assert sorted(graph.edges()) == [(0, 1), (0, 2), (1, 2), (2, 3)]
    assert graph.levels() == [1, 2, 3, 4]
    assert build_graph(wf, infer=False).edge_count == 0
    assert wf.dependencies == {}  # the graph never writes implied edges back into the model


def test_a_job_reading_a_file_it_writes_is_refused_but_a_checkpoint_file() -> None:
    """Pegasus's planner refuses a file listed as a job's input and output ("is listed as input and
    output for job"), unless it is a checkpoint file; a WfCommons trace's task is let through."""
    wf = Workflow("io")
    wf.jobs["a"] = Job("a", "t", uses=(Use("f.txt"), Use("f.txt", "output")))
    with pytest.raises(ValidationError, match=r"'f\.txt' is listed as input and output of job 'a'"):
        build_graph(wf)
    wf.trace = True
    assert build_graph(wf).inputs == set()
    wf = Workflow("io")
    wf.jobs["a"] = Job("a", "t", uses=(Use("c.txt", "checkpoint"), Use("c.txt", "output")))
    assert build_graph(wf).checkpoints == {"c.txt"}


#: job i's uses: (file number, kind) pairs; several jobs may produce one file
_USES = st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["input", "output", "checkpoint"])), max_size=4)


@given(st.lists(_USES, min_size=1, max_size=8), st.sets(st.sampled_from([f"f{i}" for i in range(10)]
                                                                      + ["out0.txt", "in.txt"])))
def test_the_graph_finds_the_workflows_inputs_and_checkpoints(jobs: list[list[tuple[int, str]]],
                                                              watch: set[str]) -> None:
    """What the data pass would otherwise walk every use for: the files read as inputs that no job
    produces, and the checkpoint files -- with stream uses (stdin, stdout) counted as the jobs' uses;
    and what data reuse would: which of the names it watches jobs produce."""
    wf = Workflow("io")
    for i, uses in enumerate(jobs):
        kept = [Use(f"f{number}", kind) for number, kind in uses]  # type: ignore[arg-type]
        # a job does not read what it writes, but for a checkpoint file (refused: test below)
        writes = {u.lfn for u in kept if u.type == "output"} - {u.lfn for u in kept if u.type == "checkpoint"}
        kept = [u for u in kept if not (u.type == "input" and u.lfn in writes)]
        wf.jobs[f"j{i}"] = Job(f"j{i}", "t", uses=tuple(kept), stdin="in.txt" if i == 0 else None,
                               stdout=f"out{i}.txt")
    read = {u.lfn for job in wf.jobs.values() for u in all_uses(job) if u.type == "input"}
    made = {u.lfn for job in wf.jobs.values() for u in all_uses(job) if u.type != "input"}
    graph = build_graph(wf)
    assert graph.inputs == read - made
    assert graph.checkpoints == {u.lfn for job in wf.jobs.values() for u in job.uses
                                 if u.type == "checkpoint"}
    assert graph.file_count == len(read | made)
    makers: dict[str, list[int]] = {}
    for i, job in enumerate(wf.jobs.values()):
        for lfn in dict.fromkeys(u.lfn for u in all_uses(job) if u.type != "input"):
            makers.setdefault(lfn, []).append(i)
    assert graph.shared_outputs == {lfn: found for lfn, found in makers.items() if len(found) > 1}
    assert graph.produced_watched is None
    assert build_graph(wf, watch=watch).produced_watched == (made & watch if watch else None)
    assert build_graph(wf, infer=False).inputs is None


@pytest.mark.parametrize(("edit", "words"), [
    (lambda wf: wf.add_dependency("nope", "j0"), "names an unknown job"),
    (lambda wf: wf.add_dependency("j0", "nope"), "of job 'j0' names an unknown job"),
    (lambda wf: wf.add_dependency("j1", "j1"), "depends on itself"),
])
def test_bad_references(edit: Any, words: str) -> None:
    wf = _workflow(3, [])
    edit(wf)
    with pytest.raises(ValidationError, match=words):
        build_graph(wf)


def test_readers_of_a_file_two_jobs_produce_follow_the_last() -> None:
    """pegasus-plan keeps the last producer of a file it reads for the data dependencies."""
    wf = Workflow("p")
    wf.jobs["r0"] = Job("r0", "t", uses=(Use("f", "input"),))
    wf.jobs["a"] = Job("a", "t", uses=(Use("f", "output"),))
    wf.jobs["b"] = Job("b", "t", uses=(Use("f", "checkpoint"),))
    wf.jobs["c"] = Job("c", "t", uses=(Use("f", "output"), Use("g", "output")))
    wf.jobs["r1"] = Job("r1", "t", uses=(Use("f", "input"),))
    graph = build_graph(wf)
    assert sorted(graph.edges()) == [(3, 0), (3, 4)]  # c -> r0, c -> r1; b reads its own copy
    assert graph.shared_outputs == {"f": [1, 2, 3]} and graph.inputs == set()


def test_an_earlier_producer_that_reads_the_file_is_refused() -> None:
    wf = Workflow("p")
    wf.jobs["a"] = Job("a", "t", uses=(Use("f", "input"), Use("f", "output")))
    wf.jobs["b"] = Job("b", "t", uses=(Use("f", "output"),))
    with pytest.raises(ValidationError, match="input and output of job 'a'"):
        build_graph(wf)


def _leaves_its_directory(lfn: str) -> bool:
    return not lfn or lfn.startswith("/") or ".." in lfn.split("/")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab./\n", max_size=7), min_size=1, max_size=6, unique=True))
def test_a_produced_lfn_that_leaves_its_directory_is_refused(lfns: list[str]) -> None:
    """Empty, absolute, or with a '..' part: its stage-out or cleanup would reach outside the working
    directory (a '..' inside a name, or a newline, is no such part)."""
    wf = Workflow("w")
    for n, lfn in enumerate(lfns):
        wf.jobs[f"j{n}"] = Job(f"j{n}", "t", uses=(Use("in", "input"), Use(lfn, "output")))
    bad = [lfn for lfn in lfns if _leaves_its_directory(lfn)]
    if not bad:
        build_graph(wf)
        return
    with pytest.raises(ValidationError, match="outside its working directory") as info:
        build_graph(wf)
    assert info.value.value == bad[0]


def test_an_input_may_be_named_by_any_path() -> None:
    """Only what jobs write is refused; an input's name is the replica selection's business."""
    wf = Workflow("w")
    wf.jobs["a"] = Job("a", "t", uses=(Use("/data/x", "input"), Use("../y", "input"), Use("out", "output")))
    assert build_graph(wf).inputs == {"/data/x", "../y"}


def test_deep_chain_is_iterative() -> None:
    n = 50_000  # deeper than any recursion limit
    graph = build_graph(_workflow(n, [(i, i + 1) for i in range(n - 1)]))
    assert graph.levels()[-1] == n
    cyclic = build_graph(_workflow(n, [(i, i + 1) for i in range(n - 1)] + [(n - 1, 0)]))
    assert len(cyclic.find_cycle() or []) == n + 1


_PROGRAM = """
import json, random
from sheaf.model import Job, Use, Workflow, validate
rng = random.Random(7)
wf = Workflow("h")
names = [f"job-{i}" for i in range(300)]
for i, name in enumerate(names):
    uses = [Use(f"out-{i}", "output")] + [Use(f"out-{rng.randrange(i)}") for _ in range(3) if i]
    wf.jobs[name] = Job(name, "t", uses=tuple(uses))
for _ in range(200):
    a, b = sorted(rng.sample(range(300), 2))
    wf.add_dependency(names[a], names[b])
graph, levels, summary = validate(wf)
print(json.dumps([list(graph.edges()), graph.topological_order(), levels, summary.edges]))
"""


def test_deterministic_under_two_hash_seeds() -> None:
    outputs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True,
                              check=True, timeout=120)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))))
def test_kahn_levels_and_cycle_in_agree_with_graphlib(case: tuple[int, list[tuple[int, int]]]) -> None:
    """The generic toolkit against the standard library's: the same nodes are ordered, a node comes
    after its parents at a deeper level, and what is blocked holds a cycle whose edges all exist."""
    n, edges = case
    parents: dict[int, list[int]] = {i: [] for i in range(n)}
    children: dict[int, list[int]] = {i: [] for i in range(n)}
    for p, c in edges:
        parents[c].append(p)
        children[p].append(c)
    levels, blocked = kahn_levels(range(n), parents.__getitem__, children.__getitem__)
    depth = {node: d for d, members in enumerate(levels, 1) for node in members}
    sorter = graphlib.TopologicalSorter({c: parents[c] for c in range(n)})
    try:
        list(sorter.static_order())
        acyclic = True
    except graphlib.CycleError:
        acyclic = False
    assert (blocked == []) == acyclic
    assert sorted([*depth, *blocked]) == list(range(n))
    for p, c in edges:
        if c in depth:
            assert depth[c] >= depth[p] + 1
    cycle = cycle_in(blocked, parents.__getitem__)
    assert (cycle == []) == acyclic
    if cycle:
        assert cycle[0] == cycle[-1] and all(p in parents[c] for p, c in itertools.pairwise(cycle))
