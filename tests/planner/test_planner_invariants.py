"""Invariants on random DAGs (hypothesis) and on the five real WfCommons traces; determinism."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_builders import TRACE_NAMES, catalog, job, read_trace, run, sites, trace_catalog, workflow
from planner_invariants import check, label_cycle, sites_of, whole_cycle

from sheaf.errors import PlanningError
from sheaf.model import PFN, Job, Properties, Replica, ReplicaCatalog, Use, Workflow
from sheaf.planner import DataOptions, ExecutableWorkflow, plan, plan_data

TECHNIQUES = [[], ["horizontal"], ["label"], ["whole"], ["label", "horizontal"], ["horizontal", "label"],
              ["horizontal", "whole"], ["label", "whole"]]
LABEL_SITE = {"x": "s1", "y": "s2", "z": "s1"}


@st.composite
def random_workflows(draw: st.DrawFn) -> tuple[Workflow, dict[str, str], list[str]]:
    n = draw(st.integers(min_value=1, max_value=22))
    runtime = draw(st.booleans())
    jobs: list[Job] = []
    for i in range(n):
        sub = draw(st.integers(0, 9)) == 0
        label = draw(st.sampled_from([None, None, "x", "y", "z"]))
        profiles: dict[str, dict[str, str]] = {"pegasus": {"runtime": str(draw(st.integers(1, 60)))}}
        if label:
            profiles["pegasus"]["label"] = label
            profiles["selector"] = {"execution.site": LABEL_SITE[label]}
        if sub:
            jobs.append(job(f"j{i}", "sub.yml", type_="pegasusWorkflow", profiles=profiles))
        else:
            jobs.append(job(f"j{i}", draw(st.sampled_from(["T0", "T1", "T2"])), profiles=profiles))
    edges = [(f"j{a}", f"j{b}") for b in range(n) for a in range(b)
             if draw(st.integers(0, 99)) < 100 * min(1.0, 2.5 / max(b, 1))]
    properties = {"pegasus.selector.site": draw(st.sampled_from(["Random", "RoundRobin"]))}
    if runtime:
        properties["pegasus.clusterer.preference"] = "Runtime"
    for key in ("clusters.size", "clusters.num", "clusters.maxruntime"):
        value = draw(st.sampled_from([None, "1", "2", "3", "90"]))
        if value is not None:
            properties[f"pegasus.{key}"] = value
    properties["pegasus.clusterer.allow.single"] = draw(st.sampled_from(["true", "false"]))
    shuffled = draw(st.permutations(jobs))  # file order is not a topological order
    return workflow(shuffled, edges), properties, draw(st.sampled_from(TECHNIQUES))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_workflows(), st.integers(0, 3))
def test_random_dags_keep_every_invariant(case: tuple[Workflow, dict[str, str], list[str]],
                                          seed: int) -> None:
    wf, properties, techniques = case
    tc = catalog("T0", "T1", "T2", sites=("s1", "s2"))
    sc = sites("s1", "s2", "local")
    unclustered = run(wf, tc, sc, properties=properties, seed=seed)
    where = sites_of(unclustered)
    expect_error = None
    if techniques[:1] == ["label"] and label_cycle(wf):
        expect_error = "invalid labelling"
    elif "whole" in techniques and len({where[j] for j, v in wf.jobs.items() if not v.is_subworkflow}) > 1:
        expect_error = "whole-workflow clustering needs every job on one site"
    elif "whole" in techniques and whole_cycle(wf):
        expect_error = "whole-workflow clustering is impossible"
    try:
        ew = run(wf, tc, sc, properties=properties, clustering=techniques, seed=seed)
    except PlanningError as exc:
        if techniques == ["horizontal", "label"] and "invalid labelling" in str(exc):
            return  # labels of jobs already in horizontal clusters do not count: no simple oracle
        assert expect_error is not None and expect_error in str(exc), str(exc)
        return
    assert expect_error is None, f"expected {expect_error}"
    check(wf, ew, where, horizontal_only=techniques == ["horizontal"])


def test_label_oracle_agrees_on_the_issue_example() -> None:
    bad = workflow([job("A", "T", profiles={"pegasus": {"label": "x"}}), job("B", "T"),
                    job("C", "T", profiles={"pegasus": {"label": "x"}})], [("A", "B"), ("B", "C")])
    assert label_cycle(bad)


TRACE_SETUPS = {
    "none": ([], {}),
    "size": (["horizontal"], {"pegasus.clusters.size": "7"}),
    "num": (["horizontal"], {"pegasus.clusters.num": "3"}),
    "maxruntime": (["horizontal"], {"pegasus.clusterer.preference": "Runtime",
                                    "pegasus.clusters.maxruntime": "300"}),
    "runtime-num": (["horizontal"], {"pegasus.clusterer.preference": "Runtime", "pegasus.clusters.num": "4"}),
    "whole": (["whole"], {}),
}


@pytest.mark.parametrize("setup", sorted(TRACE_SETUPS))
@pytest.mark.parametrize("name", TRACE_NAMES)
def test_real_traces_keep_every_invariant(name: str, setup: str) -> None:
    wf = read_trace(name)
    techniques, properties = TRACE_SETUPS[setup]
    tc = trace_catalog(wf, sites_=("s1", "s2"))
    sc = sites("s1", "s2", "local")
    chosen = ["s1"] if "whole" in techniques else None  # whole: one site, else an error (tested above)
    ew = run(wf, tc, sc, properties=properties, clustering=techniques, seed=3, sites=chosen)
    check(wf, ew, sites_of(run(wf, tc, sc, seed=3, sites=chosen)),
          horizontal_only=techniques == ["horizontal"])
    if techniques:
        assert len(ew.jobs) < len(wf.jobs)


@pytest.mark.parametrize("name", TRACE_NAMES)
def test_real_traces_labelled_by_transformation(name: str) -> None:
    """Label every job with its transformation: valid for some traces, a cycle for others."""
    wf = read_trace(name)
    for j in wf.jobs.values():
        j.profiles = {**j.profiles, "pegasus": {**j.profiles.get("pegasus", {}), "label": j.name}}
    tc = trace_catalog(wf)
    if label_cycle(wf):
        with pytest.raises(PlanningError, match="invalid labelling"):
            run(wf, tc, clustering=["label", "horizontal"])
    else:
        ew = run(wf, tc, clustering=["label", "horizontal"])
        check(wf, ew, sites_of(run(wf, tc)))
        assert len(ew.jobs) == len({j.name for j in wf.jobs.values()})


_DIGEST = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from planner_builders import read_trace, trace_catalog, sites, run
wf = read_trace(sys.argv[2])
for i, j in enumerate(wf.jobs.values()):
    if i % 5 == 0:
        j.profiles = {**j.profiles, "pegasus": {**j.profiles.get("pegasus", {}), "label": "L" + j.name}}
tc = trace_catalog(wf, sites_=("s1", "s2", "s3"))
out = []
for techniques, props, only in [
        (["horizontal"], {"pegasus.clusters.size": "5"}, None),
        (["horizontal"], {"pegasus.clusterer.preference": "Runtime",
                          "pegasus.clusters.maxruntime": "200"}, None),
        (["label", "horizontal"], {"pegasus.clusters.size": "3"}, ["s2"]),
        (["whole"], {}, ["s1"])]:
    ew = run(wf, tc, sites("s1", "s2", "s3", "local"), properties=props, clustering=techniques, seed=11,
             sites=only)
    out.append([[j.id, j.site, j.task_ids, j.profiles, j.arguments, j.level] for j in ew.jobs])
    out.append(ew.edges)
    out.append(ew.notes)
print(hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest())
"""


