"""Backing out of a site that dies midway through a workflow whose outputs are staged out: what was
delivered stays delivered (its stage-out jobs do not run again), the intermediates left on the dead
site that the rest of the chain needs are recomputed, and every output reaches the output site."""

from __future__ import annotations

import re
from pathlib import Path

from tests.grid._recipe import sheaf, workflow_head

TASK = """#!/bin/sh
# task ID [input]: reads its input (the previous step's output), writes ID.out
if [ -n "$2" ]; then cat "$2" > /dev/null || exit 3; fi
echo "$1" > "$1.out"
echo "$1 $SheafSite" >> "{log}"
"""

SITES = """sites:
  aflaky: {max_queued: 9, backend: local, slots: 1, dies_after: 4}
  good: {max_queued: 9, backend: local, slots: 1}
"""


def _chain(root: Path, steps: int) -> None:
    """A chain of ``steps`` tasks passing files, every output staged out."""
    (root / "task.sh").write_text(TASK.format(log=root / "ran.log"))
    (root / "task.sh").chmod(0o755)
    jobs = []
    for i in range(steps):
        uses = [f"{{lfn: ID{i:04d}.out, type: output, stageOut: true}}"]
        args = [f'"ID{i:04d}"']
        if i:
            uses.append(f"{{lfn: ID{i - 1:04d}.out, type: input}}")
            args.append(f'"ID{i - 1:04d}.out"')
        jobs.append(f"- {{type: job, name: task, id: ID{i:04d}, arguments: [{', '.join(args)}], "
                    f"uses: [{', '.join(uses)}]}}\n")
    text = workflow_head("staged", root / "task.sh") + "".join(jobs) + "jobDependencies: []\n"
    (root / "wf.yml").write_text(text)


def test_delivered_outputs_survive_a_dead_site_and_only_lost_intermediates_rerun(tmp_path: Path) -> None:
    _chain(tmp_path, 4)
    (tmp_path / "site-config.yml").write_text(SITES)
    sheaf(tmp_path, "advertise", "--site-config", "site-config.yml", "--group-size", "4")
    sheaf(tmp_path, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local",
          "--output-dir", str(tmp_path / "delivered"), "--group-size", "4")
    run = tmp_path / "out" / "run"
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "2",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    log = (run / "grid" / "negotiator.log").read_text()
    assert "site aflaky-Site is dead" in log
    restart = re.search(r"restarts from \S+ \((\d+) nodes kept done; \d+ done nodes run again "
                        r"\(outputs lost on a dead site\): ([^)]*)\)", log)
    assert restart is not None, log
    again = restart.group(2).split()
    assert not [node for node in again if node.startswith(("stage_out", "register"))]  # delivered stays
    assert int(restart.group(1)) >= 1  # at least the first step's stage-out, done before the site died
    lines = (tmp_path / "ran.log").read_text().splitlines()
    at_flaky = [line.split()[0] for line in lines if line.endswith(" aflaky")]
    at_good = [line.split()[0] for line in lines if line.endswith(" good")]
    # the steps done at the dead site run again, exactly those the rest of the chain needs: all of
    # them, as each step reads the one before; then the rest of the chain
    assert at_flaky == [f"ID{i:04d}" for i in range(len(at_flaky))] and len(at_flaky) >= 1
    assert sorted(f"task_{task}" for task in at_flaky) == sorted(n for n in again if n.startswith("task_"))
    assert at_good == [f"ID{i:04d}" for i in range(4)]
    assert sorted(p.name for p in (tmp_path / "delivered").iterdir()) == [f"ID{i:04d}.out" for i in range(4)]
    assert all((tmp_path / "delivered" / f"ID{i:04d}.out").read_text() == f"ID{i:04d}\n" for i in range(4))
