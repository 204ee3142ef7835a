"""Horizontal and runtime clustering: the Pegasus manual's examples, sheaf's rules, the aggregators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from planner_builders import blackdiamond, by_id, catalog, job, run, sites, tasks_of, workflow

from sheaf.errors import PlanningError, ValidationError
from sheaf.model import TransformationCatalog, Workflow
from sheaf.planner import ExecJob, ExecutableWorkflow

Prof = Mapping[str, Mapping[str, str]]


def fan(n: int, name: str = "B", profiles: Prof | None = None,
        per_job: Sequence[Prof | None] | None = None) -> tuple[Workflow, TransformationCatalog]:
    """A root A feeding n jobs of transformation ``name`` (all at level 2)."""
    jobs = [job("a", "A")] + [job(f"b{i}", name, profiles=(per_job[i] if per_job else None))
                             for i in range(n)]
    wf = workflow(jobs, [("a", f"b{i}") for i in range(n)])
    return wf, catalog("A", name, profiles=profiles)


def clusters(ew: ExecutableWorkflow) -> list[ExecJob]:
    return [j for j in ew.jobs if j.type == "cluster"]


def test_blackdiamond_names_levels_and_edges() -> None:
    wf, tc = blackdiamond({"pegasus": {"clusters.size": "2"}})
    ew = run(wf, tc, clustering=["horizontal"])
    ids = [j.id for j in ew.jobs]
    assert ids == ["preprocess_ID0000001", "merge_diamond-findrange-4_0_PID2_ID1", "analyze_ID0000004"]
    merge = by_id(ew)["merge_diamond-findrange-4_0_PID2_ID1"]
    assert merge.task_ids == ["ID0000002", "ID0000003"] and merge.level == 2
    assert merge.transformation == "diamond::findrange:4.0" and merge.aggregator == "seqexec"
    assert merge.technique == "horizontal" and merge.site == "condorpool"
    assert sorted(ew.edges) == [(0, 1), (1, 2)]
    assert [j.level for j in ew.jobs] == [1, 2, 3]


@pytest.mark.parametrize(("key", "value", "sizes"), [
    ("clusters.size", "3", [3, 1]),     # the 5.x seed: 4 jobs, size 3 -> 3 and 1
    ("clusters.num", "3", [2, 1, 1]),   # 4 jobs, num 3 -> 2, 1, 1
    ("clusters.size", "4", [4]),
    ("clusters.num", "1", [4]),
    ("clusters.num", "9", [1, 1, 1, 1]),
])
def test_size_and_num_split_four_jobs(key: str, value: str, sizes: list[int]) -> None:
    wf, tc = fan(4, profiles={"pegasus": {key: value}})
    ew = run(wf, tc, clustering=["horizontal"], properties={"pegasus.clusterer.allow.single": "true"})
    assert [len(j.tasks) for j in ew.jobs if j.task_ids[0].startswith("b")] == sizes
    assert all(j.type == "cluster" for j in ew.jobs if j.task_ids[0].startswith("b"))


def test_num_wins_over_size() -> None:
    wf, tc = fan(4, profiles={"pegasus": {"clusters.num": "3", "clusters.size": "3"}})
    ew = run(wf, tc, clustering=["horizontal"])
    assert tasks_of(ew) == [["a"], ["b0", "b1"], ["b2"], ["b3"]]
    assert [j.type for j in ew.jobs] == ["compute", "cluster", "compute", "compute"]


def test_chunk_of_one_is_the_plain_job_unless_allow_single() -> None:
    wf, tc = fan(4, profiles={"pegasus": {"clusters.size": "3"}})
    ew = run(wf, tc, clustering=["horizontal"])
    last = ew.jobs[-1]
    assert last.type == "compute" and last.id == "B_b3" and last.aggregator is None
    single = run(wf, tc, clustering=["horizontal"], properties={"pegasus.clusterer.allow.single": "true"})
    assert single.jobs[-1].type == "cluster" and single.jobs[-1].task_ids == ["b3"]
    assert single.jobs[-1].id == "merge_B_PID2_ID2"


def test_group_of_one_is_never_clustered() -> None:
    wf, tc = fan(1, profiles={"pegasus": {"clusters.size": "3"}})
    ew = run(wf, tc, clustering=["horizontal"], properties={"pegasus.clusterer.allow.single": "true"})
    assert [j.type for j in ew.jobs] == ["compute", "compute"]


def test_no_clusters_keys_means_nothing_is_merged() -> None:
    wf, tc = fan(4)
    ew = run(wf, tc, clustering=["horizontal"])
    assert all(j.type == "compute" for j in ew.jobs) and len(ew.jobs) == 5


def test_groups_split_by_level_site_and_transformation() -> None:
    jobs = [job("r", "A")] + [job(f"x{i}", "X") for i in range(3)] + [job(f"y{i}", "Y") for i in range(3)]
    jobs += [job("x9", "X")]  # level 3: below x0
    edges = [("r", f"x{i}") for i in range(3)] + [("r", f"y{i}") for i in range(3)] + [("x0", "x9")]
    tc = catalog("A", "X", "Y", profiles={"pegasus": {"clusters.size": "10"}})
    ew = run(workflow(jobs, edges), tc, clustering=["horizontal"])
    assert tasks_of(ew) == [["r"], ["x0", "x1", "x2"], ["y0", "y1", "y2"], ["x9"]]
    assert [j.id for j in ew.jobs][1:3] == ["merge_X_PID2_ID1", "merge_Y_PID2_ID2"]


def test_every_site_of_a_transformation_in_a_level_is_clustered() -> None:
    wf, tc = fan(6, profiles={"pegasus": {"clusters.size": "10"}})
    tc = catalog("A", "B", sites=("s1", "s2"), profiles={"pegasus": {"clusters.size": "10"}})
    sc = sites("s1", "s2", "local")
    ew = run(wf, tc, sc, properties={"pegasus.selector.site": "RoundRobin"}, clustering=["horizontal"])
    merged = clusters(ew)
    assert {j.site for j in merged} == {"s1", "s2"}
    assert sorted(t for j in merged for t in j.task_ids) == [f"b{i}" for i in range(6)]
    assert len(merged) == 2 and all(len(j.tasks) == 3 for j in merged)


def test_disagreeing_clusters_values_name_two_jobs() -> None:
    per_job = [{"pegasus": {"clusters.size": "2"}}, None, {"pegasus": {"clusters.size": "3"}}]
    wf, tc = fan(3, per_job=per_job)
    with pytest.raises(PlanningError) as info:
        run(wf, tc, clustering=["horizontal"])
    text = str(info.value)
    assert "'b0'" in text and "'b1'" in text and "clusters.size" in text


def test_non_numeric_clusters_value_is_an_error_with_rule_and_value() -> None:
    wf, tc = fan(3, profiles={"pegasus": {"clusters.size": "three"}})
    with pytest.raises(ValidationError) as info:
        run(wf, tc, clustering=["horizontal"])
    assert info.value.value == "three" and "integer" in (info.value.rule or "")


def test_subworkflow_jobs_are_never_clustered() -> None:
    jobs = [job("s1", "inner.yml", type_="pegasusWorkflow"), job("s2", "inner.yml", type_="pegasusWorkflow")]
    ew = run(workflow(jobs), catalog("A"), clustering=["horizontal", "whole"],
             properties={"pegasus.clusters.size": "5"})
    assert [(j.type, j.site) for j in ew.jobs] == [("subworkflow", "local")] * 2


# -- runtime clustering -------------------------------------------------------------------------

RUNTIME = {"pegasus.clusterer.preference": "Runtime"}


def runtime_fan(runtimes: list[float], profiles: dict[str, str]) -> tuple[Workflow, TransformationCatalog]:
    per_job = [{"pegasus": {"runtime": str(r)}} for r in runtimes]
    return fan(len(runtimes), per_job=per_job, profiles={"pegasus": profiles})


def test_maxruntime_alone_packs_first_fit_decreasing() -> None:
    wf, tc = runtime_fan([100, 250, 100, 400, 50, 300], {"clusters.maxruntime": "300"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    # longest first: b5 300 | b1 250 + b4 50 | b0 100 + b2 100; b3 (400 > 300) stays alone
    assert tasks_of(ew)[1:] == [["b0", "b2"], ["b1", "b4"], ["b3"], ["b5"]]
    assert [j.type for j in ew.jobs][1:] == ["cluster", "cluster", "compute", "compute"]
    made = clusters(ew)
    assert all(j.technique == "runtime" for j in made)
    assert {j.profiles["pegasus"]["runtime"] for j in made} == {"300", "200"}
    assert any("longer than clusters.maxruntime" in n and "b3" in n for n in ew.notes)


def test_clusters_num_balances_by_longest_processing_time() -> None:
    wf, tc = runtime_fan([50, 40, 30, 30, 20, 20, 10], {"clusters.num": "2"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    loads = sorted(int(j.profiles["pegasus"]["runtime"]) for j in clusters(ew))
    assert loads == [100, 100]
    # LPT: 50->0, 40->1, 30->1 (70), 30->0 (80), 20->1 (90), 20->0 (100), 10->1 (100)
    assert tasks_of(ew)[1:] == [["b0", "b3", "b5"], ["b1", "b2", "b4", "b6"]]


def test_maxruntime_wins_over_num() -> None:
    wf, tc = runtime_fan([10, 10, 10, 10], {"clusters.num": "4", "clusters.maxruntime": "40"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    assert tasks_of(ew)[1:] == [["b0", "b1", "b2", "b3"]]


def test_runtime_without_either_key_warns_and_uses_horizontal_rules() -> None:
    wf, tc = runtime_fan([10, 10, 10], {"clusters.size": "2"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    assert tasks_of(ew)[1:] == [["b0", "b1"], ["b2"]]
    assert any("neither clusters.maxruntime nor clusters.num" in w for w in ew.warnings)


def test_runtime_missing_names_the_job() -> None:
    per_job = [{"pegasus": {"runtime": "5"}}, None, {"pegasus": {"runtime": "5"}}]
    wf, tc = fan(3, per_job=per_job, profiles={"pegasus": {"clusters.maxruntime": "100"}})
    with pytest.raises(PlanningError, match="'b1' has no runtime"):
        run(wf, tc, properties=RUNTIME, clustering=["horizontal"])


def test_runtime_ties_go_by_file_order_then_lowest_cluster() -> None:
    wf, tc = runtime_fan([10, 10, 10, 10], {"clusters.num": "2"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    assert tasks_of(ew)[1:] == [["b0", "b2"], ["b1", "b3"]]


def test_runtime_cluster_of_one_runs_as_the_plain_job() -> None:
    wf, tc = runtime_fan([90, 20, 20], {"clusters.maxruntime": "100"})
    ew = run(wf, tc, properties=RUNTIME, clustering=["horizontal"])
    assert [j.type for j in ew.jobs] == ["compute", "compute", "cluster"]
    assert ew.jobs[2].task_ids == ["b1", "b2"]


# -- aggregators --------------------------------------------------------------------------------

def test_seqexec_from_catalog_entry_with_first_job_fail() -> None:
    wf, tc = fan(2, profiles={"pegasus": {"clusters.size": "2"}})
    tc.transformations.update(catalog(("pegasus", "seqexec", None)).transformations)
    merge = clusters(run(wf, tc, clustering=["horizontal"]))[0]
    assert merge.executable == "/opt/condorpool/bin/seqexec" and merge.arguments == ("-f",)
    off = run(wf, tc, clustering=["horizontal"],
              properties={"pegasus.clusterer.job.aggregator.seqexec.firstjobfail": "false",
                          "pegasus.clusterer.job.aggregator": "seqexec"})
    assert clusters(off)[0].arguments == ()


def test_aggregator_arguments_are_appended() -> None:
    wf, tc = fan(2, profiles={"pegasus": {"clusters.size": "2", "job.aggregator.arguments": "-n 'a b'"}})
    merge = clusters(run(wf, tc, clustering=["horizontal"]))[0]
    assert merge.arguments == ("-f", "-n", "a b")


def test_swapped_namespace_entry_is_not_the_aggregator() -> None:
    wf, tc = fan(2, profiles={"pegasus": {"clusters.size": "2"}})
    tc.transformations.update(catalog(("seqexec", "pegasus", None), sites=("siteX",)).transformations)
    ew = run(wf, catalog("A", "B", sites=("siteX",), profiles={"pegasus": {"clusters.size": "2"}})
             .merged_with(tc), sites("siteX", "local", grid=("siteX",)), clustering=["horizontal"])
    assert not clusters(ew)
    assert any("swapped" in w and "seqexec::pegasus" in w for w in ew.warnings)
    assert any("site 'siteX'" in w and "stay unclustered" in w for w in ew.warnings)


def test_pegasus_home_then_embedded_then_nothing() -> None:
    wf, _ = fan(2)
    tc = catalog("A", "B", sites=("grid", "pool"), profiles={"pegasus": {"clusters.size": "2"}})
    sc = sites("grid", "pool", "local", grid=("grid",),
               profiles={"grid": {"env": {"PEGASUS_HOME": "/opt/pegasus"}}})
    home = clusters(run(wf, tc, sc, sites=["grid"], clustering=["horizontal"]))[0]
    assert home.executable == "/opt/pegasus/bin/pegasus-cluster"
    embedded = clusters(run(wf, tc, sc, sites=["pool"], clustering=["horizontal"]))[0]
    assert embedded.executable == "sheaf-cluster"
    mpi = clusters(run(wf, tc, sc, sites=["pool"], clustering=["horizontal"],
                       properties={"pegasus.clusterer.job.aggregator": "mpiexec"}))[0]
    assert mpi.executable == "sheaf-mpi-cluster" and mpi.aggregator == "mpiexec"
    sc2 = sites("grid", "local", grid=("grid",))
    nothing = run(wf, tc, sc2, sites=["grid"], clustering=["horizontal"])
    assert not clusters(nothing) and any("'grid'" in w for w in nothing.warnings)
    listed = run(wf, tc, sc2, sites=["grid"], clustering=["horizontal"],
                 properties={"sheaf.embedded.sites": "grid"})
    assert clusters(listed)[0].executable == "sheaf-cluster"


def test_aggregator_precedence_property_site_job_transformation() -> None:
    wf, _ = fan(2)
    agg = "job.aggregator"
    sc = sites("pool", "local", profiles={"pool": {"pegasus": {agg: "mpiexec"}}})
    tc = catalog("A", "B", sites=("pool",), profiles={"pegasus": {"clusters.size": "2"}})
    assert clusters(run(wf, tc, sc, clustering=["horizontal"]))[0].aggregator == "mpiexec"
    wf_job, _ = fan(2, per_job=[{"pegasus": {agg: "seqexec"}}] * 2)
    assert clusters(run(wf_job, tc, sc, clustering=["horizontal"]))[0].aggregator == "seqexec"
    tc_mpi = catalog("A", "B", sites=("pool",), profiles={"pegasus": {"clusters.size": "2", agg: "mpiexec"}})
    assert clusters(run(wf_job, tc_mpi, sc, clustering=["horizontal"]))[0].aggregator == "mpiexec"
    bad = catalog("A", "B", sites=("pool",), profiles={"pegasus": {"clusters.size": "2", agg: "parallel"}})
    with pytest.raises(PlanningError, match=r"job\.aggregator"):
        run(wf, bad, sc, clustering=["horizontal"])


def test_pmc_cluster_sized_from_the_mpiexec_entry() -> None:
    wf, tc = fan(3, profiles={"pegasus": {"clusters.size": "3", "job.aggregator": "mpiexec"}},
                 per_job=[{"pegasus": {"pmc_priority": "-5", "pmc_request_memory": "512"}}, None, None])
    mpi = catalog(("pegasus", "mpiexec", None), profiles={"pegasus": {"nodes": "1", "ppn": "32"},
                                                          "globus": {"maxwalltime": "120", "xcount": "32"}})
    tc.transformations.update(mpi.transformations)
    merge = clusters(run(wf, tc, clustering=["horizontal"]))[0]
    assert merge.aggregator == "mpiexec" and merge.executable == "/opt/condorpool/bin/mpiexec"
    assert merge.profiles["pegasus"]["nodes"] == "1" and merge.profiles["pegasus"]["ppn"] == "32"
    assert merge.profiles["globus"] == {"maxwalltime": "120", "xcount": "32"}
    assert merge.arguments == ("--max-wall-time", "120")
    assert merge.tasks[0].profiles["pegasus"]["pmc_priority"] == "-5"
    assert "pmc_priority" not in merge.profiles.get("pegasus", {})


def test_decaf_needs_its_catalog_entry() -> None:
    wf, tc = fan(2, profiles={"pegasus": {"clusters.size": "2", "job.aggregator": "decaf"}})
    assert not clusters(ew := run(wf, tc, clustering=["horizontal"]))
    assert any("dataflow::decaf" in w for w in ew.warnings)
    decaf = catalog(("dataflow", "decaf", None), profiles={
        "pegasus": {"glite.arguments": "--nodes=17", "exitcode.successmsg": "Execution time in seconds:",
                    "dagman.post": "pegasus-exitcode", "runtime": "18000"},
        "env": {"DECAF_ENV_SOURCE": "/env.sh"}})
    entry = decaf.transformations[("dataflow", "decaf", None)]
    from dataclasses import replace
    site = replace(entry.sites[0], pfn="/x/1Kgenome.json")
    decaf.transformations[entry.key] = replace(entry, sites=(site,))
    tc.transformations.update(decaf.transformations)
    merge = clusters(run(wf, tc, clustering=["horizontal"]))[0]
    assert merge.aggregator == "decaf" and merge.executable == "1Kgenome.json"
    assert merge.profiles["pegasus"]["glite.arguments"] == "--nodes=17"
    assert merge.profiles["pegasus"]["dagman.post"] == "pegasus-exitcode"
    assert merge.profiles["env"]["DECAF_ENV_SOURCE"] == "/env.sh"


# -- cluster profiles ---------------------------------------------------------------------------

def test_cluster_profiles_sum_max_agree_and_last_wins() -> None:
    per_job = [
        {"pegasus": {"runtime": "10", "memory": "1024", "maxwalltime": "5"},
         "condor": {"request_memory": "ifthenelse(DAGNodeRetry > 0, 4096, 1024)", "universe": "vanilla",
                    "priority": "1"}},
        {"pegasus": {"runtime": "20.5", "memory": "2048"},
         "condor": {"request_memory": "2048", "universe": "vanilla", "priority": "7"}},
    ]
    wf, tc = fan(2, per_job=per_job, profiles={"pegasus": {"clusters.size": "2"}})
    ew = run(wf, tc, clustering=["horizontal"])
    merge = clusters(ew)[0]
    assert merge.profiles["pegasus"]["runtime"] == "30.5"
    assert merge.profiles["pegasus"]["maxwalltime"] == "5"
    assert merge.profiles["pegasus"]["memory"] == "2048"
    assert merge.profiles["condor"]["request_memory"] == \
        "max({ifthenelse(DAGNodeRetry > 0, 4096, 1024), 2048})"
    assert merge.profiles["condor"]["universe"] == "vanilla"
    assert merge.profiles["condor"]["priority"] == "7"
    assert any("'priority' differs" in n for n in ew.notes)
    assert "clusters.size" not in merge.profiles["pegasus"]


def test_retry_expression_survives_as_a_classad_max() -> None:
    from sheaf import classad

    expr = "max({ifthenelse(DAGNodeRetry > 0, 4096, 1024), 2048})"
    assert classad.evaluate(expr, my="[DAGNodeRetry = 0]") == 2048
    assert classad.evaluate(expr, my="[DAGNodeRetry = 1]") == 4096
