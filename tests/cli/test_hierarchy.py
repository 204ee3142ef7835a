"""Hierarchical workflows end to end: the optimization chapter's examples as printed (``hierarchy_examples``),
planned with ``sheaf plan`` and run with ``sheaf run`` as real processes, then recursion three levels
deep, a sub-workflow file written by a job of the parent, a failing child resumed and a ``kill -9``
of the top engine in the middle of a nested run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import hierarchy_examples as ex
import pytest
from Pegasus.api import (
    Directory,
    File,
    FileServer,
    Job,
    Operation,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    SubWorkflow,
    Transformation,
    TransformationCatalog,
    Workflow,
)

BIN = Path(sys.executable).parent


def sheaf(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    return subprocess.run([str(BIN / "sheaf"), *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


def plan_and_run(top: Path, *plan_args: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", *plan_args, cwd=top)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    return top / "runs" / "p", sheaf("run", "runs/p", cwd=top)


def one(top: Path, pattern: str) -> Path:
    found = sorted(top.rglob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def _child_jobstates(top: Path) -> str:
    """The job state logs of the sub-workflows under ``top``, lines without their time stamps."""
    return "\n".join(" ".join(line.split()[1:3]) for path in top.rglob("*.plan/jobstate.log")
                     for line in path.read_text().splitlines())


def test_the_chapters_pegasus_workflow_job_runs_as_printed(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    ex.pegasus_workflow_job(tmp_path)
    submit, run = plan_and_run(tmp_path)
    # before: the child's relative --input-dir was read from the sub-workflow file's directory
    assert run.returncode == 0, run.stdout + run.stderr
    # f.d is not staged out (stageOut: false) and stays in the child's scratch: Pegasus plans a
    # sub-workflow with --cleanup none (pegasus.file.cleanup.scope fullahead); its maker ran, as the
    # child's job state log says
    assert [p.parent.name for p in (tmp_path / "runs").rglob("f.d")] == ["condorpool"]
    assert "analyze_ID0000004 JOB_SUCCESS" in _child_jobstates(tmp_path / "runs")
    log = one(submit, "*pre.log")  # the child planner's log, in the parent's submit directory
    assert log.parent == submit and "submit directory:" in log.read_text()
    dag = (submit / "local-hierarchy.dag").read_text()
    assert "CATEGORY blackdiamond.yml_ID0000001 subwf" in dag
    # the dagman profile MAXJOBS is the child DAG's throttle, where DAGMan reads it
    assert "DAGMAN_MAX_JOBS_SUBMITTED = 10" in one(submit / "jobs", "ID0000001.dag.config").read_text()
    # the sub-workflow job's task ran, as a DAG: a succeeded task, none left incomplete
    stats = json.loads(sheaf("statistics", str(submit), "--json", cwd=tmp_path).stdout)
    tasks = stats["summary"][0]
    assert tasks["failed"] == tasks["incomplete"] == 0 and tasks["succeeded"] == tasks["total"] > 1


def test_the_chapters_condor_workflow_job_runs_in_its_dir(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    dag_dir = tmp_path / "dag-dir" / "test"
    ex.condor_workflow_job(tmp_path, dag_dir)
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", cwd=tmp_path)
    assert "does not exist" in planned.stderr  # the chapter: DIR must be created beforehand
    failed = sheaf("run", "runs/p", cwd=tmp_path)
    assert failed.returncode == 1 and str(dag_dir) in failed.stdout
    dag_dir.mkdir(parents=True)
    resumed = sheaf("run", "runs/p", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "black->black.out" in (dag_dir / "black.out").read_text()
    submit = tmp_path / "runs" / "p"
    assert "DAGMAN_MAX_JOBS_SUBMITTED = 10" in one(submit, "*.subdag.config").read_text()
    lines = (submit / "local-hierarchy.dag").read_text().splitlines()
    line = next(x for x in lines if x.startswith("SUBDAG"))
    assert line.endswith(f"DIR {dag_dir}")


def test_file_dependencies_across_sub_workflows_go_through_the_cache_file(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    ex.across_sub_workflows(tmp_path)
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    k2 = one(submit, "k2.txt").read_text()
    assert k2 == "input\nkeg->k1.txt\nkeg->k2.txt\n"  # k1.txt from the first sub-workflow's run
    assert "--cache" in one(submit, "subwf2*pre.log").read_text()


def test_a_compute_job_reads_the_sub_workflows_output_where_the_output_map_put_it(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    ex.compute_reads_sub_workflow_output(tmp_path)
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "analyze->f.d\npost-analyze->f.e" in one(submit, "f.e").read_text()
    assert "--output-map" in one(submit, "*pre.log").read_text()


def test_pegasus_plan_options_in_a_sub_workflows_arguments(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    wf = Workflow("opts").add_jobs(SubWorkflow("blackdiamond.yml", False).add_args(
        "--input-dir", "input", "--basename", "bd", "--output-site", "local", "--staging-site",
        "condorpool=local", "--cleanup", "leaf", "--dir", "elsewhere", "--relative-dir", "x",
        "--relative-submit-dir", "y"))
    wf.write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert one(submit / "jobs", "bd.dag").is_file()  # --basename names the child's files
    warnings = sheaf("plan", "workflow.yml", "--dir", "runs", "-q", cwd=tmp_path).stderr
    for option in ("--dir elsewhere", "--relative-dir x", "--relative-submit-dir y"):
        assert f"{option}: sheaf names a sub-workflow's directory itself; dropped" in warnings
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "runs" / "x").exists()


def test_every_planner_argument_the_python_api_writes_is_taken(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "in2").mkdir()
    (tmp_path / "p.props").write_text("pegasus.mode = production\n")
    job = SubWorkflow("blackdiamond.yml", False, _id="bd").add_planner_args(
        conf="p.props", basename="bb", cluster=["horizontal"], sites=["condorpool"], output_sites=["local"],
        staging_sites={"condorpool": "local"}, input_dirs=["input", "in2"], output_dir="out", dir="d",
        relative_dir="rd", random_dir=True, relative_submit_dir="rsd", cleanup="leaf", verbose=3,
        force=True, force_replan=True, submit=True, java_options=["mx1g"], **{"pegasus.mode": "production"})
    Workflow("pa").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    # not staged out, and left in the child's scratch: a sub-workflow is planned with --cleanup none,
    # whatever cleanup its arguments ask for, as Pegasus plans it
    assert [p.parent.name for p in (submit / "jobs").rglob("f.d")] == ["condorpool"]
    assert "analyze_ID0000004 JOB_SUCCESS" in _child_jobstates(submit / "jobs")
    assert one(submit / "jobs", "bb.dag").is_file()


def test_a_sub_workflow_job_with_its_own_conf_does_not_inherit_the_parents_catalogs(tmp_path: Path) -> None:
    """Pegasus's SUBDAXGenerator: a job whose arguments give --conf is planned with that file's
    properties and catalogs, not its parent's; the parent's catalogs stay a fallback for those the
    file names none of (here the site and replica catalogs)."""
    ex.setup(tmp_path)
    own = tmp_path / "child_tc.yml"
    (tmp_path / "transformations.yml").rename(own)  # the parent's catalog: keg, ls and cp only
    TransformationCatalog().add_transformations(
        *(Transformation(name, site="condorpool", pfn="/bin/true", is_stageable=False)
          for name in ("keg", "ls", "cp"))).write(str(tmp_path / "transformations.yml"))
    (tmp_path / "child.props").write_text(f"pegasus.catalog.transformation.file = {own}\n")
    job = SubWorkflow("blackdiamond.yml", False, _id="bd").add_args("--conf", "child.props", "--input-dir",
                                                                     "input")
    Workflow("own").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "analyze_ID0000004 JOB_SUCCESS" in _child_jobstates(submit / "jobs")


def test_a_relative_catalog_path_in_a_sub_workflow_jobs_conf_names_the_file_beside_the_parent(
        tmp_path: Path) -> None:
    """Pegasus plans a sub-workflow in a PegasusLite directory holding the job's files for planning
    under their names, so a relative pegasus.catalog.transformation.file in the job's --conf names the
    file beside the parent (the optimization chapter's inner_diamond_workflow.pegasus.properties), not
    one in the child's submit directory."""
    ex.setup(tmp_path)
    (tmp_path / "transformations.yml").rename(tmp_path / "child_tc.yml")  # keg, ls and cp
    TransformationCatalog().add_transformations(
        *(Transformation(name, site="condorpool", pfn="/bin/true", is_stageable=False)
          for name in ("keg", "ls", "cp"))).write(str(tmp_path / "transformations.yml"))
    (tmp_path / "child.props").write_text("pegasus.catalog.transformation.file = child_tc.yml\n")
    job = SubWorkflow("blackdiamond.yml", False, _id="bd").add_args("--conf", "child.props", "--input-dir",
                                                                     "input")
    job.add_inputs(File("child.props", for_planning=True), File("child_tc.yml", for_planning=True))
    rc = ReplicaCatalog().add_replica("local", "blackdiamond.yml", str(tmp_path / "input/blackdiamond.yml"))
    for lfn in ("child.props", "child_tc.yml"):
        rc.add_replica("local", lfn, str(tmp_path / lfn))
    rc.write(str(tmp_path / "replicas.yml"))
    Workflow("own").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    pre_log = one(submit, "*bd.pre.log").read_text()
    assert "does not exist" not in pre_log, pre_log
    assert "analyze_ID0000004 JOB_SUCCESS" in _child_jobstates(submit / "jobs")


def _leaf(top: Path, name: str) -> None:
    Workflow(name).add_jobs(Job("keg", _id="leafjob").add_args("-a", name, "-M", str(top / "marks"))) \
        .write(str(top / f"{name}.yml"))


def test_three_levels_with_a_sub_workflow_file_written_by_a_parent_job(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    _leaf(tmp_path, "leaf")
    Workflow("mid").add_jobs(
        Job("keg", _id="midjob").add_args("-a", "mid", "-M", str(tmp_path / "marks")),
        SubWorkflow("leaf.yml", False, _id="toleaf")).write(str(tmp_path / "mid.template"))
    mid = File("mid.yml")
    writer = Job("cp", _id="writer").add_args(str(tmp_path / "mid.template"), mid).add_outputs(mid)
    rc = ReplicaCatalog().add_replica("local", "leaf.yml", "file://" + str(tmp_path / "leaf.yml"))
    top = Workflow("top").add_replica_catalog(rc).add_jobs(writer, SubWorkflow(mid, False, _id="tomid"))
    top.add_dependency(writer, children=[top.get_job("tomid")])
    top.write(str(tmp_path / "workflow.yml"))
    assert not any(tmp_path.rglob("mid.yml"))  # written by the parent's job, when it runs
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "marks").iterdir()) == ["leaf", "mid"]
    mid_log = one(submit, "*tomid.pre.log").read_text()
    assert "--inherited-rc-files" in mid_log  # the top's inline replica catalog, one level down
    assert "--inherited-rc-files" not in one(submit / "jobs", "*toleaf.pre.log").read_text()


