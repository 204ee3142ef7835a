"""The cleanup check of ``plan_scaling.py``: one real run of an N-job workflow with full data staging.

The workflow: ``N / 10`` chains of 10 ``/bin/cp`` jobs; the first job of a chain copies the chain's
raw input (staged in from ``--input-dir``), each next job copies its predecessor's file, and the last
job's file is staged out to the output directory.  Planned with ``sheaf plan --output-dir OUT
--cleanup inplace`` (stage-in, stage-out, inplace cleanup, create-dir jobs) and run with
``sheaf run``.  Afterwards every output must be in OUT with the chain's input text, no job may have
failed (no job ever found an input missing), and the site's scratch directory must hold no file at
all: every staged-in copy and every intermediate was removed after its last user, and the outputs
after their stage-out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
CHAIN = 10

__all__ = ["cleanup_run"]


def _workflow(root: Path, jobs: int) -> Path:
    chains = max(1, jobs // CHAIN)
    inputs = root / "inputs"
    inputs.mkdir()
    lines = ["pegasus: 5.0.4", "name: chains",
             "siteCatalog:", "  pegasus: 5.0.4", "  sites:", "  - name: local", "    directories:",
             "    - type: sharedScratch", f"      path: {root / 'scratch'}", "      fileServers:",
             f"      - url: file://{root / 'scratch'}", "        operation: all",
             "transformationCatalog:", "  pegasus: 5.0.4", "  transformations:", "  - name: cp",
             "    sites:", "    - {name: local, pfn: /bin/cp, type: installed}", "jobs:"]
    for c in range(chains):
        (inputs / f"in{c}").write_text(f"chain {c}\n")
        previous = f"in{c}"
        for k in range(CHAIN):
            made = f"f{c}_{k}"
            last = k == CHAIN - 1
            lines.append(f"- {{type: job, name: cp, id: J{c:05d}_{k}, arguments: [{previous}, {made}], "
                         f"uses: [{{lfn: {previous}, type: input}}, {{lfn: {made}, type: output, "
                         f"stageOut: {'true' if last else 'false'}, registerReplica: false}}]}}")
            previous = made
    lines.append("jobDependencies: []")
    path = root / "chains.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def cleanup_run(root: Path, jobs: int) -> str:
    """Plan and run the workflow under ``root``; one line saying what was checked, and how long it took."""
    wf = _workflow(root, jobs)
    out = root / "out"
    plan = [str(BIN / "sheaf"), "plan", str(wf), "--dir", str(root), "--relative-dir", "run", "-s", "local",
            "--input-dir", str(root / "inputs"), "--output-dir", str(out), "--cleanup", "inplace", "-q"]
    subprocess.run(plan, check=True, stdout=subprocess.DEVNULL, cwd=root)
    start = time.perf_counter()
    done = subprocess.run([str(BIN / "sheaf"), "run", str(root / "run")], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "SHEAF_EVENTS": "0"}, check=False)
    seconds = time.perf_counter() - start
    chains = max(1, jobs // CHAIN)
    delivered = sum(1 for c in range(chains)
                    if (out / f"f{c}_{CHAIN - 1}").is_file()
                    and (out / f"f{c}_{CHAIN - 1}").read_text() == f"chain {c}\n")
    left = [os.path.join(d, n) for d, _, names in os.walk(root / "scratch") for n in names]
    nodes = sum(1 for line in (root / "run" / "jobstate.log").read_text().splitlines()
                if " JOB_SUCCESS " in line or " POST_SCRIPT_SUCCESS " in line)
    ok = done.returncode == 0 and delivered == chains and not left
    verdict = "ok" if ok else "FAILED"
    detail = "" if ok else f" (exit {done.returncode}: {done.stderr.strip()[-300:]}; left: {left[:5]})"
    return (f"cleanup run: {chains * CHAIN} cp jobs in {chains} chains ran in {seconds:.1f} s "
            f"({nodes} node successes recorded); outputs delivered {delivered}/{chains}; files left in "
            f"scratch {len(left)} -> {verdict}{detail}")
