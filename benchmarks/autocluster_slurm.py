"""Automatic clustering for real, on the Slurm test cluster: makespans and ``sbatch`` calls.

For each WfCommons trace given, each task a real ``sleep`` of its recorded runtime times ``--scale``
(``predict_accuracy.runnable``), on the tests' private Slurm cluster (``tests/slurm_cluster.py``:
munged, slurmctld and slurmd on this machine, one node of its CPUs), this script

1. plans the trace unclustered and runs it (``sheaf run --backend slurm``), then calibrates the
   Slurm model on that run (``sheaf calibrate``, into a model file of this invocation's own);
2. plans it with each uniform ``clusters.size`` of the sweep (1, 2, 5, 10, 20, 50, 100, 200) and
   predicts each under the calibrated model, in simulation;
3. runs, for real, the sweep's best size and ``sheaf plan --cluster auto --backend slurm --slots N``
   (the calibrated model is the one ``auto`` finds).

Each run's makespan is ``sheaf statistics``' wall time; its ``sbatch`` calls are the jobs Slurm
accepted during it (``sdiag``'s "Jobs submitted", one per ``sbatch``).  It prints them per plan,
the share of the best size's reduction that ``auto`` reaches (target >= 95%), ``auto`` over
unclustered (target <= 1.02) and how many times fewer ``sbatch`` calls ``auto`` makes for the
trace's tasks under a minute (target >= 10x).  Without root or Slurm it says why and stops.

Usage::

    .venv/bin/python benchmarks/autocluster_slurm.py TRACE.json... [--scale 1.0] [--sizes 1 2 5 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the Slurm test cluster
from predict_accuracy import BIN, runnable, sheaf, sleepers

SWEEP = (1, 2, 5, 10, 20, 50, 100, 200)


def submitted(cluster: Any) -> int:
    """The jobs Slurm has accepted since it started (``sdiag``)."""
    found = re.search(r"Jobs submitted:\s*(\d+)", cluster.run("sdiag").stdout)
    if found is None:
        raise SystemExit("sdiag printed no 'Jobs submitted' line")
    return int(found.group(1))


def plan(work: str, env: dict[str, str], name: str, *options: str) -> str:
    out = sheaf("plan", "trace.json", "--dir", "runs", "--relative-dir", name, "-q", *options, env=env,
                cwd=work)
    return out.splitlines()[0].removeprefix("submit directory: ")


def run(cluster: Any, work: str, env: dict[str, str], directory: str) -> tuple[float, int]:
    """(measured makespan, sbatch calls) of a real run of ``directory`` on the cluster."""
    before = submitted(cluster)
    sheaf("run", directory, "--backend", "slurm", env=env, cwd=work)
    calls = submitted(cluster) - before
    stats = json.loads(sheaf("statistics", directory, "--json", env=env, cwd=work))
    return float(stats["wall_time"]), calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--scale", type=float, default=1.0, help="task runtimes times this (default 1)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SWEEP),
                        help="the uniform clusters.size values of the sweep (default 1 2 5 10 20 50 100 200)")
    args = parser.parse_args()
    import slurm_cluster

    reason = slurm_cluster.unavailable()
    if reason is not None:
        print(f"Slurm: skipped: {reason}")
        return
    rows = []
    with slurm_cluster.cluster_running() as cluster, \
            tempfile.TemporaryDirectory(prefix="autocluster-slurm-") as tmp:
        slots = str(cluster.cpus)
        print(f"{'trace':<38} {'plan':<12} {'jobs':>5} {'sbatch':>6} {'predicted s':>11} {'measured s':>10}")
        for path in args.traces:
            trace = json.loads(Path(path).read_text())
            name = Path(path).stem
            work = os.path.join(tmp, name)
            os.makedirs(work)
            ready = runnable(trace, args.scale)
            Path(work, "trace.json").write_text(json.dumps(ready))
            env = {**os.environ, **cluster.env, "SHEAF_OVERHEADS": os.path.join(work, "overheads.json"),
                   "PATH": f"{sleepers(ready, work)}:{BIN}:{os.environ.get('PATH', '')}"}
            short = sum(1 for t in ready["workflow"]["execution"]["tasks"] if t["runtimeInSeconds"] < 60)

            def predicted(directory: str, env: dict[str, str] = env, work: str = work) -> dict[str, Any]:
                got: dict[str, Any] = json.loads(sheaf("predict", directory, "--slots", slots, "--backend",
                                                       "slurm", "--no-history", "--json", env=env, cwd=work))
                return got

            def show(label: str, got: dict[str, Any], measured: float, calls: int, name: str = name) -> None:
                print(f"{name:<38} {label:<12} {got['jobs']:5d} {calls:6d} {got['makespan_s']:11.1f} "
                      f"{measured:10.1f}", flush=True)

            none_dir = plan(work, env, "none")
            none_s, none_calls = run(cluster, work, env, none_dir)
            sheaf("calibrate", none_dir, "--backend", "slurm", env=env, cwd=work)
            show("none", predicted(none_dir), none_s, none_calls)
            sweep = {size: predicted(plan(work, env, f"size-{size}", "--cluster", "horizontal",
                                          "-D", f"pegasus.clusters.size={size}")) for size in args.sizes}
            best = min(sweep, key=lambda size: sweep[size]["makespan_s"])
            best_dir = os.path.join(os.path.dirname(none_dir), f"size-{best}")
            best_s, best_calls = run(cluster, work, env, best_dir)
            show(f"size {best}", sweep[best], best_s, best_calls)
            auto_dir = plan(work, env, "auto", "--cluster", "auto", "--backend", "slurm", "--slots", slots)
            auto_s, auto_calls = run(cluster, work, env, auto_dir)
            show("auto", predicted(auto_dir), auto_s, auto_calls)
            rows.append((name, none_s, best_s, auto_s, none_calls, auto_calls, short))
    if not rows:
        return
    print(f"\n{'trace':<38} {'of best cut':>11} {'auto/none':>9} {'sbatch cut':>10}  (tasks under a minute)")
    for name, none_s, best_s, auto_s, none_calls, auto_calls, short in rows:
        gain = none_s - best_s
        share = (none_s - auto_s) / gain if gain > 0 else 1.0
        cut = none_calls / max(auto_calls, 1)
        print(f"{name:<38} {share:11.1%} {auto_s / none_s:9.3f} {cut:9.1f}x  ({short})")


if __name__ == "__main__":
    main()
