"""Plan benchmark: load + plan + write a 10^4..10^6-job workflow, clustered and unclustered.

For each size this script

1. builds a workflow in the shape of a real one (``load.py``'s ``montage``: project -> pairwise
   diff -> one fan-in fit -> background -> one fan-in add, the wide joins on which the reference
   planner's level computation goes quadratic) and writes it as Pegasus 5.0 YAML;
2. in a *fresh subprocess* per mode (so peak RSS is that run's alone) reads it
   (``sheaf.formats.read_workflow``), plans it (``sheaf.planner.plan``, site ``condorpool``) and
   writes the executable workflow (``sheaf.codegen.write_plan``: DAG, submit files, ``.in`` files,
   ``plan.json``), timing each phase (wall clock; the planner also in CPU seconds, which a busy
   shared machine does not inflate; the data pass is part of the plan, run for the directory
   written) and reporting ``ru_maxrss``.  Modes: ``clustered``
   (``--cluster horizontal`` with ``pegasus.clusters.size = 100``) and ``unclustered``;
3. times a baseline in the same run: the reference planner's level computation (a BFS that, each
   time it reaches a child, rescans the child's whole parent list), which is what makes the
   reference take 19.2 s (clustered) and 400.8 s (unclustered) at 10^5 jobs on this machine.  It runs
   up to ``--baseline-max`` jobs and is extrapolated quadratically above that (marked ``~``);
4. times the yardstick in the same run, in a fresh subprocess: ``yaml_rs.loads`` of the
   workflow file (read from disk), the floor of any YAML loading; ``total/yaml`` is load + plan +
   write over it (target: <= 2.0 for 10^5 unclustered, staged and staged-clustered jobs and 10^6
   clustered jobs, with <= 2 GB RSS);
5. compares, at each size in the same run, the data pass's full work with none of it: ``staged``
   (unclustered, every input with a replica, outputs staged out to an output directory and
   registered, ``--cleanup inplace``) against ``bare`` (the same plan with ``--cleanup none`` and no
   output site); ``staged/bare`` is their plan + write time (target: <= 1.5 at 10^5 jobs).
   ``staged-clustered`` is ``staged`` planned with ``--cluster horizontal`` (size 100); both staged
   modes have the ``total/yaml`` target of <= 2.0 at 10^5 jobs;
6. runs, unless ``--run 0``, one real workflow of ``--run`` jobs (default 10^4) with full data staging
   and inplace cleanup (``_cleanup_run``): every output delivered, no job failed, and the scratch
   directory empty afterwards -- cleanup is correct at scale, not only in the small random DAGs of
   ``tests/planner``;
7. counts the files the plan wrote: jobs share ``SUBMIT-DESCRIPTION`` blocks in the DAG
   (``sheaf.codegen._write``), so an unclustered plan writes a handful of files, not one per job; a
   seqexec cluster keeps its own ``.in``.

``load s`` includes the YAML worker process (``sheaf.formats._slice_worker``), whose CPU time is
not in ``plan cpu``.  ``cpu s`` is the CPU time of load (the worker's too) + plan + write, and
``cpu/yaml`` its ratio to ``yaml_rs``'s CPU time: on a machine other work keeps busy the wall-clock
ratio swings with that work, the CPU ratio much less (it overstates the quiet wall-clock ratio by
the load's second core).

``--rounds N`` runs every mode N times at each size, the modes interleaved round by round so that a
slow spell of the machine falls on all of them, each run beside its own yardstick, and then prints
each mode's median ``total/yaml`` with its range: one run's ratio swings with the machine, the
yardstick's included.

Usage::

    .venv/bin/python benchmarks/plan_scaling.py                        # 10^4, 10^5, 10^6
    .venv/bin/python benchmarks/plan_scaling.py --sizes 100000 --modes clustered
    .venv/bin/python benchmarks/plan_scaling.py --sizes 100000 --run 0 --baseline-max 0 \
        --modes staged staged-clustered --rounds 5
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: seconds for load + plan + write, by (jobs, mode); and the RSS ceiling at 10^6
TARGETS = {(100_000, "unclustered"): 2.0, (1_000_000, "clustered"): 2.0,  # total / yaml_rs load
           (100_000, "staged"): 2.0, (100_000, "staged-clustered"): 2.0}
RSS_TARGET_MB = 2048
DATA_TARGET = 1.5  # staged / bare, plan + write
#: the reference Java planner on this machine, 10^5 jobs: for the reader, not re-run here
REFERENCE_JAVA_S = {"clustered": 19.2, "unclustered": 400.8}

_WRITE_CHILD = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from load import SHAPES
from sheaf.formats import write_workflow
wf = SHAPES["montage"](int(sys.argv[1]))
write_workflow(wf, sys.argv[2])
print(len(wf))
"""

