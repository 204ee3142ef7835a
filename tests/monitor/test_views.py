"""sheaf status / statistics / analyze on real runs: the blackdiamond, a failing and a held job, a
hierarchical run (a pegasusWorkflow and a SUBDAG), a clustered 10^4-task run; bad run directories."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import time
from pathlib import Path

import pytest
from Pegasus.api import (
    File,
    Job,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    SubWorkflow,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from tests.monitor.conftest import BIN, rescued_run, sheaf, slow_workflow


def _catalogs(wf: Workflow, *transformations: tuple[str, str]) -> Workflow:
    tc = TransformationCatalog().add_transformations(
        *(Transformation(name, site="local", pfn=pfn, is_stageable=False) for name, pfn in transformations))
    return wf.add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))


def _plan(tmp: Path, wf: Workflow, *args: str) -> Path:
    wf.write(str(tmp / f"{wf.name}.yml"))
    done = sheaf("plan", f"{wf.name}.yml", "--dir", ".", "--relative-dir", wf.name, "-s", "local", "-q",
                 *args, cwd=tmp)
    assert done.returncode == 0, done.stderr
    return tmp / wf.name


def test_statistics_of_the_blackdiamond(blackdiamond: Path) -> None:
    text = sheaf("statistics", str(blackdiamond))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "Type           Succeeded Failed  Incomplete  Total     Retries   Total+Retries" in lines
    assert "Tasks          10        0       0           10        0         10" in lines
    # the cleanup job of the data pass is the eighth
    assert "Jobs           8         0       0           8         0         8" in lines
    for heading in ("Workflow wall time", "Cumulative job wall time",
                    "Cumulative job wall time as seen from submit side", "Cumulative job badput wall time",
                    "Cumulative job badput wall time as seen from submit side"):
        assert any(line.startswith(f"{heading:<57}: ") for line in lines), heading
    assert any(line.split()[:3] == ["diamond::findrange:4.0", "successful", "8"] for line in lines)
    data = json.loads(sheaf("statistics", str(blackdiamond), "--json").stdout)
    assert data["summary"][0] == {"type": "Tasks", "succeeded": 10, "failed": 0, "incomplete": 0, "total": 10,
                                  "retries": 0, "total_retries": 10}
    names = {t["transformation"] for t in data["transformations"]}
    assert names >= {"diamond::analyze:4.0", "pegasus::dirmanager", "pegasus::transfer"}
    assert data["job_wall_time"] > 0 and data["badput"] == 0 and data["hosts"][0]["tasks"] == 10
    rows = list(csv.reader(io.StringIO(sheaf("statistics", str(blackdiamond), "--csv").stdout)))
    assert ["Tasks", "10", "0", "0", "10", "0", "10"] in rows


def test_status_and_analyze_of_a_successful_run(blackdiamond: Path) -> None:
    status = sheaf("status", str(blackdiamond), "-l")
    assert status.returncode == 0 and ": succeeded (1 engine run(s), 0 retries" in status.stdout
    assert "running now (0)" in status.stdout
    report = sheaf("analyze", str(blackdiamond))
    assert report.returncode == 0 and " # jobs failed      :      0 (0.00%)" in report.stdout
    assert "Failed jobs' details" not in report.stdout


def test_analyze_explains_a_failed_job_and_its_rerun_command_reproduces_it(tmp_path: Path) -> None:
    wf = _catalogs(Workflow("failing"), ("ok", "/bin/true"), ("bad", "/bin/sh"))
    first, bad = Job("ok"), Job("bad").add_args("-c", "'echo out-line; echo err-line >&2; exit 3'")
    wf.add_jobs(first, bad).add_dependency(first, children=[bad])
    run_dir = _plan(tmp_path, wf, "-D", "dagman.retry=1")
    assert sheaf("run", str(run_dir)).returncode == 1
    report = sheaf("analyze", str(run_dir)).stdout
    assert " # jobs failed      :      1 (33.33%)" in report and "=bad_ID0000002=" in report
    assert "exitcode: 3" in report and "attempts: 2" in report
    # each attempt's task run is its own: the retried attempt's end is not booked on the next one
    assert report.count("failed task: ID0000002") == 1
    assert "out-line" in report and "err-line" in report and "executable = /bin/sh" in report
    command = report.split("To re-run this job, use:\n\n    ")[1].splitlines()[0]
    rerun = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=False)
    assert rerun.returncode == 3 and rerun.stdout == "out-line\n"
    stats = json.loads(sheaf("statistics", str(run_dir), "--json").stdout)
    jobs = stats["summary"][1]
    assert (jobs["failed"], jobs["retries"]) == (1, 1) and stats["badput"] > 0
    status = sheaf("status", str(run_dir))
    assert "failed: bad_ID0000002: exit code 3" in status.stdout


def test_a_retry_across_a_rescue_is_a_retry(tmp_path: Path) -> None:
    """As pegasus-statistics counts them: an attempt of a rescue rerun is a retry of the job and of its
    task; analyze counts a failed job's attempts over every run."""
    run_dir = rescued_run(tmp_path)
    stats = json.loads(sheaf("statistics", str(run_dir), "--json").stdout)
    tasks, jobs = stats["summary"][:2]
    assert (tasks["succeeded"], tasks["failed"], tasks["retries"]) == (1, 1, 2)
    assert (jobs["failed"], jobs["retries"]) == (1, 2) and stats["badput"] > 0
    lines = sheaf("statistics", str(run_dir)).stdout.splitlines()
    # the create_dir job is the third
    assert any(line.split() == ["Jobs", "2", "1", "0", "3", "2", "5"] for line in lines), lines
    report = sheaf("analyze", str(run_dir)).stdout
    assert "=sh_bad=" in report and "attempts: 2" in report and "exitcode: 3" in report
    assert "=sh_flaky=" not in report


