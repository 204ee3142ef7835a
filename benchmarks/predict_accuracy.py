"""Prediction accuracy: ``sheaf predict`` against real runs of real workflows on the local backend.

For each WfCommons trace given (WfFormat 1.4/1.5 JSON; e.g. the WfInstances collection's), this script

1. makes it runnable here: every task sleeps for its recorded ``runtimeInSeconds`` times a scale
   factor (chosen so that the trace's work spread over the largest slot count lasts about
   ``--seconds``), with the same runtime in the trace, and its files dropped (the DAG is kept); its
   program keeps its name, a link to ``sleep`` on the PATH the run sees (``runnable``, ``sleepers``);
2. plans it, unclustered (``sheaf plan``), into a fresh base directory;
3. for each slot count (``--slots``; a pool of that many slots: sleeping tasks use no CPU, so a
   2-CPU machine runs 8 of them at once): predicts the run (``sheaf predict --slots N``), runs it
   (``sheaf run --pool-config``, ``NUM_CPUS = N``), and reads the measured wall time
   (``sheaf statistics``);
4. calibrates the local backend's model on the first run of each trace (``sheaf calibrate``, into a
   model file of this invocation's own: ``SHEAF_OVERHEADS``) and predicts every later run with it.

It prints, per run, the predicted makespan, its p10-p90 interval, the measured wall time and the
error, and at the end the median absolute error of the calibrated predictions (target: <= 5% on the
local backend, <= 15% on Slurm) and the share of runs whose measured time lies in the interval
(target: >= 80%).  The first run of each trace is the calibration run: shown, not counted.

With ``--backend slurm`` the runs go to the tests' private Slurm cluster (``tests/slurm_cluster.py``:
munged, slurmctld and slurmd on this machine; it needs root and Debian's slurm-wlm, else the script
says why and stops), one node of this machine's CPUs: the slot count is that, and each trace is run
``--repeat`` times (the first calibrates).  With ``--backend dask`` the runs go to a Dask
LocalCluster each run starts (``sheaf run --backend dask``), one thread per CPU, ``--repeat`` times.
``--recipe NAME:TASKS`` adds a larger synthetic trace made with the ``wfcommons`` package's recipe of
that workflow (``pip install -e '.[bench]'``; seeded, so the same trace every time).

Usage::

    .venv/bin/python benchmarks/predict_accuracy.py TRACE.json... [--slots 2 4 8] [--seconds 10]
    .venv/bin/python benchmarks/predict_accuracy.py TRACE.json... --backend slurm [--repeat 3]
    .venv/bin/python benchmarks/predict_accuracy.py --recipe montage:1000 --recipe seismology:2000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent


def sheaf(*args: str, env: dict[str, str], cwd: str) -> str:
    done = subprocess.run([str(BIN / "sheaf"), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"sheaf {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def runnable(trace: dict[str, Any], scale: float) -> dict[str, Any]:
    """The trace with every task a ``sleep`` of its runtime times ``scale`` and no files (step 1)."""
    workflow = trace["workflow"]
    if "specification" in workflow:  # WfFormat 1.5
        spec_tasks = workflow["specification"]["tasks"]
        runs = {t["id"]: t for t in workflow["execution"]["tasks"]}
    else:  # 1.4: one list of tasks with their runtimes
        spec_tasks = workflow["tasks"]
        runs = {t.get("id", t.get("name")): t for t in spec_tasks}
    tasks, executed = [], []
    for task in spec_tasks:
        tid = task.get("id", task.get("name"))
        record = runs.get(tid, {})
        seconds = round(float(record.get("runtimeInSeconds", record.get("runtime", 0))) * scale, 3)
        program = os.path.basename(str((record.get("command") or {}).get("program") or task.get("name")))
        tasks.append({"name": task.get("name", tid), "id": tid, "parents": task.get("parents", []),
                      "children": task.get("children", []), "inputFiles": [], "outputFiles": []})
        executed.append({"id": tid, "runtimeInSeconds": seconds,
                         "command": {"program": program, "arguments": [f"{seconds:g}"]}})
    return {"name": trace.get("name", "trace"), "schemaVersion": "1.5",
            "workflow": {"specification": {"tasks": tasks, "files": []},
                         "execution": {"makespanInSeconds": 0, "executedAt": "2026-01-01T00:00:00Z",
                                       "tasks": executed}}}


def sleepers(trace: dict[str, Any], directory: str) -> str:
    """A directory of links to ``sleep``, one per program the runnable trace names."""
    bin_dir = os.path.join(directory, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    sleep = shutil.which("sleep") or "/bin/sleep"
    for task in trace["workflow"]["execution"]["tasks"]:
        link = os.path.join(bin_dir, task["command"]["program"])
        if not os.path.exists(link):
            os.symlink(sleep, link)
    return bin_dir


RECIPES = ("blast", "bwa", "cycles", "epigenomics", "genome", "montage", "rnaseq", "seismology", "soykb",
           "srasearch")


def recipe_trace(spec: str, directory: str, seed: int = 1) -> str:
    """A synthetic trace of ``NAME:TASKS`` made with the ``wfcommons`` package's recipe of that
    workflow (``pip install -e '.[bench]'``), written as WfFormat JSON into ``directory``."""
    name, _, count = spec.partition(":")
    if name not in RECIPES or not count.isdigit():
        raise SystemExit(f"--recipe {spec}: expected NAME:TASKS, NAME one of {', '.join(RECIPES)}")
    try:
        import wfcommons
        from wfcommons.wfchef import recipes
    except ImportError:
        raise SystemExit("--recipe needs the wfcommons package: pip install -e '.[bench]'") from None
    import random

    import numpy

    random.seed(seed)
    numpy.random.seed(seed)  # the recipes draw from numpy's global generator
    recipe = getattr(recipes, f"{name.capitalize()}Recipe").from_num_tasks(num_tasks=int(count))
    path = os.path.join(directory, f"{name}-{count}.json")
    wfcommons.WorkflowGenerator(recipe).build_workflow().write_json(Path(path))
    return path


def total_runtime(trace: dict[str, Any]) -> float:
    workflow = trace["workflow"]
    tasks = workflow["execution"]["tasks"] if "execution" in workflow else workflow["tasks"]
    return sum(float(t.get("runtimeInSeconds", t.get("runtime", 0))) for t in tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--recipe", action="append", default=[], metavar="NAME:TASKS",
                        help="also a trace of TASKS tasks made with wfcommons' recipe NAME (repeatable)")
    parser.add_argument("--slots", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="the work of a trace over the largest slot count, after scaling (default 10)")
    parser.add_argument("--backend", choices=("local", "slurm", "dask"), default="local")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each trace on Slurm or Dask (default 3)")
    args = parser.parse_args()
    made = tempfile.mkdtemp(prefix="recipes-")
    try:
        args.traces = [*args.traces, *(recipe_trace(spec, made) for spec in args.recipe)]
        if not args.traces:
            parser.error("no trace: name TRACE files or --recipe NAME:TASKS")
        run_on(args)
    finally:
        shutil.rmtree(made, ignore_errors=True)


def run_on(args: argparse.Namespace) -> None:
    if args.backend == "local":
        measure(args, {}, ["--pool-config={pool}"])
        return
    if args.backend == "dask":  # a LocalCluster the run starts: one thread per CPU
        args.slots = [os.cpu_count() or 1] * max(2, args.repeat)
        measure(args, {}, ["--backend", "dask"])
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the Slurm test cluster
    import slurm_cluster

    reason = slurm_cluster.unavailable()
    if reason is not None:
        print(f"Slurm: skipped: {reason}")
        return
    with slurm_cluster.cluster_running() as cluster:
        args.slots = [cluster.cpus] * max(2, args.repeat)
        measure(args, cluster.env, ["--backend", "slurm"])


def measure(args: argparse.Namespace, cluster_env: dict[str, str], run_options: list[str]) -> None:
    """Steps 1-4 for every trace (module docstring), the runs made with ``run_options``."""
    rows: list[tuple[str, int, float, float, float, float, bool]] = []
    with tempfile.TemporaryDirectory(prefix="predict-accuracy-") as tmp:
        base_env = {**os.environ, **cluster_env, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
        print(f"{'trace':<40} {'slots':>5} {'predicted s':>11} {'p10':>7} {'p90':>7} {'measured s':>10} "
              f"{'error':>7}  in interval")
        for path in args.traces:
            trace = json.loads(Path(path).read_text())
            scale = args.seconds * max(args.slots) / max(total_runtime(trace), 1e-9)
            name = Path(path).stem
            work = os.path.join(tmp, name)
            os.makedirs(work)
            ready = runnable(trace, scale)
            Path(work, "trace.json").write_text(json.dumps(ready))
            env = {**base_env, "SHEAF_OVERHEADS": os.path.join(work, "overheads.json"),  # this trace's own
                   "PATH": f"{sleepers(ready, work)}:{base_env['PATH']}"}
            calibrated = False
            for number, slots in enumerate(args.slots):
                pool = Path(work, f"pool-{slots}.conf")
                pool.write_text(f"NUM_CPUS = {slots}\n")
                planned = sheaf("plan", "trace.json", "--dir", "runs", "--relative-dir", f"r{number}", "-q",
                                env=env, cwd=work)
                directory = planned.splitlines()[0].removeprefix("submit directory: ")
                got = json.loads(sheaf("predict", directory, "--slots", str(slots), "--no-history",
                                       "--backend", args.backend, "--json", env=env, cwd=work))
                sheaf("run", directory, *(option.format(pool=pool) for option in run_options), env=env,
                      cwd=work)
                stats = json.loads(sheaf("statistics", directory, "--json", env=env, cwd=work))
                measured = stats["wall_time"]
                error = got["makespan_s"] / measured - 1
                inside = got["low_s"] <= measured <= got["high_s"]
                label = f"{name} (x{scale:.3g})" + ("" if calibrated else " [calibration run]")
                print(f"{label:<40} {slots:5d} {got['makespan_s']:11.2f} {got['low_s']:7.2f} "
                      f"{got['high_s']:7.2f} {measured:10.2f} {error:+7.1%}  {'yes' if inside else 'no'}",
                      flush=True)
                if calibrated:
                    rows.append((name, slots, got["makespan_s"], got["low_s"], got["high_s"], measured,
                                 inside))
                else:
                    sheaf("calibrate", directory, "--backend", args.backend, env=env, cwd=work)
                    fitted = json.loads(Path(env["SHEAF_OVERHEADS"]).read_text())["backends"][args.backend]
                    print(f"  calibrated {args.backend} model: {json.dumps(fitted, sort_keys=True)}",
                          flush=True)
                    calibrated = True
    if rows:
        target = "5%" if args.backend == "local" else "15%"
        errors = [abs(predicted / measured - 1) for _, _, predicted, _, _, measured, _ in rows]
        inside = sum(row[6] for row in rows) / len(rows)
        print(f"\ncalibrated predictions: {len(rows)}; median absolute error {statistics.median(errors):.1%} "
              f"(target <= {target}); measured inside p10-p90 in {inside:.0%} (target >= 80%)")


if __name__ == "__main__":
    main()
