"""A Slurm site among the grid sites: groups matched to it run their nodes as Slurm batch jobs on the
private test cluster (``tests/slurm_cluster.py``), the others on a local pool, in one outer run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.backends.conftest import slurm  # noqa: F401  (the module's cluster fixture)
from tests.grid._recipe import SHEAF, env, prepare

from slurm_cluster import Cluster

SITES = """\
sites:
  aslurm: {max_queued: 3, backend: slurm}
  one: {max_queued: 3, backend: local, slots: 1}
"""

# records "<task> <site> slurm|local": a task run by the Slurm batch job's wrapper has the batch
# script (slurmd's copy, "slurm_script") for its parent
TASK = """#!/bin/sh
sleep "$2"
case "$(tr '\\0' ' ' < /proc/$PPID/cmdline)" in *slurm_script*) how=slurm ;; *) how=local ;; esac
echo "$1 $SheafSite $how" >> "{log}"
"""


def test_groups_matched_to_a_slurm_site_run_there(slurm: Cluster, tmp_path: Path) -> None:  # noqa: F811
    run = prepare(tmp_path, SITES, tasks=6, size=3)
    (tmp_path / "task.sh").write_text(TASK.format(log=tmp_path / "ran.log"))
    environment = {**env(tmp_path), **slurm.env, "SHEAF_SLURM_SQUEUE_INTERVAL": "1",
                   "SHEAF_SLURM_VANISH_GRACE": "3"}
    result = subprocess.run([SHEAF, "run", str(run), "--negotiation-interval", "0.2"], cwd=tmp_path,
                            env=environment, capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    log = (run / "grid" / "negotiator.log").read_text()
    assert "matched group_0001 to aslurm-Site" in log and "matched group_0002 to one-Site" in log
    rows = [line.split() for line in (tmp_path / "ran.log").read_text().splitlines()]
    assert sorted(task for task, _, _ in rows) == [f"ID{i:04d}" for i in range(6)]
    at_slurm = [row for row in rows if row[1] == "aslurm"]
    at_one = [row for row in rows if row[1] == "one"]
    assert len(at_slurm) == len(at_one) == 3
    assert {how for _, _, how in at_slurm} == {"slurm"}  # each a Slurm batch job ...
    assert {how for _, _, how in at_one} == {"local"}  # ... and none of the local pool's
    # the Slurm backend's own records: one spec per node of the group (its tasks and its create-dir)
    specs = list((run / "sheaf-slurm" / "specs").iterdir())
    assert len(specs) == 4, specs
    slurm.wait_empty()
