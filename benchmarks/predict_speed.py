"""Prediction speed: ``sheaf.app.predict`` of a 10^4- and a 10^5-job plan.

For each size, a Montage-shaped workflow (``load.py``'s ``montage``, runtime profiles on its wide
levels) is written as Pegasus YAML and planned unclustered into a submit directory; then, in the
same run, this script times

- the baseline: reading what any prediction must read -- the DAG's shape (``sheaf.condor.parse_dag``
  with ``read_vars=False``) and ``plan.json`` (a ``msgspec`` decode of the whole file);
- ``sheaf.app.predict`` of the directory (read, simulate every replicate, summarise), with the
  history of earlier runs off,

and prints both and their ratio, beside the targets: 10^4 jobs in <= 1 s, 10^5 in <= 5 s.

Usage::

    .venv/bin/python benchmarks/predict_speed.py                 # 10^4 and 10^5
    .venv/bin/python benchmarks/predict_speed.py --sizes 2000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import montage

from sheaf import app
from sheaf.condor import parse_dag
from sheaf.engine import find_dag
from sheaf.formats import write_workflow
from sheaf.model import Workflow

TARGETS = {10_000: 1.0, 100_000: 5.0}


def _optional_inputs(wf: Workflow) -> Workflow:
    """``wf`` with the inputs no job makes optional: given no replica, Pegasus drops them from the plan
    (a required input needs one), so the plan has no data to stage in."""
    made = {u.lfn for job in wf.jobs.values() for u in job.uses if u.type != "input"}
    for jid, job in wf.jobs.items():
        wf.jobs[jid] = dataclasses.replace(job, uses=tuple(
            dataclasses.replace(u, optional=True) if u.type == "input" and u.lfn not in made else u
            for u in job.uses))
    return wf


def _best_of(rounds: int, work: object) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3, help="best of this many (default 3)")
    parser.add_argument("--slots", type=int, default=64)
    args = parser.parse_args()
    print(f"{'jobs':>8} {'read s':>8} {'predict s':>10} {'ratio':>6} {'target s':>9} {'replicates':>10}  "
          f"predicted makespan")
    with tempfile.TemporaryDirectory(prefix="predict-speed-") as tmp:
        for size in args.sizes:
            path = os.path.join(tmp, f"montage-{size}.yml")
            write_workflow(_optional_inputs(montage(size)), path)
            planned = app.plan(app.PlanRequest(path, base=tmp, relative_dir=f"plan-{size}",
                                               sites=("condorpool",), defines=("pegasus.mode=development",)))
            directory = planned.directory

            def read(directory: str = directory) -> None:
                parse_dag(find_dag(directory), read_vars=False)
                msgspec.json.decode(Path(directory, "plan.json").read_bytes())

            options = app.PredictOptions(slots=args.slots, backend="slurm", history=False)
            result = app.predict(directory, options)
            read_s = _best_of(args.rounds, read)
            predict_s = _best_of(args.rounds, lambda d=directory, o=options: app.predict(d, o))
            jobs = result.prediction.jobs
            target = TARGETS.get(size)
            verdict = "" if target is None else ("  ok" if predict_s <= target else "  -> over target")
            print(f"{jobs:8d} {read_s:8.3f} {predict_s:10.3f} {predict_s / read_s:6.2f} "
                  f"{target if target is not None else '-':>9} {result.prediction.replicates:10d}  "
                  f"{result.prediction.makespan_s:.0f} s{verdict}")


if __name__ == "__main__":
    main()
