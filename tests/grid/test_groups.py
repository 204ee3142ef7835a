"""Cutting a DAG into group DAGs: the invariants of ``cut_groups`` and the files ``--group-size`` writes."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.grid._recipe import SHEAF, env, prepare, sheaf, workflow

from sheaf.codegen._groups import cut_groups, write_groups


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[list[int]], list[bool]]:
    n = draw(st.integers(min_value=1, max_value=40))
    parents = [sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3)))) if i else [] for i in range(n)]
    compute = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return parents, compute


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(min_value=1, max_value=7))
def test_groups_are_slices_whose_edges_run_forward(dag: tuple[list[list[int]], list[bool]],
                                                    size: int) -> None:
    parents, compute = dag
    groups = cut_groups([f"n{i}" for i in range(len(parents))], parents, compute, size)
    work = [next(iter(g)) for g, c in zip(groups, compute, strict=True) if c]
    assert all(len(g) == 1 for g, c in zip(groups, compute, strict=True) if c)
    assert all(work.count(g) <= size for g in set(work))  # about N jobs: at most N compute jobs
    assert all(groups)  # every node is somewhere
    for child, plist in enumerate(parents):
        for parent in plist:
            # an edge stays inside a group (the parent has a copy there) or runs to a later group
            assert all(g in groups[parent] or max(groups[parent]) < g for g in groups[child])


def test_plan_writes_group_dags_an_outer_dag_and_condor_files(tmp_path: Path) -> None:
    import htcondor2

    run = prepare(tmp_path, "sites:\n  one: {max_queued: 3, slots: 1}\n", tasks=7, size=3)
    record = json.loads((run / "grid" / "groups.json").read_text())
    assert [len(jobs) for jobs in record["groups"].values()] == [4, 4, 2]  # + a create-dir copy each
    outer = (run / "sleepy.dag").read_text()
    assert outer.count("JOB ") == 3 and "PARENT" not in outer  # independent groups
    assert (run / "sleepy.dag.flat").exists()
    gdag = (run / "sleepy.group_0001.gdag").read_text()
    assert 'SheafSite=$ENV(SheafSite)' in gdag and "VARS create_dir" in gdag
    assert "JOBSTATE_LOG sleepy.group_0001.gdag.jobstate.log\n" in gdag  # its own, as DAGMan's
    sub = (run / "grid" / "group_0001.sub").read_text()
    for line in ("+WANT_USCMS_MATCHMAKER = True", "Requirements = Is_USCMS_Site =?= True",
                 "Rank = -CurMatches/MaxMatches", "environment = $$(SiteEnvironment);"):
        assert line in sub
    condor = htcondor2.Submit((run / "grid" / "group_0001.condor.sub").read_text())
    assert condor["universe"] == "grid"
    assert condor["grid_resource"] == "condor $$(MatchmakerSchedd) $$(MatchmakerPool)"
    assert condor["MY.remote_JobUniverse"] == "7" and condor["Rank"] == "-CurMatches/MaxMatches"
    assert condor["MY.WANT_USCMS_MATCHMAKER"] == "True"


def test_a_plan_that_cannot_be_grouped_leaves_nothing_behind(tmp_path: Path) -> None:
    """--group-size refuses a DAG with a SUBDAG node: exit 2, one message, and no plan directory
    (the grouping runs in the staging directory, before it is renamed into place)."""
    workflow(tmp_path, 2, 0.1)
    (tmp_path / "inner.dag").write_text("JOB a a.sub\n")
    text = (tmp_path / "wf.yml").read_text()
    text = text.replace("jobs:\n", "jobs:\n- {type: condorWorkflow, id: SUB1, file: inner.dag}\n", 1)
    (tmp_path / "wf.yml").write_text(text)
    result = sheaf(tmp_path, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local",
                   "--group-size", "2", check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--group-size needs a plain DAG" in result.stderr and "Traceback" not in result.stderr
    leftovers = list((tmp_path / "out").rglob("*")) if (tmp_path / "out").exists() else []
    assert leftovers == [], leftovers
    # the same workflow without --group-size plans, into the directory left free
    sheaf(tmp_path, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local")


def test_each_group_dag_names_its_own_node_status_and_dot_files(tmp_path: Path) -> None:
    workflow(tmp_path, 4, 0.1)
    sheaf(tmp_path, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local")
    run = tmp_path / "out" / "run"
    with (run / "sleepy.dag").open("a") as dag:
        dag.write("NODE_STATUS_FILE sleepy.status 5 ALWAYS-UPDATE\nDOT sleepy.dot UPDATE\n")
    assert write_groups(run, 2) == ["group_0001", "group_0002"]
    for label in ("group_0001", "group_0002"):
        lines = (run / f"sleepy.{label}.gdag").read_text().splitlines()
        gdag = f"sleepy.{label}.gdag"
        assert f"JOBSTATE_LOG {gdag}.jobstate.log" in lines
        assert f"NODE_STATUS_FILE {gdag}.status 5 ALWAYS-UPDATE" in lines
        assert f"DOT {gdag}.dot UPDATE" in lines
        assert not [line for line in lines if "sleepy.status" in line or "sleepy.dot " in line]


def test_a_plan_killed_while_grouping_leaves_no_plan(tmp_path: Path) -> None:
    """kill -9 of ``sheaf plan --group-size`` while it writes the group DAGs (in its staging
    directory): the submit directory was never made, and the next plan takes its place."""
    workflow(tmp_path, 1500, 0.1)
    proc = subprocess.Popen([SHEAF, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local",
                             "--group-size", "1"], cwd=tmp_path, env=env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    grouping: list[Path] = []
    while not grouping and proc.poll() is None and time.monotonic() < deadline:
        grouping = [*(tmp_path / "out").glob(".run.sheaf-new-*/grid/group_0001.sub"),
                    *(tmp_path / "out").glob("run/grid/group_0001.sub")]
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert grouping, "the plan ended before it was seen grouping"
    assert not (tmp_path / "out" / "run").exists()
    sheaf(tmp_path, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local",
          "--group-size", "500")
    assert (tmp_path / "out" / "run" / "grid" / "groups.json").is_file()
    assert not list((tmp_path / "out").glob(".run.sheaf-*"))  # the killed plan's staging was removed