_PLAN_CHILD = """
import os, resource, sys, time
def cpu():  # this process's CPU and its reaped children's (the YAML worker)
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
from sheaf.formats import read_workflow
from sheaf.model import (Properties, Site, SiteCatalog, Transformation, TransformationCatalog,
                         TransformationSite)
from sheaf.planner import DataOptions, plan
path, mode, out = sys.argv[1:4]
# the data pass: "staged" = full staging to an output directory, inplace cleanup and registration;
# "bare" = --cleanup none and no output site; clustered and unclustered plan with the defaults (inplace)
# the data pass runs in plan(), for the directory written (as sheaf plan runs it)
staged = DataOptions(output_dir=out + ".outputs", cleanup="inplace", rc_file=out + ".rc.yml", submit_dir=out)
data = {"staged": staged, "staged-clustered": staged,
        "bare": DataOptions(cleanup="none", submit_dir=out)}.get(mode, DataOptions(submit_dir=out))
t0 = time.perf_counter()
c0 = cpu()
wf = read_workflow(path)
t1 = time.perf_counter()
load_cpu = cpu() - c0
tc = TransformationCatalog()
for key in sorted({(j.namespace, j.name, j.version) for j in wf.jobs.values()}, key=repr):
    tc.add(Transformation(key[1], key[0], key[2], (TransformationSite("condorpool", "/opt/bin/" + key[1]),)))
sc = SiteCatalog()
for name in ("condorpool", "local"):
    sc.add(Site(name))
rc = None
if mode in ("clustered", "unclustered"):  # no data to stage in: the inputs no job makes are optional and
    # have no replica, which Pegasus drops from the plan (a required input needs one).  Marked on the
    # records read, not copied: copying every job would change the peak memory measured
    made = {u.lfn for job in wf.jobs.values() for u in job.uses if u.type != "input"}
    for job in wf.jobs.values():
        for u in job.uses:
            if u.type == "input" and u.lfn not in made and not u.optional:
                object.__setattr__(u, "optional", True)
    del made
else:  # outputs registered, inputs with a replica each: the data pass has everything to do
    import dataclasses
    from sheaf.model import PFN, Replica, ReplicaCatalog
    made, read = set(), set()
    for jid, job in wf.jobs.items():
        uses = tuple(dataclasses.replace(u, register_replica=u.type != "input") for u in job.uses)
        wf.jobs[jid] = dataclasses.replace(job, uses=uses)
        made.update(u.lfn for u in uses if u.type != "input")
        read.update(u.lfn for u in uses if u.type == "input")
    rc = ReplicaCatalog([Replica(lfn, (PFN("file:///data/" + lfn, "local"),)) for lfn in sorted(read - made)])
clustered = mode in ("clustered", "staged-clustered")
props = Properties({"pegasus.clusters.size": "100"} if clustered else {})
clustering = ("horizontal",) if clustered else ()
t2 = time.perf_counter()
c2 = time.process_time()
ew = plan(wf, tc=tc, sc=sc, rc=rc, properties=props, clustering=clustering, data=data)
plan_cpu = time.process_time() - c2
t3 = time.perf_counter()
c3 = cpu()
try:
    from sheaf.codegen import write_plan
except ImportError:
    write_s = float("nan")
else:
    write_plan(ew, out, replace=True)
    write_s = time.perf_counter() - t3
total_cpu = load_cpu + plan_cpu + cpu() - c3
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(t1 - t0, t3 - t2, plan_cpu, write_s, rss, len(ew.jobs), len(ew.edges), total_cpu)
"""


