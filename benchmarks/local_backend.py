"""Launch throughput of the local backend against the fork/exec floor, side by side in one run.

    .venv/bin/python benchmarks/local_backend.py [N]      (default N = 5000)

Runs N ``/bin/true`` tasks on 2 slots three ways and prints tasks/s for each:

- ``xargs -P2``: GNU xargs fork/exec'ing the tasks two at a time (the floor the engine is held to);
- ``bare posix_spawn``: a Python loop that spawns and reaps with nothing else (what Python can do);
- ``LocalBackend``: every task a ``Launch`` with a job ClassAd, matched to a static slot, spawned in
  its own session with output files, reaped through pidfd + epoll.

The engine target is >= 0.8x xargs for the whole engine, so the backend's own share must be small.
Besides tasks/s it prints the CPU time this (parent) process spends per launch, which is what the
backend adds to the engine and is less sensitive to other load on the machine than wall time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from sheaf.backends import Pool
from sheaf.backends.local import LocalBackend
from sheaf.classad import ClassAd
from sheaf.engine import Launch


def xargs(n: int) -> float:
    start = time.perf_counter()
    subprocess.run(["xargs", "-P2", "-n1", "/bin/true"], input=b"x\n" * n, check=True)
    return n / (time.perf_counter() - start)


def bare(n: int) -> float:
    env = dict(os.environ)
    start = time.perf_counter()
    running: list[int] = []
    for _ in range(n):
        running.append(os.posix_spawn("/bin/true", ["/bin/true"], env, setsid=True))
        if len(running) == 2:
            os.waitpid(running.pop(0), 0)
    for pid in running:
        os.waitpid(pid, 0)
    return n / (time.perf_counter() - start)


def backend(n: int, workdir: str) -> float:
    pool = Pool("NUM_CPUS = 2\n")
    ad = ClassAd.parse_old("RequestCpus = 1\nRequestMemory = 64\nRequirements = TARGET.Memory >= 64")
    env = dict(os.environ)
    launches = [Launch(f"t{i}#0", f"t{i}", 0, ("/bin/true",), env, workdir, os.devnull, os.devnull, ad)
                for i in range(n)]
    start = time.perf_counter()
    with LocalBackend(pool) as local:
        for launch in launches:
            local.submit(launch)
        done = 0
        while done < n:
            done += len(local.wait(10.0))
    return n / (time.perf_counter() - start)


def _timed(run: Callable[[], float], n: int) -> tuple[float, float]:
    cpu = time.process_time()
    rate = run()
    return rate, (time.process_time() - cpu) / n * 1e6


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as workdir:
        results = {
            "xargs -P2": (xargs(n), None),
            "bare posix_spawn": _timed(lambda: bare(n), n),
            "LocalBackend": _timed(lambda: backend(n, workdir), n),
            "xargs -P2 (again)": (xargs(n), None),
        }
    floor = (results["xargs -P2"][0] + results["xargs -P2 (again)"][0]) / 2
    print(f"{n} x /bin/true on 2 slots (xargs floor: mean of the two xargs runs)")
    for name, (rate, cpu) in results.items():
        parent = f"  parent CPU {cpu:5.0f} us/launch" if cpu is not None else ""
        print(f"  {name:20s} {rate:8.0f} tasks/s  {rate / floor:5.2f}x xargs{parent}")


if __name__ == "__main__":
    main()
