"""Writing half of the plan budget: ``write_plan`` on 10^5 (and optionally 10^6) planned jobs.

    .venv/bin/python benchmarks/codegen_write.py [--jobs 100000] [--size 100] [--out bench-out]

Builds a synthetic workflow in memory (levels of equal width, each job reading the output of one job
of the previous level, one transformation per level), plans it with ``sheaf.planner.plan`` clustered
(``clusters.size``) and unclustered -- its data pass included, for the directory written -- and times
``write_plan`` for each.  Printed side by side with a
baseline measured in the same run: creating as many small files as the plan wrote (the floor of
any layout with that many files: shared submit descriptions leave a cluster's ``.in``) -- so the
figures can be read on any machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time

from sheaf.codegen import write_plan
from sheaf.model import (
    Job,
    Properties,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Use,
    Workflow,
)
from sheaf.planner import DataOptions, plan


def synthetic(jobs: int, width: int) -> tuple[Workflow, TransformationCatalog, SiteCatalog]:
    wf = Workflow("synthetic")
    tc = TransformationCatalog()
    levels = (jobs + width - 1) // width
    for level in range(levels):
        tc.add(Transformation(f"t{level}", "bench", "1.0", (TransformationSite("local", "/bin/true"),)))
    for n in range(jobs):
        level = n // width
        jid = f"ID{n:07d}"
        uses = [Use(f"f{n}", "output")]
        args = ["-o", f"f{n}"]
        if level:
            uses.append(Use(f"f{n - width}", "input"))
            args += ["-i", f"f{n - width}"]
        wf.jobs[jid] = Job(jid, f"t{level}", "bench", "1.0", arguments=tuple(args), uses=tuple(uses))
    return wf, tc, SiteCatalog({"local": Site("local")})


def baseline(count: int, root: str) -> float:
    """Create ``count`` small files spread over directories of 10^4 (the layout's floor)."""
    started = time.perf_counter()
    for i in range(count):
        sub = os.path.join(root, f"{i // 10_000:03d}")
        if i % 10_000 == 0:
            os.makedirs(sub)
        with open(os.path.join(sub, f"j{i}.sub"), "w") as handle:
            handle.write("universe = vanilla\nexecutable = /bin/true\nqueue\n")
    return time.perf_counter() - started


def run(jobs: int, size: int, out: str, width: int) -> None:
    wf, tc, sc = synthetic(jobs, width)
    for label, props, clustering in (
        ("clustered", {"pegasus.clusters.size": str(size)}, ("horizontal",)),
        ("unclustered", {}, ()),
    ):
        target = os.path.join(out, label)
        shutil.rmtree(target, ignore_errors=True)  # an earlier run's files: removing them is not timed
        t0 = time.perf_counter()
        exec_wf = plan(wf, tc=tc, sc=sc, rc=None, properties=Properties(props), sites=["local"],
                       clustering=clustering, data=DataOptions(submit_dir=target))
        t1 = time.perf_counter()
        write_plan(exec_wf, target)
        t2 = time.perf_counter()
        base_dir = os.path.join(out, label + "-baseline")
        shutil.rmtree(base_dir, ignore_errors=True)
        written = sum(len(names) for _, _, names in os.walk(target))
        floor = baseline(written, base_dir)
        print(f"{jobs:>8} jobs {label:<11}: {len(exec_wf.jobs):>7} executable jobs  plan {t1 - t0:6.2f}s  "
              f"write {t2 - t1:6.2f}s  | baseline: {written} bare files {floor:6.2f}s")
        shutil.rmtree(base_dir, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--out", default="bench-out")
    args = parser.parse_args()
    run(args.jobs, args.size, args.out, args.width)


if __name__ == "__main__":
    main()
