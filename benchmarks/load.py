"""Load benchmark: Pegasus 5.0 YAML workflows of 10^4..10^6 jobs, sheaf against PyYAML's C loader.

For each shape and size this script

1. builds a workflow in the shape of a real one (``montage``: project -> pairwise diff -> one
   fan-in fit -> background -> one fan-in add; ``genome``: 1000Genome's individuals -> per-chromosome
   merge, sifting, then per-population mutation-overlap and frequency jobs), each job with a few file
   uses and arguments, and writes it with ``sheaf.formats.write_workflow`` (timed);
2. in a *fresh subprocess* (so peak RSS is that of the load alone) reads it with
   ``sheaf.formats.read_workflow`` and checks it with ``sheaf.model.validate``, and reports the time
   and ``ru_maxrss``;
3. in another fresh subprocess loads the same file with PyYAML's ``CSafeLoader`` (the baseline),
   up to ``--pyyaml-max`` jobs; above that the PyYAML time is extrapolated linearly from the largest
   measured size of the same shape and marked ``~``;
4. in another fresh subprocess parses the same file with ``yaml_rs`` alone (no conversion, no
   validation): the floor a one-process reader cannot go under, and a yardstick that a busy shared
   machine slows down as much as it slows sheaf (compare the CPU columns, and ``cpu/yrs``).

sheaf parses most slices of a large file in a second process (``sheaf.formats._slice_worker``):
``cpu s`` is the loading process's CPU time, ``wkr cpu`` the worker's; on two idle cores the wall
time is about the larger of the two.

Usage::

    .venv/bin/python benchmarks/load.py                     # 10^4, 10^5, 10^6, both shapes
    .venv/bin/python benchmarks/load.py --sizes 10000 --shapes montage
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from sheaf.model import Job, Use, Workflow

TARGETS = {100_000: 3.0, 1_000_000: 30.0}  # seconds, load + validate
RSS_TARGET_MB = 2048


def _job(jid: str, name: str, args: list[str], inputs: list[str], outputs: list[str],
         runtime: dict[str, dict[str, str]] | None = None) -> Job:
    uses = tuple([Use(f) for f in inputs] + [Use(f, "output", True, False) for f in outputs])
    return Job(id=jid, name=name, namespace="bench", version="1.0", arguments=tuple(args), uses=uses,
               profiles=runtime or {})


def montage(n: int) -> Workflow:
    """~n jobs: k project, k-1 diff, 1 concat-fit, 1 bg-model, k background, 1 add (k = (n - 3) // 3)."""
    k = max(2, (n - 3) // 3)
    wf = Workflow(name=f"montage-{n}")
    jobs = wf.jobs
    prof = {"pegasus": {"runtime": "30"}}
    for i in range(k):
        jobs[f"project_{i}"] = _job(f"project_{i}", "mProject",
                                    ["-X", f"raw_{i}.fits", f"p_{i}.fits", "region.hdr"],
                                    [f"raw_{i}.fits", "region.hdr"], [f"p_{i}.fits", f"p_{i}_area.fits"],
                                    prof)
    for i in range(k - 1):
        jobs[f"diff_{i}"] = _job(f"diff_{i}", "mDiffFit", ["-d", "-s", f"fit_{i}.txt", f"p_{i}.fits",
                                                           f"p_{i + 1}.fits"],
                                 [f"p_{i}.fits", f"p_{i + 1}.fits", "region.hdr"], [f"fit_{i}.txt"])
    jobs["concat"] = _job("concat", "mConcatFit", ["statfile.tbl", "fits.tbl", "."],
                          [f"fit_{i}.txt" for i in range(k - 1)], ["fits.tbl"])
    jobs["bgmodel"] = _job("bgmodel", "mBgModel", ["images.tbl", "fits.tbl", "corrections.tbl"],
                           ["fits.tbl"], ["corrections.tbl"])
    for i in range(k):
        jobs[f"background_{i}"] = _job(f"background_{i}", "mBackground",
                                       ["-t", f"p_{i}.fits", f"c_{i}.fits"],
                                       [f"p_{i}.fits", f"p_{i}_area.fits", "corrections.tbl"],
                                       [f"c_{i}.fits"], prof)
    jobs["add"] = _job("add", "mAdd", ["-e", "images.tbl", "region.hdr", "mosaic.fits"],
                       [f"c_{i}.fits" for i in range(k)], ["mosaic.fits"])
    return wf


def genome(n: int) -> Workflow:
    """~n jobs over 10 chromosomes: individuals, merge, sifting, then 7 populations x 2 analyses."""
    chromosomes, populations = 10, 7
    per_chr = max(1, (n - chromosomes * (2 + 2 * populations)) // chromosomes)
    wf = Workflow(name=f"genome-{n}")
    jobs = wf.jobs
    for c in range(1, chromosomes + 1):
        parts = []
        for i in range(per_chr):
            out = f"chr{c}n-{i}.tar.gz"
            parts.append(out)
            jobs[f"ind_{c}_{i}"] = _job(f"ind_{c}_{i}", "individuals",
                                        [f"ALL.chr{c}.vcf", str(c), str(i), str(per_chr)],
                                        [f"ALL.chr{c}.vcf", "columns.txt"], [out])
        jobs[f"merge_{c}"] = _job(f"merge_{c}", "individuals_merge", [str(c), *parts[:3]], parts,
                                  [f"chr{c}n.tar.gz"])
        jobs[f"sift_{c}"] = _job(f"sift_{c}", "sifting", [f"ALL.chr{c}.annotation.vcf", str(c)],
                                 [f"ALL.chr{c}.annotation.vcf"], [f"sifted.SIFT.chr{c}.txt"])
        for p in range(populations):
            ins = [f"chr{c}n.tar.gz", f"sifted.SIFT.chr{c}.txt", f"pop{p}"]
            jobs[f"mut_{c}_{p}"] = _job(f"mut_{c}_{p}", "mutation_overlap", ["-c", str(c), "-pop", f"pop{p}"],
                                        ins, [f"chr{c}-pop{p}.tar.gz"])
            jobs[f"freq_{c}_{p}"] = _job(f"freq_{c}_{p}", "frequency", ["-c", str(c), "-pop", f"pop{p}"], ins,
                                         [f"chr{c}-pop{p}-freq.tar.gz"])
    return wf


SHAPES = {"montage": montage, "genome": genome}

_SHEAF_CHILD = """
import resource, sys, time
from sheaf.formats import read_workflow
from sheaf.model import validate
c0, t0 = time.process_time(), time.perf_counter()
wf = read_workflow(sys.argv[1])
t1 = time.perf_counter()
graph, levels, summary = validate(wf)
c2, t2 = time.process_time(), time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(t1 - t0, t2 - t1, c2 - c0, rss, kids.ru_utime + kids.ru_stime, kids.ru_maxrss / 1024, summary.jobs)
"""

_PYYAML_CHILD = """
import resource, sys, time
import yaml
c0, t0 = time.process_time(), time.perf_counter()
with open(sys.argv[1]) as fh:
    data = yaml.load(fh, Loader=yaml.CSafeLoader)
c1, t1 = time.process_time(), time.perf_counter()
print(t1 - t0, c1 - c0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(data["jobs"]))
"""


_YAML_RS_CHILD = """
import resource, sys, time
import yaml_rs
c0 = time.process_time()
with open(sys.argv[1], encoding="utf-8") as fh:
    data = yaml_rs.loads(fh.read(), parse_datetime=False)
print(time.process_time() - c0, len(data["jobs"]))
"""


def _child(code: str, *args: object) -> list[float]:
    """Run ``code`` in a fresh interpreter; its stdout is whitespace-separated numbers.

    Also the generator runs in a child: ``ru_maxrss`` survives ``fork``/``exec`` on Linux, so a
    child forked from a parent holding a 10^6-job model would report the parent's peak.
    """
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, capture_output=True,
                         text=True)
    return [float(x) for x in out.stdout.split()]


_WRITE_CHILD = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from load import SHAPES
from sheaf.formats import write_workflow
wf = SHAPES[sys.argv[1]](int(sys.argv[2]))
t0 = time.perf_counter()
write_workflow(wf, sys.argv[3])
print(time.perf_counter() - t0, len(wf))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["montage", "genome"])
    parser.add_argument("--pyyaml-max", type=int, default=100_000,
                        help="largest size PyYAML is run on; larger sizes are extrapolated")
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = parser.parse_args()
    rows = []
    header = (f"{'shape':8} {'jobs':>8} {'MB':>6} {'write s':>8} {'read s':>7} {'valid. s':>8} "
              f"{'total s':>8} {'cpu s':>6} {'wkr cpu':>7} {'RSS MB':>7} {'wkr RSS':>7} {'yaml_rs cpu':>11} "
              f"{'cpu/yrs':>7} {'PyYAML s':>9} {'PyY cpu':>8} {'PyY RSS':>8} {'target':>7}")
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          "wall-clock seconds unless 'cpu'")
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes:
            per_job: tuple[float, float] | None = None
            for size in sorted(args.sizes):
                path = Path(tmp) / f"{shape}-{size}.yml"
                write_s, jobs_f = _child(_WRITE_CHILD, shape, size, path)
                jobs = int(jobs_f)
                read_s, valid_s, cpu_s, rss, wkr_cpu, wkr_rss, _ = _child(_SHEAF_CHILD, path)
                yrs_cpu = _child(_YAML_RS_CHILD, path)[0]
                if size <= args.pyyaml_max:
                    py_s, py_cpu, py_rss, _ = _child(_PYYAML_CHILD, path)
                    per_job = (py_s / jobs, py_cpu / jobs)
                    py_text, py_cpu_text, py_rss_text = f"{py_s:9.1f}", f"{py_cpu:8.1f}", f"{py_rss:8.0f}"
                elif per_job:  # extrapolated linearly from the largest measured size, marked '~'
                    py_text, py_cpu_text = f"~{per_job[0] * jobs:8.0f}", f"~{per_job[1] * jobs:7.0f}"
                    py_rss_text = f"{'-':>8}"
                else:
                    py_text, py_cpu_text, py_rss_text = f"{'-':>9}", f"{'-':>8}", f"{'-':>8}"
                total = read_s + valid_s
                target = TARGETS.get(size)
                met = target is not None and total <= target and rss <= RSS_TARGET_MB
                verdict = "-" if target is None else ("ok" if met else "MISS")
                mb = path.stat().st_size / 2**20
                print(f"{shape:8} {jobs:8d} {mb:6.0f} {write_s:8.2f} {read_s:7.2f} {valid_s:8.2f} "
                      f"{total:8.2f} {cpu_s:6.2f} {wkr_cpu:7.2f} {rss:7.0f} {wkr_rss:7.0f} {yrs_cpu:11.2f} "
                      f"{cpu_s / yrs_cpu:7.2f} {py_text} {py_cpu_text} {py_rss_text} {verdict:>7}",
                      flush=True)
                rows.append({"shape": shape, "jobs": jobs, "mb": mb, "write_s": write_s, "read_s": read_s,
                             "validate_s": valid_s, "cpu_s": cpu_s, "worker_cpu_s": wkr_cpu, "rss_mb": rss,
                             "worker_rss_mb": wkr_rss, "yaml_rs_cpu_s": yrs_cpu, "pyyaml_s": py_text.strip()})
                path.unlink()
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
