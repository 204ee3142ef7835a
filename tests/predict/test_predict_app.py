"""``sheaf predict``, ``sheaf calibrate`` and ``sheaf.app.predict`` on real plans and a real run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sheaf import app
from sheaf.predict import COMPONENTS, DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
SHEAF = str(Path(sys.executable).with_name("sheaf"))

# a WfCommons trace (schema 1.5) of two sleeps, 2 s then 1 s
TRACE = {"name": "tiny", "schemaVersion": "1.5", "workflow": {
    "specification": {"tasks": [
        {"name": "a", "id": "a_ID1", "parents": [], "children": ["b_ID2"], "inputFiles": [],
         "outputFiles": ["f1"]},
        {"name": "b", "id": "b_ID2", "parents": ["a_ID1"], "children": [], "inputFiles": ["f1"],
         "outputFiles": []}],
        "files": [{"id": "f1", "sizeInBytes": 100}]},
    "execution": {"makespanInSeconds": 3, "executedAt": "2024", "tasks": [
        {"id": "a_ID1", "runtimeInSeconds": 2.0, "command": {"program": "sleep", "arguments": ["2"]}},
        {"id": "b_ID2", "runtimeInSeconds": 1.0, "command": {"program": "sleep", "arguments": ["1"]}}]}}}


def sheaf(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SHEAF_OVERHEADS": str(tmp_path / "overheads.json"),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}


def plan(cwd: Path, env: dict[str, str], *args: str) -> Path:
    done = sheaf("plan", *args, "--dir", "runs", "-q", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.splitlines()[0].removeprefix("submit directory: "))


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    (tmp_path / "tiny.json").write_text(json.dumps(TRACE))
    return tmp_path


def test_json_has_the_contract_keys_and_names_the_runtime_source(trace: Path, env: dict[str, str]) -> None:
    directory = plan(trace, env, "tiny.json")
    done = sheaf("predict", str(directory), "--slots", "2", "--json", cwd=trace, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    for key in ("makespan_s", "low_s", "high_s", "jobs", "critical_path_s", "utilisation", "levels"):
        assert key in got
    assert got["runtime_sources"] == {"sleep": "trace"}
    assert got["jobs"] == 3 and got["slots"] == 2  # create-dir, a, b
    assert 3.0 < got["makespan_s"] < 3.5 and got["low_s"] <= got["makespan_s"] <= got["high_s"]
    assert json.loads((directory / "prediction.json").read_text())["makespan_s"] == got["makespan_s"]


def test_a_flat_overhead_is_paid_by_every_job_on_the_critical_path(trace: Path, env: dict[str, str]) -> None:
    directory = plan(trace, env, "tiny.json")
    cheap = app.predict(str(directory), app.PredictOptions(slots=4, overhead=0.0)).prediction
    dear = app.predict(str(directory), app.PredictOptions(slots=4, overhead=60.0)).prediction
    assert dear.makespan_s - cheap.makespan_s == pytest.approx(3 * 60, rel=0.2)
    assert dear.critical_path_s - cheap.critical_path_s == pytest.approx(3 * 60, rel=0.01)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"format": "sheaf-overheads/1", "backends": {"local": {"sbumit": 1}}}', "unknown component 'sbumit'"),
    ('{"format": "sheaf-overheads/1", "backends": {"local": {"submit": -1}}}', "local.submit: want a finite"),
    ('{"format": "sheaf-overheads/1", "backends": {"pbs": {}}}', "unknown backend 'pbs'"),
    ('{"backends": {}}', "not an overhead model"),
    ("{not json", "not JSON"),
])
def test_a_bad_model_file_is_exit_2_naming_the_file(trace: Path, env: dict[str, str], text: str,
                                                    expected: str) -> None:
    directory = plan(trace, env, "tiny.json")
    (trace / "model.json").write_text(text)
    done = sheaf("predict", str(directory), "--overheads", "model.json", cwd=trace, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "model.json" in done.stderr and expected in done.stderr
    assert not (directory / "prediction.json").exists()


def test_bad_options_are_exit_2(trace: Path, env: dict[str, str]) -> None:
    directory = plan(trace, env, "tiny.json")
    for args in (["--slots", "0"], ["--backend", "pbs"], ["--overhead", "-1"]):
        done = sheaf("predict", str(directory), *args, cwd=trace, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr, args
    done = sheaf("predict", str(trace / "nowhere"), cwd=trace, env=env)
    assert done.returncode == 2 and "nowhere" in done.stderr
    done = sheaf("predict", str(trace / "tiny.json"), cwd=trace, env=env)  # the trace, not its plan
    assert done.returncode == 2 and "tiny.json is a workflow, not a plan: `sheaf plan" in done.stderr


@pytest.mark.slow
def test_a_run_calibrates_the_model_and_its_history_feeds_the_next_prediction(tmp_path: Path,
                                                                             env: dict[str, str]) -> None:
    example = tmp_path / "blackdiamond"
    shutil.copytree(ROOT / "examples" / "blackdiamond", example)
    first = plan(example, env, "workflow.yml", "--cluster", "horizontal", "--input-dir", "input")
    before = sheaf("predict", str(first), "--json", cwd=example, env=env)
    assert json.loads(before.stdout)["runtime_sources"]["diamond::findrange:4.0"] == "default"
    assert sheaf("run", str(first), cwd=example, env=env).returncode == 0
    statistics = sheaf("statistics", str(first), cwd=example, env=env).stdout
    assert "Predicted makespan (sheaf predict)" in statistics and "measured / predicted" in statistics
    # the predicted Gantt chart beside the real one, on the same colours
    schedule = json.loads((first / "prediction.json").read_text())["schedule"]
    jobs = json.loads((first / "plan.json").read_text())["jobs"]
    assert sorted(row[0] for row in schedule) == sorted(job["id"] for job in jobs)
    assert all(0 <= start <= end for _, _, start, end in schedule)
    assert sheaf("plots", str(first), cwd=example, env=env).returncode == 0
    assert (first / "plots" / "gantt-predicted.png").read_bytes().startswith(b"\x89PNG")
    page = (first / "plots" / "index.html").read_text()
    predicted_chart = page[page.index('id="gantt-predicted"'):]
    assert all(f">{row[0]} (" in predicted_chart for row in schedule)

    done = sheaf("calibrate", str(first), "--backend", "local", cwd=example, env=env)
    assert done.returncode == 0, done.stderr
    saved = json.loads(Path(env["SHEAF_OVERHEADS"]).read_text())
    assert saved["backends"]["local"]["source"] == "calibrated from 1 run"
    fitted = saved["backends"]["local"]
    default = DEFAULTS["local"].to_json()
    assert {name: fitted[name] for name in COMPONENTS} != {name: default[name] for name in COMPONENTS}

    second = plan(example, env, "workflow.yml", "--cluster", "horizontal", "--input-dir", "input")
    after = json.loads(sheaf("predict", str(second), "--json", cwd=example, env=env).stdout)
    assert after["runtime_sources"]["diamond::findrange:4.0"] == "history"
    assert after["overheads"]["source"] == "calibrated from 1 run"
    measured = app.statistics(str(first)).wall_time
    # a half-second workflow on a busy machine: within a factor of two, where 60 s defaults would be 100x off
    assert measured is not None and measured / 2 < after["makespan_s"] < measured * 2


def fan_trace(directory: Path, tasks: int = 40) -> None:
    """A WfCommons trace: ``tasks`` one-second sleeps feeding one merge."""
    fan = [{"name": "s", "id": f"s_ID{i}", "parents": [], "children": ["m_ID0"], "inputFiles": [],
            "outputFiles": []} for i in range(1, tasks + 1)]
    fan.append({"name": "m", "id": "m_ID0", "parents": [t["id"] for t in fan], "children": [],
                "inputFiles": [], "outputFiles": []})
    runs = [{"id": t["id"], "runtimeInSeconds": 1.0,
             "command": {"program": "sleep" if t["name"] == "s" else "true", "arguments": ["1"]}}
            for t in fan]
    (directory / "fan.json").write_text(json.dumps({"name": "fan", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": fan, "files": []},
        "execution": {"makespanInSeconds": 1, "executedAt": "2024", "tasks": runs}}}))


@pytest.mark.parametrize("how", [["--cluster", "auto"],
                                 ["--cluster", "horizontal", "-D", "pegasus.clusters.size=auto"]])
def test_automatic_clustering_under_a_grid_overhead_prints_and_records_its_choice(
        tmp_path: Path, env: dict[str, str], how: list[str]) -> None:
    fan_trace(tmp_path)
    done = sheaf("plan", "fan.json", "--dir", "runs", *how, "--overhead", "60", "--slots", "4",
                 cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "auto clusters: level 1 sleep on condorpool: 40 tasks -> 4 jobs" in done.stdout
    assert "predicted makespan:" in done.stdout and "unclustered (4 slots" in done.stdout
    directory = Path(done.stdout.split("submit directory: ")[1].splitlines()[0])
    plan = json.loads((directory / "plan.json").read_text())
    auto = plan["autocluster"]
    assert auto["groups"][0]["jobs"] == 4 and auto["slots"] == 4
    # the create-dir job, one wave of four 10-task jobs, then the merge; each job pays its 60 s
    assert auto["predicted_makespan_s"] == pytest.approx(60 + (60 + 10) + (60 + 1), rel=0.05)
    assert auto["unclustered_makespan_s"] == pytest.approx(60 + 10 * 61 + 61, rel=0.05)
    assert sum(job["type"] == "cluster" for job in plan["jobs"]) == 4


def test_a_users_cluster_size_wins_over_auto(tmp_path: Path, env: dict[str, str]) -> None:
    fan_trace(tmp_path)
    done = sheaf("plan", "fan.json", "--dir", "runs", "--cluster", "auto", "-D", "pegasus.clusters.size=8",
                 "--overhead", "60", "--slots", "4", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    directory = Path(done.stdout.split("submit directory: ")[1].splitlines()[0])
    plan = json.loads((directory / "plan.json").read_text())
    assert [len(job["tasks"]) for job in plan["jobs"] if job["type"] == "cluster"] == [8] * 5
    assert "autocluster" not in plan


def test_clustering_options_without_automatic_clustering_are_warned_about(tmp_path: Path,
                                                                          env: dict[str, str]) -> None:
    fan_trace(tmp_path)
    done = sheaf("plan", "fan.json", "--dir", "runs", "--slots", "4", "--overhead", "60", cwd=tmp_path,
                 env=env)
    assert done.returncode == 0, done.stderr
    assert "--slots, --overhead: only automatic clustering reads them" in done.stderr


def test_calibrating_from_a_directory_that_never_ran_is_exit_2(trace: Path, env: dict[str, str]) -> None:
    directory = plan(trace, env, "tiny.json")
    done = sheaf("calibrate", str(directory), cwd=trace, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no run to calibrate from" in done.stderr and str(directory) in done.stderr
    assert not Path(env["SHEAF_OVERHEADS"]).exists()


def test_a_hand_written_dagman_dag_is_predicted_from_its_file_or_its_directory(tmp_path: Path,
                                                                                env: dict[str, str]) -> None:
    """Any DAGMan DAG: the file itself, or DIR with --dag when it holds several; levels are depths, the
    PRIORITY and the CATEGORY throttle are the engine's."""
    text = ("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB D d.sub\nPARENT A CHILD B C D\n"
            'VARS A x="1"\nCATEGORY B one\nCATEGORY C one\nCATEGORY D one\nMAXJOBS one 1\n')
    (tmp_path / "w.dag").write_text(text)
    (tmp_path / "other.dag").write_text("JOB X x.sub\n")
    got = json.loads(sheaf("predict", "w.dag", "--slots", "8", "--overhead", "10", "--no-history", "--json",
                           cwd=tmp_path, env=env).stdout)
    assert [(level["level"], level["jobs"]) for level in got["levels"]] == [(0, 1), (1, 3)]
    # one at a time through the category: four 60 s jobs, each paying its 10 s
    assert got["critical_path_s"] == pytest.approx(140, rel=0.01)
    assert got["makespan_s"] == pytest.approx(280, rel=0.25) and got["makespan_s"] > 200
    assert json.loads((tmp_path / "prediction.json").read_text())["jobs"] == 4
    again = sheaf("predict", ".", "--dag", "w.dag", "--slots", "8", "--overhead", "10", "--no-history",
                  "--json", cwd=tmp_path, env=env)
    assert json.loads(again.stdout)["jobs"] == 4
    both = sheaf("predict", ".", cwd=tmp_path, env=env)
    assert both.returncode == 2 and "expected exactly one *.dag file" in both.stderr


