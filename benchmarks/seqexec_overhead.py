"""Per-task overhead of sheaf-cluster against the fork/exec floor (``xargs``), side by side.

Runs N ``/bin/true`` tasks (default 2,000) three ways in the same run and prints wall time,
tasks/s, the CPU time (runner + tasks, user + system) and the overhead per task relative to xargs.
On a shared machine the wall-time figures jump with the load; the CPU figures much less:

    xargs -P{1,2} -n1 /bin/true             the floor: fork/exec and wait, nothing else
    sheaf-cluster [-n 2] job.in            parse the .in file, posix_spawn, wait4, one record per task
    sheaf-cluster -R progress.txt job.in   ... plus the progress report (one locked append per task)
    sheaf-cluster-c [-n 2] job.in          the compiled runner (where setup.py built it)

First, the start-up every clustered job pays: each runner on an empty ``.in`` file, against
``sh -c :`` (what ``xargs sh`` pays per batch), and a 50-task cluster (the engine benchmark's size).

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
COMPILED = str(Path(__file__).resolve().parent.parent / "src" / "sheaf" / "jobtools" / "_bin"
               / "sheaf-cluster-c")
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


def _compiled() -> str | None:
    """The built sheaf-cluster-c: the installed package's, else the source tree's (editable)."""
    import sheaf

    installed = Path(sheaf.__file__).parent / "jobtools" / "_bin" / "sheaf-cluster-c"
    return next((str(p) for p in (installed, Path(COMPILED)) if os.access(p, os.X_OK)), None)


def start_up(tmp: str, repeats: int) -> None:
    """Per-cluster start: each runner on an empty .in file and on 50 /bin/true tasks; sh -c : beside."""
    fifty = os.path.join(tmp, "fifty.in")
    with open(fifty, "w") as stream:
        stream.writelines(f"{TRUE}\n" for _ in range(50))
    runners = [("sh", ["sh", "-c", ":"], ["sh", fifty]), ("sheaf-cluster (Python)", [CLUSTER, os.devnull],
                                                             [CLUSTER, fifty])]
    compiled = _compiled()
    if compiled:
        runners.insert(1, ("sheaf-cluster-c", [compiled, os.devnull], [compiled, fifty]))
    print(f"{'per cluster, best of ' + str(repeats * 5):32} {'start ms':>9} {'50 tasks ms':>12}")
    for name, empty, full in runners:
        start, fifty_s = (_best(argv, repeats * 5)[0] * 1e3 for argv in (empty, full))
        print(f"{name:32} {start:9.2f} {fifty_s:12.2f}")
    if not compiled:
        print("(sheaf-cluster-c not built: no C compiler at install time)")
    print()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, "job.in")
        with open(job, "w") as stream:
            stream.writelines(f"#@ {i + 1} bench::true ID{i + 1:07d}\n{TRUE} x\n" for i in range(n))
        start_up(tmp, repeats)
        startup = _best([CLUSTER, os.devnull], repeats)[0]  # interpreter start + empty run
        compiled = _compiled()
        rows = []
        for cpus in (1, 2):
            floor = _best(["xargs", f"-P{cpus}", "-n1", TRUE], repeats, stdin="x\n" * n)
            rows.append((f"xargs -P{cpus} -n1 true", floor, floor))
            rows.append((f"sheaf-cluster -n {cpus}",
                         _best([CLUSTER, "-n", str(cpus), job], repeats), floor))
            rows.append((f"sheaf-cluster -n {cpus} -R progress",
                         _best([CLUSTER, "-n", str(cpus), "-R", os.path.join(tmp, "p.txt"), job],
                               repeats), floor))
            if compiled:
                rows.append((f"sheaf-cluster-c -n {cpus}", _best([compiled, "-n", str(cpus), job], repeats),
                             floor))
    print(f"{n} tasks of {TRUE}, best of {repeats}; "
          f"sheaf-cluster start-up (empty .in) {startup * 1e3:.0f} ms")
    print(f"{'runner':32} {'wall s':>7} {'tasks/s':>8} {'vs floor':>8} {'wall/task':>10} "
          f"{'CPU s':>7} {'CPU/task':>9}")
    for name, (wall, cpu), (floor_wall, floor_cpu) in rows:
        print(f"{name:32} {wall:7.3f} {n / wall:8.0f} {floor_wall / wall:7.2f}x "
              f"{(wall - floor_wall) / n * 1e6:+8.0f}us {cpu:7.3f} {(cpu - floor_cpu) / n * 1e6:+7.0f}us")


if __name__ == "__main__":
    main()
