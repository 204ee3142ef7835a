"""Real runs for the monitor's tests: the blackdiamond example (clustered), planned and run through
the ``sheaf`` command as users do, once per module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from Pegasus.api import Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow

BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "blackdiamond"


def sheaf(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # rich's tables unwrapped, for the asserts
    return subprocess.run([str(BIN / "sheaf"), *args], capture_output=True, text=True, check=False,
                          timeout=timeout, cwd=cwd, env=env)


def plan_and_run(work: Path, name: str, *plan_args: str) -> Path:
    """Copy the blackdiamond example into ``work``, plan it into ``work/runs/name`` and run it."""
    example = work / "example"
    if not example.exists():
        shutil.copytree(EXAMPLE, example)
    planned = sheaf("plan", "workflow.yml", "--dir", "runs", "--relative-dir", name, "--input-dir", "input",
                    "-q", *plan_args, cwd=example)
    assert planned.returncode == 0, planned.stderr
    run_dir = example / "runs" / name
    ran = sheaf("run", str(run_dir))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return run_dir


def slow_workflow(tmp: Path, n: int, gate: Path | None = None) -> Path:
    """N jobs of ``sleep 0.3`` planned into ``tmp/run`` (not run); with ``gate``, each job first waits
    for that file to exist."""
    wf = Workflow("slow")
    tc = TransformationCatalog().add_transformations(
        Transformation("sleep", site="local", pfn="/bin/sleep", is_stageable=False),
        Transformation("sh", site="local", pfn="/bin/sh", is_stageable=False))
    wf.add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))
    if gate is None:
        wf.add_jobs(*(Job("sleep").add_args("0.3") for _ in range(n)))
    else:
        wait = f"'while [ ! -e {gate} ]; do sleep 0.05; done; sleep 0.3'"
        wf.add_jobs(*(Job("sh").add_args("-c", wait) for _ in range(n)))
    wf.write(str(tmp / "slow.yml"))
    done = sheaf("plan", "slow.yml", "--dir", ".", "--relative-dir", "run", "-s", "local", "-q", cwd=tmp)
    assert done.returncode == 0, done.stderr
    return tmp / "run"


def rescued_run(tmp: Path) -> Path:
    """A run with ``dagman.retry=0`` and its rescue rerun: ``flaky`` fails (exit 5) in the first run and
    succeeds in the rerun, ``bad`` fails (exit 3) in both; planned into ``tmp/run``."""
    wf = Workflow("rescued")
    tc = TransformationCatalog().add_transformations(
        Transformation("sh", site="local", pfn="/bin/sh", is_stageable=False))
    wf.add_transformation_catalog(tc).add_site_catalog(SiteCatalog().add_sites(Site("local")))
    flag = tmp / "flag"
    flaky = Job("sh", _id="flaky").add_args("-c", f"'test -e {flag} || {{ touch {flag}; exit 5; }}'")
    bad = Job("sh", _id="bad").add_args("-c", "'exit 3'")
    wf.add_jobs(flaky, bad)
    wf.write(str(tmp / "rescued.yml"))
    planned = sheaf("plan", "rescued.yml", "--dir", ".", "--relative-dir", "run", "-s", "local", "-q",
                    "-D", "dagman.retry=0", cwd=tmp)
    assert planned.returncode == 0, planned.stderr
    for _ in range(2):
        ran = sheaf("run", str(tmp / "run"))
        assert ran.returncode == 1, ran.stdout + ran.stderr
    return tmp / "run"


@pytest.fixture(scope="module")
def blackdiamond(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plan_and_run(tmp_path_factory.mktemp("bd"), "clustered", "--cluster", "horizontal")
