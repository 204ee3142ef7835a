"""Data reuse hands the planner the job graph it built when it pruned nothing: the same graph the
planner would build; none when jobs were pruned (the planner then builds the reduced workflow's) or
the catalog is empty."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.model import PFN, Job, Replica, ReplicaCatalog, Use, Workflow, all_uses, build_graph
from sheaf.planner._reuse import reduce_workflow

FILES = [f"f{i}" for i in range(8)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Workflow, ReplicaCatalog]:
    wf = Workflow("reuse")
    made: set[str] = set()
    for i in range(draw(st.integers(1, 8))):
        uses = []
        drawn = st.tuples(st.sampled_from(FILES), st.sampled_from(["input", "output"]))
        for lfn, kind in draw(st.lists(drawn, max_size=3, unique_by=lambda u: u[0])):
            if kind == "output":
                if lfn in made:
                    continue
                made.add(lfn)
            uses.append(Use(lfn, kind))  # type: ignore[arg-type]
        wf.jobs[f"j{i}"] = Job(f"j{i}", "t", uses=tuple(uses))
    names = draw(st.sets(st.sampled_from(FILES)))
    replicas = [Replica(lfn, (PFN(f"file:///data/{lfn}", "local"),)) for lfn in sorted(names)]
    if draw(st.booleans()):
        replicas.append(Replica(r"f[0-2]", (PFN("file:///data/regex", "local"),), regex=True))
    return wf, ReplicaCatalog(replicas)


@settings(max_examples=300)
@given(cases())
def test_the_graph_comes_back_exactly_when_nothing_is_pruned(case: tuple[Workflow, ReplicaCatalog]) -> None:
    wf, rc = case
    reduced, pruned, _, graph = reduce_workflow(wf, rc)
    outputs = {u.lfn for job in wf.jobs.values() for u in all_uses(job) if u.type != "input"}
    if build_graph(wf).topological_order() is None or not any(rc.lookup(lfn) for lfn in outputs):
        assert pruned == []  # a cycle (left for the planner to report), or no output has a replica
    else:
        for job in wf.jobs.values():  # the rule's first part: a job whose outputs all have replicas goes
            made = [u.lfn for u in all_uses(job) if u.type != "input"]
            assert (job.id in pruned) >= bool(made and all(rc.lookup(lfn) for lfn in made)), job.id
    if pruned:
        assert graph is None and len(reduced.jobs) < len(wf.jobs)
    elif not len(rc):  # an empty catalog: nothing to look at, no graph built
        assert graph is None and reduced is wf
    else:
        assert graph is not None and reduced is wf
        fresh = build_graph(wf)
        assert graph.ids == fresh.ids and list(graph.edges()) == list(fresh.edges())
        assert graph.inputs == fresh.inputs and graph.checkpoints == fresh.checkpoints
