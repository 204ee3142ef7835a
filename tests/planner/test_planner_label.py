"""Label, whole and recursive clustering; validation of labellings."""

from __future__ import annotations

import pytest
from planner_builders import blackdiamond, by_id, catalog, job, run, sites, tasks_of, workflow

from sheaf.errors import PlanningError
from sheaf.model import TransformationCatalog, Workflow


def lab(value: str) -> dict[str, dict[str, str]]:
    return {"pegasus": {"label": value}}


def test_label_cluster_runs_its_tasks_in_topological_order() -> None:
    # file order c, b, a but a -> b -> c: the cluster runs a, b, c
    jobs = [job("c", "C", profiles=lab("x")), job("b", "B", profiles=lab("x")),
            job("a", "A", profiles=lab("x")), job("u", "U")]
    ew = run(workflow(jobs, [("a", "b"), ("b", "c"), ("c", "u")]), catalog("A", "B", "C", "U"),
             clustering=["label"])
    assert tasks_of(ew) == [["a", "b", "c"], ["u"]]
    merge = ew.jobs[0]
    assert merge.id == "merge_x" and merge.label == "x" and merge.technique == "label"
    assert merge.transformation is None and ew.edges == [(0, 1)]


def test_unlabelled_jobs_untouched_and_custom_label_key() -> None:
    jobs = [job("a", "A", profiles={"pegasus": {"user_label": "p1"}}),
            job("b", "A", profiles={"pegasus": {"user_label": "p1"}}), job("c", "A", profiles=lab("p1"))]
    ew = run(workflow(jobs), catalog("A"), clustering=["label"],
             properties={"pegasus.clusterer.label.key": "user_label"})
    assert tasks_of(ew) == [["a", "b"], ["c"]]
    assert ew.jobs[0].transformation == "A"


def test_labelling_that_closes_a_cycle_is_rejected_with_its_path() -> None:
    jobs = [job("A", "T", profiles=lab("x")), job("B", "T"), job("C", "T", profiles=lab("x"))]
    with pytest.raises(PlanningError) as info:
        run(workflow(jobs, [("A", "B"), ("B", "C")]), catalog("T"), clustering=["label"])
    err = info.value
    assert err.value == "x" and "merge_x" in str(err)
    assert "A(x) -> B -> C(x)" in (err.detail or "")


def test_cycle_through_two_labels_is_rejected() -> None:
    jobs = [job("a1", "T", profiles=lab("x")), job("b1", "T", profiles=lab("y")),
            job("a2", "T", profiles=lab("x")), job("b2", "T", profiles=lab("y"))]
    with pytest.raises(PlanningError) as info:
        run(workflow(jobs, [("a1", "b1"), ("b2", "a2")]), catalog("T"), clustering=["label"])
    detail = info.value.detail or ""
    assert "~" in detail and "a1(x)" in detail and "b1(y)" in detail


def test_edge_into_a_non_root_member_is_kept() -> None:
    # x = {p -> q}; an outside job o feeds q (not a root of the cluster): o must run before merge_x
    jobs = [job("p", "T", profiles=lab("x")), job("o", "T"), job("q", "T", profiles=lab("x"))]
    ew = run(workflow(jobs, [("p", "q"), ("o", "q")]), catalog("T"), clustering=["label"])
    ids = by_id(ew)
    index = {j.id: i for i, j in enumerate(ew.jobs)}
    assert (index["T_o"], index["merge_x"]) in ew.edges
    assert ids["merge_x"].task_ids == ["p", "q"]


def test_one_label_on_two_sites_is_an_error() -> None:
    jobs = [job("a", "T", profiles={**lab("x"), "selector": {"execution.site": "s1"}}),
            job("b", "T", profiles={**lab("x"), "selector": {"execution.site": "s2"}})]
    with pytest.raises(PlanningError, match="different sites") as info:
        run(workflow(jobs), catalog("T", sites=("s1", "s2")), sites("s1", "s2"), clustering=["label"])
    assert info.value.value == "x"


def test_label_of_one_job_is_the_plain_job_unless_allow_single() -> None:
    wf = workflow([job("a", "T", profiles=lab("x")), job("b", "T")])
    assert [j.type for j in run(wf, catalog("T"), clustering=["label"]).jobs] == ["compute", "compute"]
    single = run(wf, catalog("T"), clustering=["label"], properties={"pegasus.clusterer.allow.single": "1"})
    assert single.jobs[0].id == "merge_x" and single.jobs[0].type == "cluster"


def test_whole_puts_every_compute_job_in_one_cluster() -> None:
    wf, tc = blackdiamond()
    ew = run(wf, tc, clustering=["whole"])
    assert [j.id for j in ew.jobs] == ["merge_whole-wf"]
    assert ew.jobs[0].task_ids == ["ID0000001", "ID0000002", "ID0000003", "ID0000004"]
    assert ew.edges == []


