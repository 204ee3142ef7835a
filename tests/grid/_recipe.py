"""Helpers for the grid tests: a workflow of recording sleep tasks, a site configuration, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

SHEAF = str(Path(sys.executable).parent / "sheaf")

TASK = """#!/bin/sh
# records "<task> <site>" once it has run to the end; events.log: "+task" at start, "-task" at end
echo "+$1" >> "{events}"
sleep "$2"
echo "$1 $SheafSite" >> "{log}"
echo "-$1" >> "{events}"
"""


def workflow_head(name: str, script: Path) -> str:
    """A Pegasus 5 workflow's start: its name, the transformation ``task`` (``script``) and the local
    site inline, up to ``jobs:``."""
    return f"""pegasus: 5.0.4
name: {name}
transformationCatalog:
  pegasus: 5.0.4
  transformations:
  - name: task
    sites:
    - {{name: local, pfn: {script}, type: installed}}
siteCatalog:
  pegasus: 5.0.4
  sites:
  - {{name: local, directories: []}}
jobs:
"""


def workflow(root: Path, tasks: int, seconds: float, chain: bool = False) -> Path:
    """``tasks`` independent (or chained) tasks running task.sh, which logs each finished task."""
    script = root / "task.sh"
    script.write_text(TASK.format(log=root / "ran.log", events=root / "events.log"))
    script.chmod(0o755)
    head = workflow_head("sleepy", script)
    job = '- {{type: job, name: task, id: ID{0:04d}, arguments: ["ID{0:04d}", "{1}"], uses: []}}\n'
    links = range(tasks - 1) if chain else range(0)
    deps = "".join(f"- {{id: ID{i:04d}, children: [ID{i + 1:04d}]}}\n" for i in links)
    path = root / "wf.yml"
    path.write_text(head + "".join(job.format(i, seconds) for i in range(tasks))
                    + ("jobDependencies:\n" + deps if deps else "jobDependencies: []\n"))
    return path


def env(root: Path) -> dict[str, str]:
    return {**os.environ, "SHEAF_STATE_DIR": str(root / "state")}


def sheaf(root: Path, *args: str, check: bool = True,
          timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], cwd=root, env=env(root), capture_output=True, text=True,
                          check=check, timeout=timeout)


def prepare(root: Path, sites: str, tasks: int, size: int, seconds: float = 0.1, chain: bool = False) -> Path:
    """Advertise the sites, plan the workflow into groups; the submit directory."""
    (root / "site-config.yml").write_text(sites)
    workflow(root, tasks, seconds, chain)
    sheaf(root, "advertise", "--site-config", "site-config.yml", "--group-size", str(size))
    sheaf(root, "plan", "wf.yml", "--dir", "out", "--relative-dir", "run", "-s", "local",
          "--group-size", str(size))
    return root / "out" / "run"


def ran(root: Path) -> Counter[str]:
    """How many times each task ran to the end, by task id."""
    path = root / "ran.log"
    lines = path.read_text().split("\n") if path.exists() else []
    return Counter(line.split()[0] for line in lines if line.strip())


def sites_used(root: Path) -> set[str]:
    path = root / "ran.log"
    return {line.split()[1] for line in path.read_text().split("\n") if len(line.split()) > 1}


def most_at_once(root: Path) -> int:
    """The most tasks that were running at the same moment (from events.log)."""
    now = peak = 0
    for line in (root / "events.log").read_text().split():
        now += 1 if line.startswith("+") else -1
        peak = max(peak, now)
    return peak
