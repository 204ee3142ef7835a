"""Automatic clustering against no clustering and the best uniform ``clusters.size``, in simulation.

For each WfCommons trace given and each slot count, under a grid-like overhead model (every job
costs ``--overhead`` seconds of its slot, 60 by default), this script plans the trace

- unclustered;
- with ``--cluster horizontal`` and one ``clusters.size`` for every transformation, for each size
  of the sweep (1, 2, 5, 10, 20, 50, 100, 200);
- with ``--cluster auto`` under the same model and slots,

predicts each plan's makespan (``sheaf.app.predict``, the same model and slots; the runtimes are
the trace's) and prints them, the jobs each plan runs, and two ratios: the share of the best
sweep's reduction that ``auto`` reaches (target >= 95%) and ``auto`` over unclustered (target
<= 1.02).

Usage::

    .venv/bin/python benchmarks/autocluster.py TRACE.json... [--slots 16 64 256] [--overhead 60]
    .venv/bin/python benchmarks/autocluster.py --recipe montage:2000 --recipe seismology:5000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from predict_accuracy import recipe_trace, runnable

from sheaf import app

SWEEP = (1, 2, 5, 10, 20, 50, 100, 200)


def _plan(path: str, base: str, name: str, clustering: tuple[str, ...], defines: tuple[str, ...] = (),
          **auto: object) -> str:
    request = app.PlanRequest(path, base=base, relative_dir=name, clustering=clustering, defines=defines,
                              **auto)  # type: ignore[arg-type]
    return app.plan(request).directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--recipe", action="append", default=[], metavar="NAME:TASKS",
                        help="also a trace of TASKS tasks made with wfcommons' recipe NAME (repeatable)")
    parser.add_argument("--slots", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--overhead", type=float, default=60.0)
    args = parser.parse_args()
    print(f"{'trace':<38} {'slots':>5} {'unclustered s':>13} {'best size':>9} {'best s':>9} {'auto s':>9} "
          f"{'jobs':>11} {'of best cut':>11} {'auto/none':>9}")
    shares: list[float] = []
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="autocluster-") as tmp:
        os.environ["SHEAF_OVERHEADS"] = os.path.join(tmp, "none.json")  # the model is --overhead's alone
        traces = [*args.traces, *(recipe_trace(spec, tmp) for spec in args.recipe)]
        if not traces:
            parser.error("no trace: name TRACE files or --recipe NAME:TASKS")
        for trace in traces:
            name = Path(trace).stem
            path = os.path.join(tmp, f"{name}.json")
            Path(path).write_text(json.dumps(runnable(json.loads(Path(trace).read_text()), 1.0)))
            for slots in args.slots:
                options = app.PredictOptions(slots=slots, overhead=args.overhead, history=False, replicates=0)

                def predict(directory: str, options: app.PredictOptions = options) -> tuple[float, int]:
                    got = app.predict(directory, options).prediction
                    return got.makespan_s, got.jobs

                none, none_jobs = predict(_plan(path, tmp, f"{name}-{slots}-none", ()))
                sweep = {size: predict(_plan(path, tmp, f"{name}-{slots}-{size}", ("horizontal",),
                                             (f"pegasus.clusters.size={size}",))) for size in SWEEP}
                best_size = min(sweep, key=lambda size: sweep[size][0])
                auto, auto_jobs = predict(_plan(path, tmp, f"{name}-{slots}-auto", ("auto",), slots=slots,
                                                overhead=args.overhead))
                gain = none - sweep[best_size][0]
                share = (none - auto) / gain if gain > 0 else 1.0
                shares.append(share)
                worst = max(worst, auto / none)
                print(f"{name:<38} {slots:5d} {none:13.0f} {best_size:9d} {sweep[best_size][0]:9.0f} "
                      f"{auto:9.0f} {auto_jobs:5d}/{none_jobs:<5d} {share:11.1%} {auto / none:9.3f}",
                      flush=True)
    print(f"\nauto reaches {min(shares):.1%} of the best sweep's reduction at worst (target >= 95%); "
          f"auto / unclustered at worst {worst:.3f} (target <= 1.02)")


if __name__ == "__main__":
    main()