def test_plans_are_identical_under_any_hash_seed() -> None:
    name = "epigenomics-chameleon-ilmn-6seq-50k-001.json"
    digests = set()
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", _DIGEST, str(Path(__file__).parent), name],
                              env=env, capture_output=True, text=True, check=True)
        digests.add(done.stdout.strip())
    assert len(digests) == 1 and len(next(iter(digests))) == 64


#: job i: the files it reads and writes, by number; a file is written by its first writer only, and
#: only if no job read it before
_IO = st.tuples(st.lists(st.integers(0, 11), max_size=3), st.lists(st.integers(0, 11), max_size=2),
                st.sampled_from(["output", "output", "checkpoint"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_IO, min_size=1, max_size=10), st.sets(st.integers(0, 11)), st.booleans(),
       st.sampled_from([(), ("horizontal",)]))
def test_the_data_pass_plans_the_same_from_the_graphs_inputs(
        tmp_path_factory: pytest.TempPathFactory, jobs: list[tuple[list[int], list[int], str]],
        replicas: set[int], staged_out: bool, clustering: tuple[str, ...]) -> None:
    """plan() hands the data pass the inputs and checkpoints its job graph found; plan_data run on its
    own builds the graph for them.  Both plan the same data jobs, lists and edges."""
    wf = Workflow("io")
    seen: set[int] = set()  # a file is written before it is read, or never: no cycle
    for i, (reads, writes, kind) in enumerate(jobs):
        uses = [Use(f"f{n}") for n in sorted(set(reads))]
        seen.update(reads)
        for n in sorted(set(writes)):
            if n not in seen:
                seen.add(n)
                uses.append(Use(f"f{n}", kind, stage_out=staged_out, register_replica=False))  # type: ignore[arg-type]
        wf.jobs[f"j{i}"] = Job(f"j{i}", "T0", uses=tuple(uses))
    # every input has a replica (planning fails on one without), some outputs too
    read = {n for reads, _, _ in jobs for n in reads}
    rc = ReplicaCatalog([Replica(f"f{n}", (PFN(f"file:///data/f{n}", "local"),))
                         for n in sorted(replicas | read)])
    submit = str(tmp_path_factory.mktemp("submit"))
    options = {"output_dir": submit + "/outputs" if staged_out else None, "force": True}

    def planned(data: DataOptions) -> ExecutableWorkflow:
        return plan(wf, tc=catalog("T0"), sc=sites("condorpool", "local"), rc=rc, properties=Properties({}),
                    clustering=clustering, data=data)

    at_once = planned(DataOptions(submit_dir=submit, **options))  # type: ignore[arg-type]
    apart = planned(DataOptions(**options))  # type: ignore[arg-type]
    plan_data(apart, submit)
    assert [(j.id, j.type, j.level, j.arguments) for j in at_once.jobs] == \
        [(j.id, j.type, j.level, j.arguments) for j in apart.jobs]
    assert at_once.edges == apart.edges and at_once.job_inputs == apart.job_inputs
    assert at_once.warnings == apart.warnings