def test_whole_keeps_subworkflow_jobs_out_when_they_are_at_the_edge() -> None:
    jobs = [job("a", "T"), job("b", "T"), job("s", "inner.yml", type_="pegasusWorkflow")]
    ew = run(workflow(jobs, [("a", "s"), ("b", "s")]), catalog("T"), clustering=["whole"])
    assert tasks_of(ew) == [["a", "b"], ["s"]] and ew.edges == [(0, 1)]


def test_whole_around_a_subworkflow_job_is_a_cycle_error() -> None:
    jobs = [job("a", "T"), job("s", "inner.yml", type_="pegasusWorkflow"), job("b", "T")]
    with pytest.raises(PlanningError, match="whole-workflow clustering is impossible") as info:
        run(workflow(jobs, [("a", "s"), ("s", "b")]), catalog("T"), clustering=["whole"])
    assert "a(whole-wf) -> s -> b(whole-wf)" in (info.value.detail or "")


# -- recursive clustering -----------------------------------------------------------------------

def layered() -> tuple[Workflow, TransformationCatalog]:
    """r -> four X jobs (two labelled x) -> z."""
    jobs = [job("r", "R")] + [job(f"x{i}", "X", profiles=lab("x") if i < 2 else None) for i in range(4)]
    jobs.append(job("z", "Z"))
    edges = [("r", f"x{i}") for i in range(4)] + [(f"x{i}", "z") for i in range(4)]
    return workflow(jobs, edges), catalog("R", "X", "Z", profiles={"pegasus": {"clusters.size": "10"}})


def test_label_then_horizontal_keeps_label_clusters_opaque() -> None:
    wf, tc = layered()
    ew = run(wf, tc, clustering=["label,horizontal"])
    assert tasks_of(ew) == [["r"], ["x0", "x1"], ["x2", "x3"], ["z"]]
    assert [j.technique for j in ew.jobs] == [None, "label", "horizontal", None]
    assert ew.clustering == ("label", "horizontal")


def test_horizontal_then_label_leaves_clustered_jobs_alone() -> None:
    wf, tc = layered()
    ew = run(wf, tc, clustering=["horizontal", "label"])
    assert tasks_of(ew) == [["r"], ["x0", "x1", "x2", "x3"], ["z"]]
    assert ew.jobs[1].technique == "horizontal"


def test_horizontal_after_label_uses_levels_of_the_clustered_graph() -> None:
    # a(x) -> b(x) -> c ; d -> e ; c, e are Y jobs at abstract levels 3 and 2.
    # After label, merge_x is one node at level 1, so c is at level 2 with e: they merge.
    jobs = [job("a", "X", profiles=lab("x")), job("b", "X", profiles=lab("x")), job("c", "Y"),
            job("d", "X"), job("e", "Y")]
    wf = workflow(jobs, [("a", "b"), ("b", "c"), ("d", "e")])
    tc = catalog("X", "Y", profiles={"pegasus": {"clusters.size": "10"}})
    plain = run(wf, tc, clustering=["horizontal"])
    assert ["c"] in tasks_of(plain) and ["e"] in tasks_of(plain)
    ew = run(wf, tc, clustering=["label", "horizontal"])
    assert tasks_of(ew) == [["a", "b"], ["c", "e"], ["d"]]
    assert ew.jobs[1].id == "merge_Y_PID2_ID1"


def test_whole_after_horizontal_flattens_earlier_clusters() -> None:
    wf, tc = layered()
    ew = run(wf, tc, clustering=["horizontal", "whole"])
    assert [j.id for j in ew.jobs] == ["merge_whole-wf"]
    assert ew.jobs[0].task_ids == ["r", "x0", "x1", "x2", "x3", "z"]


def test_label_twice_is_idempotent() -> None:
    wf, tc = layered()
    assert tasks_of(run(wf, tc, clustering=["label", "label"])) == tasks_of(run(wf, tc, clustering=["label"]))


def test_cycle_through_an_earlier_horizontal_cluster_names_the_label() -> None:
    jobs = [job("a", "A", profiles=lab("x")), job("b1", "B"), job("b2", "B"),
            job("c", "C", profiles=lab("x"))]
    wf = workflow(jobs, [("a", "b1"), ("a", "b2"), ("b1", "c")])
    tc = catalog("A", "B", "C", profiles={"pegasus": {"clusters.size": "2"}})
    with pytest.raises(PlanningError) as info:
        run(wf, tc, clustering=["horizontal", "label"])
    assert info.value.value == "x"
    assert (info.value.detail or "").startswith("cycle: a(x) -> b1 -> c(x)")
