"""sheaf-mpi-cluster's two transports on the same tasks, in the same run: MPI ranks against local workers.

Runs N independent ``/bin/true`` tasks (default 1,000) with W workers (default 2) twice per repeat:

    sheaf-mpi-cluster --transport local --workers W wf.dag       the floor: socket pairs, select()
    mpiexec --oversubscribe -n W+1 sheaf-mpi-cluster wf.dag      rank 0 master, W worker ranks

and prints, for each, the best workflow time the master reports in its ``cluster-summary`` (first
task sent to last result: the transport's own figure) and the best wall time of the whole command,
which adds interpreter and MPI start-up (mpiexec + MPI_Init cost about 0.5-1 s more than local
workers here), then the MPI/local throughput ratios (target: MPI >= 0.8x local on the workflow time).

    usage: python benchmarks/pmc_transport.py [N] [REPEATS] [WORKERS]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PMC = str(Path(sys.executable).parent / "sheaf-mpi-cluster")
TRUE = shutil.which("true") or "/bin/true"
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1"}


SUMMARY = re.compile(r"^\[cluster-summary .*? duration=(\d+\.\d+)", re.MULTILINE)


def _best(argv: list[str], repeats: int, cwd: str) -> tuple[float, float]:
    """Best (workflow time from the master's summary, wall time of the command) over the repeats."""
    flow = wall = float("inf")
    for _ in range(repeats):
        for leftover in Path(cwd).glob("wf.dag.*"):  # a rescue log would skip the tasks next time
            leftover.unlink()
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True, check=True)
        wall = min(wall, time.perf_counter() - start)
        found = SUMMARY.search(done.stdout)
        if found is None:
            sys.exit(f"no cluster-summary in the output of {argv}")
        flow = min(flow, float(found.group(1)))
    return flow, wall


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("mpiexec is not installed (scripts/system-deps.sh installs OpenMPI)")
    with tempfile.TemporaryDirectory() as tmp:
        dag = os.path.join(tmp, "wf.dag")
        with open(dag, "w") as stream:
            stream.writelines(f"TASK t{i} {TRUE}\n" for i in range(n))
        local = _best([PMC, "--transport", "local", "--workers", str(workers), dag], repeats, tmp)
        mpi = _best([mpiexec, "--oversubscribe", "-n", str(workers + 1), PMC, dag], repeats, tmp)
    print(f"{n} /bin/true tasks, {workers} workers, best of {repeats}")
    print(f"{'':<16} {'workflow':>10} {'tasks/s':>9} {'wall':>10} {'tasks/s':>9}")
    for name, (flow, wall) in (("local workers", local), ("MPI ranks", mpi)):
        print(f"{name:<16} {flow:8.2f} s {n / flow:9.0f} {wall:8.2f} s {n / wall:9.0f}")
    print(f"MPI / local throughput: workflow {local[0] / mpi[0]:.2f}x (target >= 0.80x), "
          f"wall with start-up {local[1] / mpi[1]:.2f}x")


if __name__ == "__main__":
    main()
