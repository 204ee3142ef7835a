"""The benchmark scripts still run against the current program (tiny sizes, no timing asserted):
a script that broke when an interface changed would only be found when someone needs its figures."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("args", [
    ["engine_throughput.py", "--tasks", "60", "--rounds", "1"],
    ["engine_throughput.py", "--tasks", "60", "--rounds", "1", "--events"],
    ["plan_scaling.py", "--sizes", "300", "--run", "40", "--rounds", "2"],
    ["transfer_throughput.py", "--small", "5", "--big-mb", "0.5"],
    pytest.param(["backend_overhead.py", "--tasks", "40", "--cluster", "20"],
                 marks=pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                          reason="the Dask backend needs the distributed package")),
    pytest.param(["pmc_transport.py", "20", "1"],
                 marks=pytest.mark.skipif(shutil.which("mpiexec") is None, reason="no mpiexec")),
    # starts the Slurm test cluster (or prints why it cannot and exits 0)
    ["backend_overhead.py", "--backend", "slurm", "--levels", "2", "--width", "2", "--chain", "2",
     "--slurm-tasks", "20", "--sleep", "0"],
    ["grid_binding.py", "--groups", "3", "--tasks", "2", "--idle", "1", "--smoke"],
    ["predict_speed.py", "--sizes", "300", "--rounds", "1"],
    ["predict_accuracy.py", str(BENCH.parent / "examples" / "fan" / "fan.json"), "--slots", "2", "3",
     "--seconds", "1"],
    ["autocluster.py", str(BENCH.parent / "examples" / "fan" / "fan.json"), "--slots", "4"],
    ["cli_startup.py", "--runs", "1", "--history", "1"],
], ids=lambda a: a[0])
def test_benchmark_runs(args: list[str]) -> None:
    done = subprocess.run([sys.executable, str(BENCH / args[0]), *args[1:]], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "-> FAILED" not in done.stdout, done.stdout[-2000:]  # a correctness check inside a benchmark


def test_autocluster_on_slurm_runs(tmp_path: Path) -> None:
    """The real-run autocluster benchmark on a six-task fan (or it says why Slurm is missing)."""
    tasks = [{"name": "s", "id": f"s_ID{i}", "parents": [], "children": ["m_ID0"], "inputFiles": [],
              "outputFiles": []} for i in range(5)]
    tasks.append({"name": "m", "id": "m_ID0", "parents": [t["id"] for t in tasks], "children": [],
                  "inputFiles": [], "outputFiles": []})
    runs = [{"id": t["id"], "runtimeInSeconds": 0.2, "command": {"program": t["name"]}} for t in tasks]
    trace = tmp_path / "six.json"
    trace.write_text(json.dumps({"name": "six", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": tasks, "files": []},
        "execution": {"makespanInSeconds": 1, "executedAt": "2024", "tasks": runs}}}))
    done = subprocess.run([sys.executable, str(BENCH / "autocluster_slurm.py"), str(trace), "--sizes", "5"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "skipped" in done.stdout or "sbatch cut" in done.stdout, done.stdout


def test_plan_scaling_refuses_zero_rounds() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "plan_scaling.py"), "--rounds", "0"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--rounds must be 1 or more, not 0" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_cli_startup_refuses_zero_runs() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "cli_startup.py"), "--runs", "0"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--runs must be 1 or more" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
