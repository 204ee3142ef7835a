"""``sheaf plan`` as users run it: the bundled example planned and run for real, and bad input
(one message, exit 2, nothing written)."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from sheaf.engine import parse_dag

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
SHEAF = [str(Path(sys.executable).parent / "sheaf")]


def _sheaf(*args: str, cwd: Path = EXAMPLE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([*SHEAF, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300,
                          check=False)


@pytest.fixture(scope="module")
def catalogs() -> tuple[Path, list[str]]:
    """The example's committed catalogs are found in its directory (no options needed)."""
    return EXAMPLE, []


def wait_for_detached_run(directory: Path, timeout: float = 240) -> str:
    """The log of the run ``--submit`` started in the background, once its engine has exited."""
    pid = int((directory / "sheaf-run.pid").read_text())
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and b"run" in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the detached run did not finish"
        time.sleep(0.1)
    return (directory / "sheaf-run.log").read_text()


def test_plan_and_submit_the_bundled_example(tmp_path: Path) -> None:
    done = _sheaf("plan", "workflow.yml", "-d", str(tmp_path), "--relative-dir", "plan", "--cluster",
                  "horizontal", "--input-dir", "input", "-v", "--submit")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "abstract jobs: 10" in done.stdout
    assert "clusters: 3 holding 8 tasks (3 horizontal/seqexec)" in done.stdout
    assert "site condorpool: 5 jobs, 3 clusters, 10 tasks" in done.stdout
    assert "note: horizontal" in done.stdout  # -v prints the planner's notes
    assert f"watch it with: sheaf status {tmp_path / 'plan'}" in done.stdout  # the run is detached
    # 5 jobs, create_dir, stage_in and the cleanup job of the files they leave in scratch
    assert "workflow succeeded: 8 of 8 nodes done" in wait_for_detached_run(tmp_path / "plan")
    output = (tmp_path / "plan" / "scratch" / "condorpool" / "f.d").read_text()
    assert output.startswith("analyze on ") and output.count("findrange on ") == 8
    doc = msgspec.json.decode((tmp_path / "plan" / "plan.json").read_bytes())
    assert [j["type"] for j in doc["jobs"]].count("cluster") == 3
    assert sorted(len(j["tasks"]) for j in doc["jobs"] if j["type"] == "cluster") == [2, 3, 3]
    dag = parse_dag(str(tmp_path / "plan" / "blackdiamond.dag"))
    description = dag.descriptions[dag.nodes["preprocess_ID0000001"].description or ""]
    # a SUBMIT-DESCRIPTION; the catalog's relative pfn, made absolute
    assert f"executable = {EXAMPLE}/bin/keg" in (text for _, text in description.lines)


def test_demo_script_runs() -> None:
    done = subprocess.run(["bash", str(ROOT / "examples" / "demo.sh")], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workflow succeeded" in done.stdout and "analyze on " in done.stdout


def test_a_named_submit_dir_that_is_not_empty_is_refused(catalogs: tuple[Path, list[str]],
                                                         tmp_path: Path) -> None:
    _, opts = catalogs
    target = tmp_path / "busy"
    target.mkdir()
    (target / "x").write_text("x")
    done = _sheaf("plan", "workflow.yml", "-d", str(tmp_path), "--relative-dir", "busy", *opts)
    assert done.returncode == 2
    assert "not empty" in done.stderr and "Traceback" not in done.stderr
    assert os.listdir(target) == ["x"] and os.listdir(tmp_path) == ["busy"]


@pytest.mark.parametrize(("args", "message"), [
    (["--cluster", "vertical"], "vertical"),
    (["--sites", "nosuchsite"], "nosuchsite"),
    (["-D", "pegasus.clusterer.job.aggregator=bogus"], "bogus"),
    (["--input-dir", "/nonexistent/dir"], "no such directory"),
])
def test_bad_input_is_one_message_and_exit_2(catalogs: tuple[Path, list[str]], tmp_path: Path,
                                             args: list[str], message: str) -> None:
    _, opts = catalogs
    done = _sheaf("plan", "workflow.yml", "-d", str(tmp_path), *args, *opts)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("lfn", ["../../victim.txt", "VICTIM", "sub/../../victim.txt"])
def test_an_output_outside_the_working_directory_is_refused_with_its_line(tmp_path: Path, lfn: str) -> None:
    """A job that says it writes a file outside its working directory would have that file staged out and
    then removed by cleanup: the plan refuses it, naming the line, and writes nothing."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lfn = str(victim) if lfn == "VICTIM" else lfn
    (tmp_path / "wf.yml").write_text(
        'pegasus: "5.0"\nname: esc\njobs:\n- type: job\n  name: t\n  id: ID1\n  uses:\n'
        '  - {lfn: in.txt, type: input}\n'
        f'  - {{lfn: "{lfn}", type: output, stageOut: false, registerReplica: false}}\n'
        "jobDependencies: []\n")
    done = _sheaf("plan", "wf.yml", "--dir", "runs", "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "wf.yml:9:" in done.stderr and "outside its working directory" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["victim.txt", "wf.yml"] and victim.read_text() == "precious\n"


def test_a_second_plan_never_overwrites_the_first(catalogs: tuple[Path, list[str]], tmp_path: Path) -> None:
    """sheaf 0.x's --force replaced DIR; now --force is pegasus-plan's (no data reuse) and every plan
    goes to a new runNNNN under the base."""
    _, opts = catalogs
    runs = tmp_path / getpass.getuser() / "pegasus" / "blackdiamond"
    assert _sheaf("plan", "workflow.yml", "-d", str(tmp_path), *opts).returncode == 0
    first = (runs / "run0001" / "plan.json").read_bytes()
    again = _sheaf("plan", "workflow.yml", "-d", str(tmp_path), "--cluster", "horizontal", "--force", *opts)
    assert again.returncode == 0, again.stderr
    assert f"submit directory: {runs / 'run0002'}\n" in again.stdout
    assert (runs / "run0001" / "plan.json").read_bytes() == first
    assert (runs / "run0002" / "plan.json").read_bytes() != first
    assert sorted(os.listdir(runs)) == ["run0001", "run0002"]


def test_a_malformed_max_wall_time_of_the_aggregator_entry_is_refused_at_plan_time(tmp_path: Path) -> None:
    (tmp_path / "wf.yml").write_text(
        "pegasus: '5.0'\nname: w\njobs:\n- {type: job, name: keg, id: ID1, arguments: [a]}\n"
        "- {type: job, name: keg, id: ID2, arguments: [b]}\njobDependencies: []\n")
    (tmp_path / "tc.yml").write_text(
        "pegasus: '5.0'\ntransformations:\n- name: keg\n"
        "  sites:\n  - {name: local, pfn: /bin/echo, type: installed}\n"
        "  profiles:\n    pegasus: {clusters.size: 2, job.aggregator: mpiexec}\n"
        "- namespace: pegasus\n  name: mpiexec\n"
        "  sites:\n  - {name: local, pfn: sheaf-mpi-cluster, type: installed}\n"
        "  profiles:\n    globus: {maxwalltime: abc}\n")
    (tmp_path / "sites.yml").write_text("pegasus: '5.0'\nsites:\n- {name: local, directories: []}\n")
    done = subprocess.run([str(Path(sys.executable).with_name("sheaf")), "plan", "wf.yml", "--tc", "tc.yml",
                           "--sc", "sites.yml", "-d", "p", "-C", "horizontal"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "maxwalltime" in done.stderr and "'abc'" in done.stderr and not (tmp_path / "p").exists()