def test_a_schedule_too_long_to_keep_is_said_and_a_missing_dag_is_exit_2(
        tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sheaf.app._predict as predicting

    (tmp_path / "w.dag").write_text("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n")
    monkeypatch.setattr(predicting, "GANTT_JOBS", 1)
    result = app.predict(str(tmp_path / "w.dag"), app.PredictOptions(slots=1, history=False, record=True))
    assert any("keeps no schedule of more than 1 jobs" in note for note in result.notes)
    assert "schedule" not in json.loads((tmp_path / "prediction.json").read_text())
    done = sheaf("predict", str(tmp_path), "--dag", "nope.dag", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "no DAG file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("schedule", [None, "text", [["a", "x", 0, 1], ["b"], [1, "x", 0, 1],
                                                     ["c", "x", "0", 1], ["d", "x", 0, float("nan")]]])
def test_a_damaged_predicted_schedule_draws_only_its_well_formed_rows(tmp_path: Path,
                                                                      schedule: object) -> None:
    from sheaf.monitor._plots import predicted_data

    (tmp_path / "prediction.json").write_text(json.dumps(
        {"makespan_s": 1.0, "low_s": 0.9, "high_s": 1.1, "schedule": schedule}))
    data = predicted_data(str(tmp_path))
    rows = [] if data is None else [bar.row for bar in data.bars]
    assert rows == (["a"] if isinstance(schedule, list) else [])