def test_a_held_job_is_shown_with_its_reason(tmp_path: Path) -> None:
    wf = _catalogs(Workflow("held"), ("ok", "/bin/true"))
    wf.add_jobs(Job("ok").add_condor_profile(request_memory="900000000"))
    run_dir = _plan(tmp_path, wf, "-D", "dagman.retry=0")
    assert sheaf("run", str(run_dir)).returncode == 1
    status = sheaf("status", str(run_dir), "-l").stdout
    assert "held (1)" in status
    report = sheaf("analyze", str(run_dir)).stdout
    assert " # jobs held        :      1" in report and "held reason:" in report


def test_a_hierarchical_run(tmp_path: Path) -> None:
    inner = _catalogs(Workflow("inner"), ("touch", "/usr/bin/touch"))
    inner.add_jobs(*(Job("touch").add_args(str(tmp_path / name)) for name in ("a", "b")))
    inner.write(str(tmp_path / "inner.yml"))
    (tmp_path / "tiny.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "tiny.dag").write_text(f"JOB only {tmp_path / 'tiny.sub'}\n")
    rc = ReplicaCatalog().add_replica("local", "inner.yml", str(tmp_path / "inner.yml")) \
        .add_replica("local", "tiny.dag", str(tmp_path / "tiny.dag"))
    outer = _catalogs(Workflow("outer"), ("ok", "/bin/true")).add_replica_catalog(rc)
    planned = SubWorkflow(File("inner.yml"), is_planned=False, _id="ID1").add_args("--sites", "local")
    subdag = SubWorkflow(File("tiny.dag"), is_planned=True, _id="ID2")
    outer.add_jobs(planned, subdag, Job("ok", _id="ID3")).add_dependency(planned, children=[subdag])
    run_dir = _plan(tmp_path, outer, "-D", "dagman.retry=0")
    ran = sheaf("run", str(run_dir))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    status = sheaf("status", str(run_dir), "-l")
    assert status.returncode == 0, status.stderr
    assert "↳ inner.yml_ID1" in status.stdout and "↳ tiny.dag_ID2" in status.stdout
    stats = json.loads(sheaf("statistics", str(run_dir), "--json").stdout)
    subs = stats["summary"][2]
    assert (subs["succeeded"], subs["total"]) == (2, 2) and stats["workflows"] == 3
    # Tasks: the outer job and the inner workflow's two (a DAG file's nodes run no workflow tasks); the
    # sub-workflow jobs' own tasks (condor::dagman, the inner planner) are none, as pegasus-statistics counts
    tasks = stats["summary"][0]
    assert (tasks["succeeded"], tasks["total"]) == (3, 3), tasks
    assert any(t["transformation"] == "condor::dagman" for t in stats["transformations"])


def test_a_clustered_run_of_ten_thousand_tasks(tmp_path: Path) -> None:
    wf = _catalogs(Workflow("many"), ("true", "/bin/true"))
    wf.add_jobs(*(Job("true", _id=f"T{i:05d}") for i in range(10_000)))
    run_dir = _plan(tmp_path, wf, "-C", "horizontal", "-D", "pegasus.clusters.size=1000")
    ran = sheaf("run", str(run_dir), timeout=600)
    assert ran.returncode == 0, ran.stderr
    stats = json.loads(sheaf("statistics", str(run_dir), "--json").stdout)
    assert stats["summary"][0]["succeeded"] == 10_000 and stats["summary"][1]["total"] == 10 + 1
    (row,) = [t for t in stats["transformations"] if t["transformation"] == "true"]
    assert row["count"] == 10_000 and row["type"] == "successful"
    assert "succeeded" in sheaf("status", str(run_dir)).stdout
    assert " # jobs failed      :      0" in sheaf("analyze", str(run_dir)).stdout
    plots = sheaf("plots", str(run_dir))
    assert plots.returncode == 0, plots.stderr
    page = (run_dir / "plots" / "index.html").read_text()
    assert page.count('<rect class="task"') == 10_000 and page.count('<rect class="job"') == 11


def test_plots_are_pngs_and_one_offline_html_page(blackdiamond: Path) -> None:
    done = sheaf("plots", str(blackdiamond))
    assert done.returncode == 0, done.stderr
    written = [Path(line) for line in done.stdout.splitlines()]
    assert [p.name for p in written] == ["gantt.png", "slots.png", "breakdown.png", "index.html"]
    for png in written[:3]:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
    page = written[3].read_text()
    assert page.count("<svg") == 3 and page.count('<rect class="task"') == 8  # the clusters' 8 tasks
    assert page.count('<rect class="job"') == 8 and "diamond::findrange:4.0" in page
    assert "<script>" in page and "<script src" not in page and 'href="http' not in page


@pytest.mark.parametrize("command", ["status", "statistics", "analyze", "plots"])
def test_a_bad_or_missing_run_directory_is_one_message(tmp_path: Path, command: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("x")
    planned = tmp_path / "planned"
    planned.mkdir()
    (planned / "w.dag").write_text("JOB a a.sub\n")
    for where, says in ((tmp_path / "missing", "no such run directory"), (tmp_path / "empty", "*.dag"),
                        (planned, "no engine journal yet")):
        done = sheaf(command, str(where))
        assert done.returncode == 2, (where, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and says in done.stderr and "Traceback" not in done.stderr
        assert not list(where.glob("*.events.db")) if where.exists() else True


def test_status_watch_follows_a_run_to_its_end(tmp_path: Path) -> None:
    run_dir = slow_workflow(tmp_path, 12)
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", str(run_dir)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(run_dir.glob(".sheaf/*.journal")) and time.monotonic() < deadline:
        time.sleep(0.05)
    watch = sheaf("status", str(run_dir), "--watch", "--interval", "0.3", "-l")
    assert engine.wait(timeout=120) == 0
    assert watch.returncode == 0, watch.stderr
    assert ": succeeded (" in watch.stdout and "running now" in watch.stdout
