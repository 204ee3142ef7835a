"""A transformation named without a path (no catalog; a WfCommons trace's program) is found where
``sheaf plan`` runs, for a task inside a cluster as for a job of its own: the job's environment is
its submit description's, whose PATH need not hold the program."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))


@pytest.mark.parametrize("clustering", [[], ["--cluster", "horizontal", "-D", "pegasus.clusters.size=2"]])
def test_a_program_on_the_planners_path_runs_clustered_or_not(tmp_path: Path, clustering: list[str]) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    program = tools / "only-here"
    program.write_text(f"#!{sys.executable}\nimport sys\nopen(sys.argv[1], 'w').write('ran')\n")
    program.chmod(0o755)
    tasks = [{"name": "t", "id": f"t_ID{i}", "parents": [], "children": [], "inputFiles": [],
              "outputFiles": []} for i in range(4)]
    runs = [{"id": t["id"], "runtimeInSeconds": 0.1,
             "command": {"program": "only-here", "arguments": [str(tmp_path / f"out{i}")]}}
            for i, t in enumerate(tasks)]
    (tmp_path / "trace.json").write_text(json.dumps({"name": "bare", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": tasks, "files": []},
        "execution": {"makespanInSeconds": 1, "executedAt": "2024", "tasks": runs}}}))
    planner_env = {**os.environ, "PATH": f"{tools}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([SHEAF, "plan", "trace.json", "--dir", "runs", "-q", *clustering], cwd=tmp_path,
                          env=planner_env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    directory = done.stdout.splitlines()[0].removeprefix("submit directory: ")
    assert shutil.which("only-here") is None  # the engine's PATH does not hold it
    ran = subprocess.run([SHEAF, "run", directory], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert all((tmp_path / f"out{i}").read_text() == "ran" for i in range(4))
