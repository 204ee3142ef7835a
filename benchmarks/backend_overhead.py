"""What each backend costs against its own floor, measured in the same run (issue 12's speed targets).

One section per backend; each prints its workload, its floor, both times and the ratio with its target.

Dask (``--backend dask``)
    N ``/bin/true`` tasks (default 10,000) clustered by C (default 100): N/C seqexec cluster jobs
    (``sheaf-cluster job.in``), each one ``Launch`` handed to a ``DaskBackend`` on a LocalCluster it owns
    (one worker, a thread per CPU).  Floor: a plain 2-thread pool (``ThreadPoolExecutor``) running the
    same N commands with ``subprocess.run``.  Target: Dask throughput >= 0.8x the floor's.  A second line
    runs the N/C cluster jobs themselves on the same 2-thread pool: what clustering through seqexec
    costs (an interpreter start, ~60-100 ms, per cluster job), apart from what Dask costs.  The
    cluster's start-up (2-4 s here) is printed apart and not counted: paid once per run, not per task.

    usage: python benchmarks/backend_overhead.py [--backend dask] [--tasks N] [--cluster C] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from sheaf.classad import ClassAd  # noqa: E402
from sheaf.engine import Exited, Launch  # noqa: E402

TRUE = shutil.which("true") or "/bin/true"
CLUSTER = str(Path(sys.executable).parent / "sheaf-cluster")


def _best(run: Callable[[], float], repeats: int) -> float:
    return min(run() for _ in range(repeats))


def _thread_pool(commands: list[list[str]]) -> float:
    """A plain pool of 2 threads running ``commands``, one ``subprocess.run`` each."""
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        for _ in pool.map(lambda argv: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL), commands):
            pass
    return time.perf_counter() - start


# -- Dask --------------------------------------------------------------------------------------------
def _cluster_launches(tmp: str, n: int, per: int) -> list[Launch]:
    launches = []
    ad = ClassAd.parse_old("DAGNodeRetry = 0\nRequestCpus = 1\nRequestMemory = 64")
    for job in range(0, n, per):
        path = os.path.join(tmp, f"merge_{job // per}.in")
        with open(path, "w") as stream:
            stream.writelines(f"#@ {i + 1} bench::true ID{job + i:07d}\n{TRUE} x\n"
                              for i in range(min(per, n - job)))
        name = f"merge_{job // per}"
        launches.append(Launch(key=f"{name}#0", node=name, attempt=0, argv=(CLUSTER, path),
                               env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, cwd=tmp,
                               stdout=os.path.join(tmp, f"{name}.out"),
                               stderr=os.path.join(tmp, f"{name}.err"), job_ad=ad))
    return launches


def _dask_run(backend: object, launches: list[Launch]) -> float:
    from sheaf.backends.dask import DaskBackend

    assert isinstance(backend, DaskBackend)
    start = time.perf_counter()
    for launch in launches:
        backend.submit(launch)
    seen = 0
    while seen < len(launches):
        for event in backend.wait(5.0):
            assert isinstance(event, Exited) and event.exit_code == 0, event
            seen += 1
    return time.perf_counter() - start


def dask_section(n: int, per: int, repeats: int) -> None:
    from sheaf.backends.dask import DaskBackend

    with tempfile.TemporaryDirectory() as tmp:
        launches = _cluster_launches(tmp, n, per)
        started = time.perf_counter()
        backend = DaskBackend()
        up = time.perf_counter() - started
        try:
            floor = _best(lambda: _thread_pool([[TRUE, "x"]] * n), repeats)
            clusters = _best(lambda: _thread_pool([list(launch.argv) for launch in launches]), repeats)
            dask = _best(lambda: _dask_run(backend, launches), repeats)
        finally:
            backend.close()
    print(f"== Dask: {n} /bin/true tasks clustered by {per} ({len(launches)} tasks), best of {repeats}")
    print(f"   LocalCluster start-up {up:.2f} s (not counted)")
    for name, took in (("2-thread pool, one command a call", floor),
                       ("2-thread pool, the seqexec cluster jobs", clusters),
                       ("DaskBackend, the seqexec cluster jobs", dask)):
        print(f"   {name:<42} {took:7.2f} s {n / took:8.0f} tasks/s")
    print(f"   Dask / floor throughput: {floor / dask:.2f}x (target >= 0.80x); "
          f"Dask's own cost, against the same cluster jobs on the pool: {clusters / dask:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["dask"], action="append")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--cluster", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    for name in args.backend or ["dask"]:
        if name == "dask":
            dask_section(args.tasks, args.cluster, args.repeats)


if __name__ == "__main__":
    main()