def _failing_child(top: Path) -> None:
    marks = str(top / "marks")
    a, b = File("a.txt"), File("b.txt")
    Workflow("child").add_jobs(
        Job("keg", _id="first").add_args("-a", "first", "-M", marks, "-o", a).add_outputs(a),
        Job("keg", _id="flaky").add_args("-a", "flaky", "-F", str(top / "allow"), "-M", marks, "-i", a,
                                         "-o", b).add_inputs(a).add_outputs(b),
    ).write(str(top / "child.yml"))
    Workflow("parent").add_jobs(SubWorkflow("child.yml", False, _id="sub")).write(str(top / "workflow.yml"))


def test_a_failed_child_keeps_its_rescue_dag_and_resumes_without_rerunning_its_finished_tasks(
        tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    _failing_child(tmp_path)
    submit, first = plan_and_run(tmp_path)
    assert first.returncode == 1 and "sub" in first.stdout
    assert one(submit / "jobs", "sub.dag.rescue001").is_file()  # the child's rescue DAG
    (tmp_path / "allow").touch()
    second = sheaf("run", "runs/p", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming it, not replanning" in one(submit, "*sub.pre.log").read_text()
    names = sorted(p.name.split(".")[0] for p in (tmp_path / "marks").iterdir())
    assert names == ["first", "flaky"]  # first ran once; flaky (which fails before its marker) once more


def _running(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (our engines and jobs)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in cmd and state != "Z":
                pids.append(int(entry.name))
    return pids


def _wait_for(predicate: object, timeout: float = 60) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_kill_minus_nine_of_the_top_engine_mid_nested_run(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    marks, started = str(tmp_path / "marks"), tmp_path / "started"
    Workflow("leaf").add_jobs(
        Job("keg", _id="before").add_args("-a", "before", "-M", marks),
        Job("keg", _id="slow").add_args("-a", "slow", "-M", marks, "-W", str(started)),
    ).write(str(tmp_path / "leaf.yml"))
    Workflow("mid").add_jobs(SubWorkflow("leaf.yml", False, _id="toleaf")).write(str(tmp_path / "mid.yml"))
    rc = ReplicaCatalog().add_replica("local", "leaf.yml", "file://" + str(tmp_path / "leaf.yml"))
    Workflow("top").add_replica_catalog(rc).add_jobs(SubWorkflow("mid.yml", False, _id="tomid")) \
        .write(str(tmp_path / "workflow.yml"))
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    top = subprocess.Popen([str(BIN / "sheaf"), "run", "runs/p"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(started.exists), "the innermost job never started"
        assert len(_running(str(tmp_path))) >= 3  # two nested engines and the job, at least
        os.kill(top.pid, signal.SIGKILL)
        top.wait()
        # the nested engines notice their parent is gone and stop their jobs: no orphan keeps running
        assert _wait_for(lambda: not _running(str(tmp_path)), 60), _running(str(tmp_path))
    finally:
        for pid in _running(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)
    started.unlink()
    Path(str(started) + ".go").touch()
    resumed = sheaf("run", "runs/p", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    names = sorted(p.name.split(".")[0] for p in (tmp_path / "marks").iterdir())
    assert names.count("before") == 1 and names.count("slow") == 2  # nothing finished ran again


def test_a_sub_workflow_file_only_at_a_globus_url_is_refused_naming_it(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    rc = ReplicaCatalog().add_replica("local", "remote.yml", "go://565ssssxxxx/local-site/remote.yml")
    Workflow("g").add_replica_catalog(rc).add_jobs(SubWorkflow("remote.yml", False)) \
        .write(str(tmp_path / "workflow.yml"))
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", cwd=tmp_path)
    assert planned.returncode == 2 and "Traceback" not in planned.stderr
    assert "Globus Online (go://)" in planned.stderr and "remote.yml" in planned.stderr


def test_a_local_site_served_only_by_globus_is_warned_about(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    ex.pegasus_workflow_job(tmp_path)
    scratch = tmp_path / "local-site" / "scratch"
    directory = Directory(Directory.SHARED_SCRATCH, str(scratch), shared_file_system=False)
    directory.add_file_servers(FileServer(f"go://565ssssxxxx{scratch}", Operation.ALL))
    site = Site("local").add_directories(directory)
    SiteCatalog().add_sites(site, Site("condorpool")).write(str(tmp_path / "sites.yml"))
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert f"directory {scratch} is served only by a Globus Online endpoint (go://)" in planned.stderr


@pytest.mark.parametrize(("argv", "expected"), [
    (["--input-dir", "in", "-vvv"], ["--input-dir", "/base/in", "-vvv"]),
    (["--input-dir=a,/abs,b"], ["--input-dir", "/base/a,/abs,/base/b"]),
    (["-Iin", "--conf", "p.props", "--input", "x"], ["--input-dir", "/base/in", "--conf", "/base/p.props",
                                                    "--input-dir", "/base/x"]),
    (["--dir", "d", "--relative-dir", "r", "--sites", "s"], ["--sites", "s"]),
    (["-S", "--submit", "-d", "x", "-v"], ["-v"]),
    (["--rc", "file:///x/rc.txt", "--output-sites", "local"], ["--rc", "file:///x/rc.txt", "--output-sites",
                                                               "local"]),
])
def test_relative_paths_in_arguments_are_resolved_against_where_the_parent_was_planned(
        argv: list[str], expected: list[str]) -> None:
    from sheaf.codegen._subworkflow import resolve_arguments

    warnings: list[str] = []
    assert resolve_arguments(argv, "/base", warnings.append) == expected
    assert len(warnings) == sum(word in ("--dir", "--relative-dir", "-d", "-S", "--submit") for word in argv)


@pytest.mark.parametrize(("argv", "basename"), [
    (["-v", "--basename", "a"], "a"), (["--basename=b", "-v"], "b"), (["-bc"], "c"),
    (["-b", "d", "--base", "e"], "e"), (["-v"], None)])
def test_the_basename_a_sub_workflow_job_gives_its_child(argv: list[str], basename: str | None) -> None:
    from sheaf.codegen._subworkflow import option_given

    assert option_given(argv, "--basename") == basename


def test_dagman_maxpre_bounds_the_child_planners_running_at_once(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    for name in ("a", "b", "c"):
        _leaf(tmp_path, name)
    rc = ReplicaCatalog()
    for name in ("a", "b", "c"):
        rc.add_replica("local", f"{name}.yml", "file://" + str(tmp_path / f"{name}.yml"))
    Workflow("wide").add_replica_catalog(rc).add_jobs(
        *(SubWorkflow(f"{name}.yml", False, _id=f"to{name}") for name in ("a", "b", "c"))
    ).write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path, "-Ddagman.maxpre=1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "DAGMAN_MAX_PRE_SCRIPTS = 1" in (submit / "wide.dag.config").read_text()
    running = 0
    for line in (submit / "jobstate.log").read_text().splitlines():
        event = line.split()[2]
        running += event == "PRE_SCRIPT_STARTED"
        running -= event in ("PRE_SCRIPT_SUCCESS", "PRE_SCRIPT_FAILURE")
        assert running <= 1, line
    assert len(list(submit.glob("*.pre.log"))) == 3


def test_condor_dagman_is_found_by_the_chapters_rules(tmp_path: Path) -> None:
    from Pegasus.api import Transformation, TransformationCatalog

    from sheaf.codegen._subworkflow import condor_dagman, properties_text
    from sheaf.formats import read_transformation_catalog

    tc_file = tmp_path / "tc.yml"
    TransformationCatalog().add_transformations(Transformation(
        "dagman", namespace="condor", site="local", pfn="/opt/condor/bin/condor_dagman",
        is_stageable=False)).write(str(tc_file))
    tc = read_transformation_catalog(tc_file)
    env = {"CONDOR_HOME": "/home/c", "CONDOR_LOCATION": "/loc/c", "PATH": str(tmp_path)}
    assert condor_dagman(tc, env) == "/opt/condor/bin/condor_dagman"
    assert condor_dagman(None, env) == "/home/c/bin/condor_dagman"
    assert condor_dagman(None, {**env, "CONDOR_HOME": ""}) == "/loc/c/bin/condor_dagman"
    assert condor_dagman(None, {"PATH": str(tmp_path)}) is None
    (tmp_path / "condor_dagman").write_text("#!/bin/sh\n")
    (tmp_path / "condor_dagman").chmod(0o755)
    assert condor_dagman(None, {"PATH": str(tmp_path)}) == str(tmp_path / "condor_dagman")
    # one job's throttles stay with its child: they are not in the properties passed further down
    assert "sheaf.subdag" not in properties_text({"sheaf.subdag.maxjobs": "3", "dagman.retry": "1"})


def test_a_throttled_condor_workflow_keeps_its_relative_paths_and_its_final_node(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "t.sub").write_text("universe = local\nexecutable = /usr/bin/touch\narguments = $(out)\nqueue\n")
    (dags / "plain.dag").write_text('JOB A t.sub\nVARS A out="plain-ran"\n')
    (dags / "final.dag").write_text('JOB A t.sub\nVARS A out="a-ran"\n'
                                    'FINAL F t.sub\nVARS F out="final-ran"\n')
    rc = ReplicaCatalog()
    for name in ("plain.dag", "final.dag"):
        rc.add_replica("local", name, "file://" + str(dags / name))
    Workflow("dags").add_replica_catalog(rc).add_jobs(
        *(SubWorkflow(name, True).add_dagman_profile(max_jobs="1") for name in ("plain.dag", "final.dag"))
    ).write(str(tmp_path / "workflow.yml"))
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", cwd=tmp_path)
    assert "has a FINAL node, so it cannot be spliced" in planned.stderr
    run = sheaf("run", "runs/p", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert {p.name for p in dags.glob("*-ran")} == {"plain-ran", "a-ran", "final-ran"}


def test_a_sub_workflow_named_by_an_absolute_path_is_read_where_it_is(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    _leaf(tmp_path, "leaf")
    wf = Workflow("abs").add_jobs(SubWorkflow(str(tmp_path / "leaf.yml"), False))
    wf.write(str(tmp_path / "workflow.yml"))
    _, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [p.name.split(".")[0] for p in (tmp_path / "marks").iterdir()] == ["leaf"]


def test_a_sub_workflow_reads_a_file_a_compute_job_of_its_parent_wrote(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    fx, fy = File("f.x"), File("f.y")
    Workflow("reader").add_jobs(Job("keg", _id="read").add_args("-a", "read", "-i", fx, "-o", fy)
                                .add_inputs(fx).add_outputs(fy)).write(str(tmp_path / "reader.yml"))
    rc = ReplicaCatalog().add_replica("local", "reader.yml", "file://" + str(tmp_path / "reader.yml"))
    top = Workflow("writes").add_replica_catalog(rc)
    write = Job("keg", _id="write").add_args("-a", "write", "-o", fx).add_outputs(fx)
    sub = SubWorkflow("reader.yml", False, _id="sub").add_inputs(fx)
    top.add_jobs(write, sub).add_dependency(write, children=[sub]).write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert one(submit / "jobs", "f.y").read_text() == "write->f.x\nread->f.y\n"


def test_a_sub_workflow_jobs_own_stage_out_outputs_reach_the_output_site(tmp_path: Path) -> None:
    """The chapter's pegasusWorkflow job declares f.d an output (stageOut true) while the child's own job
    does not stage it out: the parent passes its output site in the child's output map, and the child
    copies f.d there, as Pegasus does (its output map, whatever the child's own flag)."""
    ex.setup(tmp_path)
    ex.pegasus_workflow_job(tmp_path)
    out = tmp_path / "delivered"
    _, run = plan_and_run(tmp_path, "--output-dir", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert (out / "f.d").read_text().endswith("analyze->f.d\n")


def test_a_sub_workflow_output_the_parent_reads_is_also_delivered_registered_once_and_reused(
        tmp_path: Path) -> None:
    """deep.txt, made by the child, is read by a job of the parent (on another site) and staged out by the
    sub-workflow job: the child puts it in the parent's scratch (its output map), whence the parent copies
    it to its reader's site and delivers and registers it, as Pegasus's parent stages a sub-workflow
    job's outputs out of its own scratch. The child's own --output-dir delivery registers into the same
    catalog, the root's: one output replica catalog for the hierarchy, so --reuse of the root reuses
    the child's work too."""
    ex.setup(tmp_path)
    deep, own, result = File("deep.txt"), File("own.txt"), File("result.txt")
    maker = Job("keg", _id="maker").add_args("-a", "maker", "-o", deep, "-o", own) \
        .add_outputs(deep, stage_out=False).add_outputs(own)
    Workflow("leaf").add_jobs(maker).write(str(tmp_path / "leaf.yml"))
    ReplicaCatalog().add_replica("local", "leaf.yml", "file://" + str(tmp_path / "leaf.yml")) \
        .write(str(tmp_path / "replicas.yml"))
    child_out = tmp_path / "child-out"
    toleaf = SubWorkflow("leaf.yml", False, _id="toleaf").add_args("--output-dir", str(child_out)) \
        .add_outputs(deep)
    reader = Job("keg", _id="reader").add_args("-a", "reader", "-i", deep, "-o", result) \
        .add_inputs(deep).add_outputs(result)
    top = Workflow("top").add_jobs(toleaf, reader)
    top.add_dependency(toleaf, children=[reader])
    top.write(str(tmp_path / "workflow.yml"))
    out = tmp_path / "delivered"
    submit, run = plan_and_run(tmp_path, "--output-dir", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert (out / "deep.txt").read_text() == "maker->deep.txt\n"
    assert (out / "result.txt").read_text() == "maker->deep.txt\nreader->result.txt\n"
    assert (child_out / "own.txt").is_file()
    catalog = (submit / "top.replicas.yml").read_text()
    for lfn, where in (("deep.txt", out), ("result.txt", out), ("own.txt", child_out)):
        assert f'lfn: {lfn}\n  pfns:\n  - {{pfn: "file://{where}/{lfn}"' in catalog, catalog
    assert not list(submit.rglob("*.plan/*.replicas.yml"))  # the child keeps no catalog of its own
    again = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", "q", "--output-dir", str(out),
                  "--reuse", "runs/p", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 job(s) not planned" in again.stderr and "toleaf" in again.stderr, again.stderr
    replanned = json.loads((tmp_path / "runs" / "q" / "plan.json").read_text())
    assert not [job for job in replanned["jobs"] if job["type"] in ("subworkflow", "compute")]


def test_an_output_map_may_place_one_file_in_several_places(tmp_path: Path) -> None:
    """An output map (a replica file) giving a file two places: the child copies it to both."""
    ex.setup(tmp_path)
    made = File("made.txt")
    Workflow("leaf").add_jobs(Job("keg", _id="maker").add_args("-a", "maker", "-o", made)
                              .add_outputs(made, stage_out=False)).write(str(tmp_path / "workflow.yml"))
    one_place, other = tmp_path / "a" / "made.txt", tmp_path / "b" / "made.txt"
    (tmp_path / "map.txt").write_text(f'made.txt file://{one_place} site="local"\n'
                                      f'made.txt file://{other} site="local"\n')
    _, run = plan_and_run(tmp_path, "--output-map", "map.txt")
    assert run.returncode == 0, run.stdout + run.stderr
    assert one_place.read_text() == other.read_text() == "maker->made.txt\n"


def test_no_cleanup_removes_a_file_before_the_sub_workflow_job_that_reads_it(tmp_path: Path) -> None:
    """A sub-workflow job is a user of what it reads -- its inputs and the workflow file it plans from (a
    file a job of the parent writes) -- so the cleanup job removing such a file runs after it."""
    ex.setup(tmp_path)
    (tmp_path / "marks").mkdir()
    _leaf(tmp_path, "leaf")
    mid = File("mid.yml")
    writer = Job("cp", _id="writer").add_args(str(tmp_path / "leaf.yml"), mid) \
        .add_outputs(mid, stage_out=False, register_replica=False)  # scratch only: cleanup removes it
    top = Workflow("top").add_jobs(writer, SubWorkflow(mid, False, _id="tomid"))
    top.add_dependency(writer, children=[top.get_job("tomid")])
    top.write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((submit / "plan.json").read_text())
    parents: dict[str, set[str]] = {}
    for parent, child in doc["edges"]:
        parents.setdefault(child, set()).add(parent)

    def ancestors(node: str) -> set[str]:
        seen: set[str] = set()
        stack = [node]
        while stack:
            for parent in parents.get(stack.pop(), ()):
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        return seen

    texts = "\n".join(p.read_text() for p in [*submit.glob("*.dag"), *submit.rglob("*.sub"),
                                                *submit.rglob("*.json")] if p.name != "plan.json")
    cleanups = [job["id"] for job in doc["jobs"] if job["type"] == "cleanup"]
    removing = [c for c in cleanups
                if re.search(rf"{re.escape(c)}.*mid\.yml|mid\.yml.*{re.escape(c)}", texts)]
    assert removing, cleanups  # the file's cleanup job
    sub_node = next(job["id"] for job in doc["jobs"] if job["type"] == "subworkflow")
    for cleanup in removing:
        assert sub_node in ancestors(cleanup), (cleanup, sorted(ancestors(cleanup)))


def test_an_output_made_two_levels_down_reaches_the_top_job_that_reads_it(tmp_path: Path) -> None:
    """Output maps pass through every level: the top's reader of deep.txt gets it though the file is made
    by a job of the grandchild, the middle level passing the map it was given on down."""
    ex.setup(tmp_path)
    deep, result = File("deep.txt"), File("result.txt")
    maker = Job("keg", _id="maker").add_args("-a", "maker", "-o", deep).add_outputs(deep)
    Workflow("leaf").add_jobs(maker).write(str(tmp_path / "leaf.yml"))
    toleaf = SubWorkflow("leaf.yml", False, _id="toleaf").add_outputs(deep, stage_out=False)
    Workflow("mid").add_jobs(toleaf).write(str(tmp_path / "mid.yml"))
    ReplicaCatalog().add_replica("local", "leaf.yml", "file://" + str(tmp_path / "leaf.yml")) \
        .add_replica("local", "mid.yml", "file://" + str(tmp_path / "mid.yml")) \
        .write(str(tmp_path / "replicas.yml"))
    top = Workflow("top")
    tomid = SubWorkflow("mid.yml", False, _id="tomid").add_outputs(deep, stage_out=False)
    reader = Job("keg", _id="reader").add_args("-a", "reader", "-i", deep, "-o", result) \
        .add_inputs(deep).add_outputs(result, stage_out=False)
    top.add_jobs(tomid, reader)
    top.add_dependency(tomid, children=[reader])
    top.write(str(tmp_path / "workflow.yml"))
    submit, run = plan_and_run(tmp_path, "--cleanup", "none")
    assert run.returncode == 0, run.stdout + run.stderr
    assert one(submit, "result.txt").read_text() == "maker->deep.txt\nreader->result.txt\n"


def test_an_input_a_parent_stages_in_reaches_its_child_two_levels_down(tmp_path: Path) -> None:
    """An input of a sub-workflow job that its parent finds itself (here --input-dir, as --reuse or a
    replica would) is staged in by the parent, whose child is told where (--cache), as Pegasus passes a
    sub-workflow job's inputs; the middle level passes it on the same way."""
    ex.setup(tmp_path)
    fa, out = File("f.a"), File("leaf.txt")
    Workflow("leaf").add_jobs(Job("keg", _id="reader").add_args("-a", "reader", "-i", fa, "-o", out)
                              .add_inputs(fa).add_outputs(out)).write(str(tmp_path / "leaf.yml"))
    Workflow("mid").add_jobs(SubWorkflow("leaf.yml", False, _id="toleaf").add_inputs(fa).add_outputs(out)) \
        .write(str(tmp_path / "mid.yml"))
    ReplicaCatalog().add_replica("local", "leaf.yml", "file://" + str(tmp_path / "leaf.yml")) \
        .add_replica("local", "mid.yml", "file://" + str(tmp_path / "mid.yml")) \
        .write(str(tmp_path / "replicas.yml"))
    Workflow("top").add_jobs(SubWorkflow("mid.yml", False, _id="tomid").add_inputs(fa).add_outputs(out)) \
        .write(str(tmp_path / "workflow.yml"))
    _, run = plan_and_run(tmp_path, "--input-dir", "input", "--output-sites", "local")
    assert run.returncode == 0, run.stdout + run.stderr
    delivered = tmp_path / "runs" / "wf-output" / "leaf.txt"
    assert delivered.read_text() == "fa\nreader->leaf.txt\n"


def test_a_sub_workflow_is_clustered_automatically_as_its_parent_was(tmp_path: Path) -> None:
    ex.setup(tmp_path)
    ex.pegasus_workflow_job(tmp_path)
    submit, run = plan_and_run(tmp_path, "--cluster", "auto", "--slots", "3", "--overhead", "5")
    assert run.returncode == 0, run.stdout + run.stderr
    child = json.loads(one(submit, "*.plan/plan.json").read_text())
    assert child["clustering"] == ["auto"]  # inherited, with the parent's model:
    model = json.loads(one(submit, "subworkflows.overheads.json").read_text())
    assert model["backends"]["local"]["launch"]["mean"] == 5
    dag = (submit / "local-hierarchy.dag").read_text()
    assert "--cluster auto --backend local --slots 3 --overheads" in dag
