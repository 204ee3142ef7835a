"""Site selection, the public surface, naming, and bad input."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from planner_builders import blackdiamond, catalog, job, run, sites, workflow

import sheaf.planner
from sheaf.errors import PlanningError
from sheaf.model import Job, Properties, Transformation, TransformationCatalog, TransformationSite
from sheaf.planner import plan, register_selector


def test_public_names_are_pinned() -> None:
    assert sorted(sheaf.planner.__all__) == sorted([
        "Aggregator", "DATA_KINDS", "DataOptions", "ExecJob", "ExecutableWorkflow", "JOB_KINDS", "JobKind",
        "SiteSelector", "Task", "find_local", "output_targets", "plan", "plan_data", "register_selector",
    ])


def test_unclustered_blackdiamond_tasks_and_records() -> None:
    wf, tc = blackdiamond()
    ew = plan(wf, tc=tc, sc=sites("condorpool", "local"), rc=None, properties=Properties({}),
              output_sites=["local"])
    assert [j.id for j in ew.jobs] == ["preprocess_ID0000001", "findrange_ID0000002", "findrange_ID0000003",
                                       "analyze_ID0000004"]
    first = ew.jobs[0]
    assert first.type == "compute" and first.site == "condorpool" and first.level == 1
    assert first.executable == "/opt/condorpool/bin/preprocess" and first.arguments == ("-a", "preprocess")
    assert first.transformation == "diamond::preprocess:4.0"
    task = first.tasks[0]
    assert (task.id, task.transformation, task.level) == ("ID0000001", "diamond::preprocess:4.0", 1)
    assert sorted(ew.edges) == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert ew.sites == ("condorpool",) and ew.output_sites == ("local",) and ew.clustering == ()
    assert ew.metadata == {"selector": "Random", "seed": "0"} and ew.notes[0].startswith("site selection")


def test_default_sites_exclude_local_unless_it_is_the_only_one() -> None:
    wf = workflow([job("a", "T")])
    assert run(wf, catalog("T", sites=("local", "s1")), sites("local", "s1")).jobs[0].site == "s1"
    assert run(wf, catalog("T", sites=("local",)), sites("local")).jobs[0].site == "local"


def test_candidates_are_sites_with_the_transformation() -> None:
    wf = workflow([job(f"j{i}", "T") for i in range(20)])
    tc = catalog("T", sites=("s2",))
    ew = run(wf, tc, sites("s1", "s2", "s3"))
    assert {j.site for j in ew.jobs} == {"s2"}


def test_stageable_transformation_runs_anywhere() -> None:
    tc = TransformationCatalog()
    tc.add(Transformation("T", sites=(TransformationSite("origin", "http://x/T", type="stageable"),)))
    ew = run(workflow([job("a", "T")]), tc, sites("s1", "origin"), sites=["s1"])
    assert ew.jobs[0].site == "s1" and ew.jobs[0].executable == "http://x/T"


def test_execution_site_profile_pins_a_job() -> None:
    pinned = {"selector": {"execution.site": "s3"}}
    wf = workflow([job("a", "T", profiles=pinned), job("b", "T")])
    ew = run(wf, catalog("T", sites=("s1", "s3")), sites("s1", "s3"), sites=["s1"])
    assert [j.site for j in ew.jobs] == ["s3", "s1"]


def test_pinned_site_must_be_known_and_have_the_transformation() -> None:
    wf = workflow([job("a", "T", profiles={"selector": {"execution.site": "nowhere"}})])
    with pytest.raises(PlanningError, match="unknown site") as info:
        run(wf, catalog("T", sites=("s1",)), sites("s1"))
    assert info.value.value == "nowhere"
    wf2 = workflow([job("a", "T", profiles={"selector": {"execution.site": "s2"}})])
    with pytest.raises(PlanningError, match="pinned to site 's2'"):
        run(wf2, catalog("T", sites=("s1",)), sites("s1", "s2"))


def test_unknown_site_in_sites_is_an_error() -> None:
    with pytest.raises(PlanningError, match="unknown site in --sites") as info:
        run(workflow([job("a", "T")]), catalog("T"), sites("condorpool"), sites=["condorpool", "mars"])
    assert info.value.value == "mars" and info.value.rule


def test_without_a_site_catalog_only_the_default_sites_are_known() -> None:
    """Without a site catalog pegasus-plan's site store holds local and condorpool alone, and an
    execution site outside it is an error ("not loaded into site store"): --sites compute, written for
    a site catalog that could not be read, is refused naming the sites there are, never planned onto a
    site no catalog describes."""
    wf = workflow([job("a", "T")])
    with pytest.raises(PlanningError, match="unknown site in --sites") as info:
        plan(wf, tc=None, sc=None, rc=None, properties=Properties({}), sites=["compute"])
    assert info.value.value == "compute" and "local, condorpool" in str(info.value)
    pinned = workflow([job("a", "T", profiles={"selector": {"execution.site": "compute"}})])
    with pytest.raises(PlanningError, match="unknown site"):
        plan(pinned, tc=None, sc=None, rc=None, properties=Properties({}))
    assert plan(wf, tc=None, sc=None, rc=None, properties=Properties({}), sites=["condorpool"]).jobs[0].site \
        == "condorpool"


def test_job_no_site_can_run_names_job_and_transformation() -> None:
    wf = workflow([job("ok", "T"), job("bad", "U")])
    tc = catalog("T", sites=("s1",))
    tc.transformations.update(catalog("U", sites=("s9",)).transformations)
    with pytest.raises(PlanningError) as info:
        run(wf, tc, sites("s1", "s9"), sites=["s1"])
    assert info.value.value == "bad" and "'U'" in str(info.value)


def test_transformation_missing_from_catalog_is_an_error() -> None:
    with pytest.raises(PlanningError, match="not in the transformation catalog"):
        run(workflow([job("a", "Nope")]), catalog("T"))


def test_without_catalogs_jobs_run_on_the_default_condorpool_with_their_names() -> None:
    ew = plan(workflow([job("a", "echo", args=("hi",))]), tc=None, sc=None, rc=None,
              properties=Properties({}))
    assert (ew.jobs[0].site, ew.jobs[0].executable) == ("condorpool", "echo")  # Pegasus 5's default site
    assert any("no transformation catalog" in w for w in ew.warnings)


def draw_sites(seed: int | None, selector: str, n: int = 40) -> list[str]:
    wf = workflow([job(f"j{i}", "T") for i in range(n)])
    ew = run(wf, catalog("T", sites=("s1", "s2", "s3")), sites("s1", "s2", "s3"),
             properties={"pegasus.selector.site": selector}, seed=seed)
    return [j.site or "" for j in ew.jobs]


def test_random_selector_is_seeded() -> None:
    assert draw_sites(7, "Random") == draw_sites(7, "Random")
    assert draw_sites(7, "Random") != draw_sites(8, "Random")
    assert set(draw_sites(7, "Random")) == {"s1", "s2", "s3"}
    assert draw_sites(None, "random") == draw_sites(0, "Random")  # default seed 0, name case-insensitive


def test_seed_property_is_used_when_no_argument() -> None:
    wf = workflow([job(f"j{i}", "T") for i in range(40)])
    ew = run(wf, catalog("T", sites=("s1", "s2", "s3")), sites("s1", "s2", "s3"),
             properties={"sheaf.selector.seed": "7"})
    assert [j.site for j in ew.jobs] == draw_sites(7, "Random")


def test_round_robin_cycles() -> None:
    assert draw_sites(None, "RoundRobin", 6) == ["s1", "s2", "s3", "s1", "s2", "s3"]


def test_selectors_are_pluggable() -> None:
    class Last:
        def __init__(self, seed: int) -> None:
            pass

        def select(self, job: Job, candidates: Sequence[str]) -> str:
            return candidates[-1]

    register_selector("Last", Last)
    assert set(draw_sites(None, "last", 5)) == {"s3"}
    with pytest.raises(PlanningError, match="unknown site selector"):
        draw_sites(None, "Nope", 2)


def test_unsafe_node_names_are_replaced_and_collisions_resolved() -> None:
    wf = workflow([job("ID 1", "my+tool"), job("ID_1", "my_tool"), job("x", "my_tool")])
    tc = catalog("my+tool", "my_tool")
    ids = [j.id for j in run(wf, tc).jobs]
    assert ids == ["my_tool_ID_1", "my_tool_ID_1_2", "my_tool_x"]


def test_cluster_names_replace_dots_plus_and_equals() -> None:
    from sheaf.planner._naming import horizontal_id

    assert horizontal_id("a.b", "c+d", "1=2", 3, 4) == "merge_a_b-c_d-1_2_PID3_ID4"
    assert horizontal_id(None, "x", None, 1, 1) == "merge_x_PID1_ID1"


@pytest.mark.parametrize(("key", "value"), [
    ("pegasus.selector.site", "Nearest"),
    ("pegasus.clusterer.preference", "Fastest"),
    ("pegasus.clusterer.job.aggregator", "parallel"),
])
def test_bad_settings_are_planning_errors_with_rule_and_value(key: str, value: str) -> None:
    with pytest.raises(PlanningError) as info:
        run(workflow([job("a", "T")]), catalog("T"), properties={key: value}, clustering=["horizontal"])
    assert info.value.value == value and info.value.rule


def test_bad_technique_name() -> None:
    with pytest.raises(PlanningError) as info:
        run(workflow([job("a", "T")]), catalog("T"), clustering=["label,vertical"])
    assert info.value.value == "vertical"


def test_cycle_in_the_workflow_is_a_validation_error() -> None:
    from sheaf.errors import ValidationError

    with pytest.raises(ValidationError) as info:
        run(workflow([job("a", "T"), job("b", "T")], [("a", "b"), ("b", "a")]), catalog("T"))
    assert "a -> b -> a" in (info.value.detail or "") or "b -> a -> b" in (info.value.detail or "")


def test_pinned_job_may_use_a_site_outside_sites_where_only_it_has_the_transformation() -> None:
    pinned = {"selector": {"execution.site": "s3"}}
    wf = workflow([job("a", "T", profiles=pinned), job("b", "U")])
    tc = catalog("T", sites=("s3",))
    tc.transformations.update(catalog("U", sites=("s1",)).transformations)
    ew = run(wf, tc, sites("s1", "s3"), sites=["s1"])
    assert [j.site for j in ew.jobs] == ["s3", "s1"]


def test_an_entry_runs_only_on_a_site_of_its_system() -> None:
    """Pegasus's transformation mapper matches an entry's arch, OS, release and version to the site's
    (x86_64 and linux when either says nothing): another system's entry is no candidate."""
    from sheaf.model import Site, SiteCatalog

    sc = SiteCatalog()
    sc.add(Site("x86"))
    sc.add(Site("power", arch="ppc64le"))
    sc.add(Site("el7", os_release="rhel", os_version="7"))
    wf = workflow([job(f"j{i}", "T") for i in range(10)])
    entries = (TransformationSite("x86", "/bin/t"), TransformationSite("power", "/bin/t", arch="x86_64"),
               TransformationSite("el7", "/bin/t", os_release="RHEL", os_version="7"))
    tc = TransformationCatalog()
    tc.add(Transformation("T", sites=entries))
    assert {j.site for j in run(wf, tc, sc).jobs} == {"x86", "el7"}
    stageable = TransformationCatalog()
    built = TransformationSite("x86", "/src/t", type="stageable", arch="ppc64le")
    stageable.add(Transformation("T", sites=(built,)))
    assert {j.site for j in run(wf, stageable, sc).jobs} == {"power"}  # a stageable entry goes anywhere alike
    mac = TransformationCatalog()
    mac.add(Transformation("T", sites=(TransformationSite("x86", "/bin/t", arch="ppc64le", os_type="macosx"),
                                       )))
    with pytest.raises(PlanningError, match=r"its entry for 'x86' is built for ppc64le/macosx, the site is "
                                            r"x86_64/linux"):
        run(wf, mac, sc)
