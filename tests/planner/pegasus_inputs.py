"""Helpers for the end-to-end tests of what Pegasus users' inputs contain: a program that records
the argv it receives, and plan-then-run through the library and the real ``sheaf run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from sheaf.codegen import write_plan
from sheaf.formats import Inputs, load_inputs
from sheaf.planner import DataOptions, ExecutableWorkflow, plan, plan_data

SHEAF = str(Path(sys.executable).parent / "sheaf")

#: a program that writes the argv it receives, as JSON, to the file named by $ARGV_OUT (else argv.json)
RECORDER = f"""#!{sys.executable}
import json, os, sys
with open(os.environ.get("ARGV_OUT", "argv.json"), "w") as out:
    json.dump(sys.argv[1:], out)
"""


def recorder(path: Path, *, executable: bool = True) -> Path:
    path.write_text(RECORDER)
    path.chmod(0o755 if executable else 0o644)
    return path


def plan_into(cwd: Path, workflow: str, target: Path, *, sites: Iterable[str] | None = None,
              clustering: Iterable[str] = (), cleanup: str = "none",
              **options: str) -> tuple[Inputs, ExecutableWorkflow]:
    """Load as ``sheaf plan`` does (from ``cwd``), plan and write into ``target``; ``cleanup`` is the
    data pass's strategy (none: these tests look into scratch after the run)."""
    inputs = load_inputs(workflow, cwd=cwd, **options)  # type: ignore[arg-type]
    exec_wf = plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc, properties=inputs.properties,
                   sites=list(sites) if sites else None, clustering=tuple(clustering),
                   data=DataOptions(cleanup=cleanup, cwd=str(cwd)))
    exec_wf.site_catalog = exec_wf.site_catalog or inputs.sc
    exec_wf.replica_catalog = exec_wf.replica_catalog or inputs.rc
    old = os.getcwd()
    os.chdir(cwd)  # relative paths are taken from where sheaf plan runs
    try:
        plan_data(exec_wf, str(target))
        write_plan(exec_wf, target)
    finally:
        os.chdir(old)
    return inputs, exec_wf


def run(target: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, "run", str(target)], capture_output=True, text=True, env=env, timeout=300,
                          check=False)


def argv_seen(path: Path) -> list[str]:
    loaded: list[str] = json.loads(path.read_text())
    return loaded