def test_a_clusters_size_of_auto_under_horizontal_clustering_alone_loads_the_model(
        tmp_path: Path, env: dict[str, str]) -> None:
    """No automatic clustering option given: the model is built when the auto group needs it."""
    fan_trace(tmp_path)
    done = sheaf("plan", "fan.json", "--dir", "runs", "--cluster", "horizontal", "-D",
                 "pegasus.clusters.size=auto", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "auto clusters: level 1 sleep on condorpool: 40 tasks ->" in done.stdout
    directory = Path(done.stdout.split("submit directory: ")[1].splitlines()[0])
    auto = json.loads((directory / "plan.json").read_text())["autocluster"]
    assert auto["backend"] == "local" and auto["groups"][0]["tasks"] == 40
    assert auto["predicted_makespan_s"] > 0


def test_horizontal_clustering_with_no_auto_profile_never_loads_the_simulator(
        tmp_path: Path, env: dict[str, str]) -> None:
    """Loading the model imports the simulator (numpy) and reads every earlier run: a plan that
    clusters no group automatically pays for neither."""
    fan_trace(tmp_path)
    code = ("import sys\nfrom sheaf import app\n"
            "for _ in range(2):\n"
            "    app.plan(app.PlanRequest('fan.json', base='runs', clustering=('horizontal',),\n"
            "                             defines=('pegasus.clusters.size=8',)))\n"
            "print(sorted(m for m in ('numpy', 'sheaf.app._autocluster', 'sheaf.predict._simulate')\n"
            "             if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
