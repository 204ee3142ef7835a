"""Plan benchmark: load + plan + write a 10^4..10^6-job workflow, clustered and unclustered.

For each size this script

1. builds a workflow in the shape of a real one (``load.py``'s ``montage``: project -> pairwise
   diff -> one fan-in fit -> background -> one fan-in add, the wide joins on which the reference
   planner's level computation goes quadratic) and writes it as Pegasus 5.0 YAML;
2. in a *fresh subprocess* per mode (so peak RSS is that run's alone) reads it
   (``sheaf.formats.read_workflow``), plans it (``sheaf.planner.plan``, site ``condorpool``) and
   writes the executable workflow (``sheaf.codegen.write_plan``: DAG, submit files, ``.in`` files,
   ``plan.json``), timing each phase (wall clock; the planner also in CPU seconds, which a busy
   shared machine does not inflate) and reporting ``ru_maxrss``.  Modes: ``clustered``
   (``--cluster horizontal`` with ``pegasus.clusters.size = 100``) and ``unclustered``;
3. times a baseline in the same run: the reference planner's level computation (a BFS that, each
   time it reaches a child, rescans the child's whole parent list), which is what makes the
   reference take 19.2 s (clustered) and 400.8 s (unclustered) at 10^5 jobs on this machine.  It runs
   up to ``--baseline-max`` jobs and is extrapolated quadratically above that (marked ``~``);
4. times a second baseline right after each plan, in the same run: creating as many bare files as
   the plan wrote (one 1 KB file per executable job and per cluster input, ``os.open``/``os.write``,
   10^4 to a directory as the plan's layout does).  The unclustered plan is one submit file per job
   (the contract), so its write time cannot go under this; on this shared VM it varies from run to
   run by a factor of several with what the other helpers write, hence ``write/bare``.

``load s`` includes the YAML worker process (``sheaf.formats._slice_worker``), whose CPU time is
not in ``plan cpu``.

Usage::

    .venv/bin/python benchmarks/plan_scaling.py                        # 10^4, 10^5, 10^6
    .venv/bin/python benchmarks/plan_scaling.py --sizes 100000 --modes clustered
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: seconds for load + plan + write, by (jobs, mode); and the RSS ceiling at 10^6
TARGETS = {(100_000, "clustered"): 3.0, (100_000, "unclustered"): 10.0, (1_000_000, "clustered"): 30.0}
RSS_TARGET_MB = 4096
#: the reference Java planner on this machine, 10^5 jobs (issue 3): for the reader, not re-run here
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
import resource, sys, time
from sheaf.formats import read_workflow
from sheaf.model import (
    Properties, Site, SiteCatalog, Transformation, TransformationCatalog, TransformationSite,
)
from sheaf.planner import plan
path, mode, out = sys.argv[1:4]
t0 = time.perf_counter()
wf = read_workflow(path)
t1 = time.perf_counter()
tc = TransformationCatalog()
for key in sorted({(j.namespace, j.name, j.version) for j in wf.jobs.values()}, key=repr):
    tc.add(Transformation(key[1], key[0], key[2], (TransformationSite("condorpool", "/opt/bin/" + key[1]),)))
sc = SiteCatalog()
for name in ("condorpool", "local"):
    sc.add(Site(name))
props = Properties({"pegasus.clusters.size": "100"} if mode == "clustered" else {})
clustering = ("horizontal",) if mode == "clustered" else ()
t2 = time.perf_counter()
c2 = time.process_time()
ew = plan(wf, tc=tc, sc=sc, rc=None, properties=props, clustering=clustering)
plan_cpu = time.process_time() - c2
t3 = time.perf_counter()
try:
    from sheaf.codegen import write_plan
except ImportError:
    write_s = float("nan")
else:
    write_plan(ew, out, force=True)
    write_s = time.perf_counter() - t3
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(t1 - t0, t3 - t2, plan_cpu, write_s, rss, len(ew.jobs), len(ew.edges))
"""


_BARE_CHILD = """
import os, sys, time
root, count = sys.argv[1], int(sys.argv[2])
body = b"x" * 1023 + b"\\n"
t0 = time.perf_counter()
for i in range(count):
    if i % 10000 == 0:
        os.makedirs(f"{root}/jobs/{i // 10000:03d}")
    fd = os.open(f"{root}/jobs/{i // 10000:03d}/f{i}.sub", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, body)
    os.close(fd)
print(time.perf_counter() - t0)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", choices=["clustered", "unclustered"],
                        default=["clustered", "unclustered"])
    parser.add_argument("--baseline-max", type=int, default=20_000,
                        help="largest size the quadratic baseline runs on; larger sizes are extrapolated")
    args = parser.parse_args()
    print(f"{'jobs':>8} {'mode':11} {'load s':>7} {'plan s':>7} {'plan cpu':>8} {'write s':>8} "
          f"{'total s':>8} {'RSS MB':>7} "
          f"{'exec jobs':>9} {'bare files s':>12} {'write/bare':>10} {'target':>7}  "
          f"{'baseline levels s':>17}")
    measured: tuple[int, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in sorted(args.sizes):
            path = Path(tmp) / f"montage-{size}.yml"
            jobs = int(_child(_WRITE_CHILD, size, path)[0])
            if size <= args.baseline_max:
                measured = (jobs, _baseline_seconds(size))
                base = f"{measured[1]:17.2f}"
            else:
                base = f"~{measured[1] * (jobs / measured[0]) ** 2:16.0f}" if measured else f"{'-':>17}"
            for mode in args.modes:
                load_s, plan_s, cpu_s, write_s, rss, exec_jobs, _ = _child(_PLAN_CHILD, path, mode,
                                                                         Path(tmp) / mode)
                total = load_s + plan_s + (0.0 if math.isnan(write_s) else write_s)
                files = int(exec_jobs) + (int(exec_jobs) if mode == "clustered" else 0)  # .sub (+ .in)
                bare_s = _child(_BARE_CHILD, Path(tmp) / f"bare-{mode}", files)[0]
                target = TARGETS.get((size, mode))
                ok = total <= target and rss <= RSS_TARGET_MB if target else None
                verdict = "-" if ok is None else ("ok" if ok else "MISS")
                print(f"{jobs:8d} {mode:11} {load_s:7.2f} {plan_s:7.2f} {cpu_s:8.2f} {write_s:8.2f} "
                      f"{total:8.2f} {rss:7.0f} "
                      f"{int(exec_jobs):9d} {bare_s:12.2f} {write_s / bare_s:10.1f} {verdict:>7}  {base}",
                      flush=True)
            path.unlink()
    print(f"reference Java planner at 10^5 jobs (issue 3, same machine): "
          f"{REFERENCE_JAVA_S['clustered']} s clustered, {REFERENCE_JAVA_S['unclustered']} s unclustered")


if __name__ == "__main__":
    main()