_YAML_CHILD = """
import sys, time
import yaml_rs
t0 = time.perf_counter()
c0 = time.process_time()
with open(sys.argv[1], encoding="utf-8") as handle:
    yaml_rs.loads(handle.read(), parse_datetime=False)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def _child(code: str, *args: object) -> list[float]:
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, capture_output=True,
                         text=True)
    return [float(x) for x in out.stdout.split()]


def reference_levels(parents: list[list[int]], children: list[list[int]]) -> list[int]:
    """The baseline: BFS from the roots; every visit of a child rescans all of its parents."""
    n = len(parents)
    level = [0] * n
    queue = deque(u for u in range(n) if not parents[u])
    for u in queue:
        level[u] = 1
    while queue:
        u = queue.popleft()
        for c in children[u]:
            best = 1 + max(level[p] for p in parents[c])  # the rescan: O(in-degree) per visit
            if best > level[c]:
                level[c] = best
                queue.append(c)
    return level


def _baseline_seconds(size: int) -> float:
    sys.path.insert(0, str(HERE))
    from load import SHAPES  # the sibling benchmark's workflow shapes

    from sheaf.model import build_graph

    graph = build_graph(SHAPES["montage"](size))
    parents = [list(graph.parents(u)) for u in range(len(graph))]
    children = [list(graph.children(u)) for u in range(len(graph))]
    t0 = time.perf_counter()
    reference_levels(parents, children)
    return time.perf_counter() - t0


def _measure(path: Path, mode: str, out: Path, size: int, jobs: int, base: str) -> tuple[float, float, float]:
    """One run of ``mode`` beside its yardstick, printed as a row: (total s, yaml_rs s, plan + write s)."""
    yaml_s, yaml_cpu = _child(_YAML_CHILD, path)
    load = os.getloadavg()[0]
    load_s, plan_s, cpu_s, write_s, rss, exec_jobs, _, total_cpu = _child(_PLAN_CHILD, path, mode, out)
    total = load_s + plan_s + (0.0 if math.isnan(write_s) else write_s)
    files = sum(len(names) for _, _, names in os.walk(out))
    shutil.rmtree(out, ignore_errors=True)
    ratio = total / yaml_s
    target = TARGETS.get((size, mode))
    ok = ratio <= target and rss <= RSS_TARGET_MB if target else None
    verdict = "-" if ok is None else ("ok" if ok else "MISS")
    print(f"{jobs:8d} {mode:16} {load_s:7.2f} {plan_s:7.2f} {cpu_s:8.2f} {write_s:8.2f} "
          f"{total:8.2f} "
          f"{rss:7.0f} {int(exec_jobs):9d} {files:8d} {yaml_s:9.2f} {ratio:10.2f} {verdict:>7} "
          f"{load:5.1f} {total_cpu:7.2f} {total_cpu / yaml_cpu:8.2f}  {base}", flush=True)
    return total, yaml_s, plan_s + (0.0 if math.isnan(write_s) else write_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    modes = ["clustered", "unclustered", "staged", "staged-clustered", "bare"]
    parser.add_argument("--modes", nargs="+", choices=modes, default=modes)
    parser.add_argument("--baseline-max", type=int, default=20_000,
                        help="largest size the quadratic baseline runs on; larger sizes are extrapolated")
    parser.add_argument("--run", type=int, default=10_000,
                        help="jobs of the real cleanup run (0: skip it)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of every mode at each size, interleaved, then the median of each")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be 1 or more, not {args.rounds}")
    print(f"{'jobs':>8} {'mode':16} {'load s':>7} {'plan s':>7} {'plan cpu':>8} {'write s':>8} "
          f"{'total s':>8} {'RSS MB':>7} {'exec jobs':>9} {'files':>8} {'yaml_rs s':>9} {'total/yaml':>10} "
          f"{'target':>7} {'load':>5} {'cpu s':>7} {'cpu/yaml':>8}  "
          f"{'baseline levels s':>17}")
    measured: tuple[int, float] | None = None
    data_times: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sorted(args.sizes):
            path = Path(tmp) / f"montage-{size}.yml"
            jobs = int(_child(_WRITE_CHILD, size, path)[0])
            if size <= args.baseline_max:
                measured = (jobs, _baseline_seconds(size))
                base = f"{measured[1]:17.2f}"
            else:
                base = f"~{measured[1] * (jobs / measured[0]) ** 2:16.0f}" if measured else f"{'-':>17}"
            ratios: dict[str, list[tuple[float, float, float]]] = {}
            for _ in range(args.rounds):  # each round runs every mode: a slow spell of the machine hits all
                for mode in args.modes:
                    total, yaml_s, data_s = _measure(path, mode, Path(tmp) / mode, size, jobs, base)
                    ratios.setdefault(mode, []).append((total / yaml_s, total, yaml_s))
                    data_times.setdefault((size, mode), []).append(data_s)
            if args.rounds > 1:
                for mode, rows in ratios.items():
                    ratio, total, yaml_s = (statistics.median(row[i] for row in rows) for i in range(3))
                    low, high = min(row[0] for row in rows), max(row[0] for row in rows)
                    print(f"{jobs:8d} {mode:16} median of {len(rows)}: total/yaml {ratio:.2f} "
                          f"({low:.2f}-{high:.2f}), total {total:.2f} s, yaml_rs {yaml_s:.2f} s", flush=True)
            path.unlink()
            if (size, "staged") in data_times and (size, "bare") in data_times:
                staged, bare = (statistics.median(data_times[(size, m)]) for m in ("staged", "bare"))
                ratio = staged / bare
                verdict = "ok" if ratio <= DATA_TARGET else "MISS"
                print(f"{jobs:8d} staged/bare plan+write {ratio:.2f} (target <= {DATA_TARGET}) {verdict}",
                      flush=True)
    if args.run:
        sys.path.insert(0, str(HERE))
        from _cleanup_run import cleanup_run

        with tempfile.TemporaryDirectory() as tmp:
            print(cleanup_run(Path(tmp), args.run), flush=True)
    print(f"reference Java planner at 10^5 jobs (same machine): "
          f"{REFERENCE_JAVA_S['clustered']} s clustered, {REFERENCE_JAVA_S['unclustered']} s unclustered")


if __name__ == "__main__":
    main()
