"""Per-task overhead of sheaf-cluster against the fork/exec floor (``xargs``), side by side.

Runs N ``/bin/true`` tasks (default 2,000) three ways in the same run and prints wall time,
tasks/s, the CPU time (runner + tasks, user + system) and the overhead per task relative to xargs.
On a shared machine the wall-time figures jump with the load; the CPU figures much less:

    xargs -P{1,2} -n1 /bin/true             the floor: fork/exec and wait, nothing else
    sheaf-cluster [-n 2] job.in            parse the .in file, posix_spawn, wait4, one record per task
    sheaf-cluster -R progress.txt job.in   ... plus the progress report (one locked append per task)

    usage: python benchmarks/seqexec_overhead.py [N] [REPEATS]
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLUSTER = str(Path(sys.executable).parent / "sheaf-cluster")
TRUE = shutil.which("true") or "/bin/true"


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _best(argv: list[str], repeats: int, stdin: str | None = None) -> tuple[float, float]:
    """Best wall time and best CPU time (of the runner and all its tasks) over the repeats."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, used = time.perf_counter(), _cpu()
        subprocess.run(argv, input=stdin, text=True, stdout=subprocess.DEVNULL, check=True)
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, _cpu() - used)
    return wall, cpu


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, "job.in")
        with open(job, "w") as stream:
            stream.writelines(f"#@ {i + 1} bench::true ID{i + 1:07d}\n{TRUE} x\n" for i in range(n))
        startup = _best([CLUSTER, os.devnull], repeats)[0]  # interpreter start + empty run
        rows = []
        for cpus in (1, 2):
            floor = _best(["xargs", f"-P{cpus}", "-n1", TRUE], repeats, stdin="x\n" * n)
            rows.append((f"xargs -P{cpus} -n1 true", floor, floor))
            rows.append((f"sheaf-cluster -n {cpus}",
                         _best([CLUSTER, "-n", str(cpus), job], repeats), floor))
            rows.append((f"sheaf-cluster -n {cpus} -R progress",
                         _best([CLUSTER, "-n", str(cpus), "-R", os.path.join(tmp, "p.txt"), job],
                               repeats), floor))
    print(f"{n} tasks of {TRUE}, best of {repeats}; "
          f"sheaf-cluster start-up (empty .in) {startup * 1e3:.0f} ms")
    print(f"{'runner':32} {'wall s':>7} {'tasks/s':>8} {'vs floor':>8} {'wall/task':>10} "
          f"{'CPU s':>7} {'CPU/task':>9}")
    for name, (wall, cpu), (floor_wall, floor_cpu) in rows:
        print(f"{name:32} {wall:7.3f} {n / wall:8.0f} {floor_wall / wall:7.2f}x "
              f"{(wall - floor_wall) / n * 1e6:+8.0f}us {cpu:7.3f} {(cpu - floor_cpu) / n * 1e6:+7.0f}us")


if __name__ == "__main__":
    main()
