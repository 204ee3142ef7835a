"""Engine throughput: N ``/bin/true`` tasks on a 2-slot local pool, side by side with the floors and peers.

    .venv/bin/python benchmarks/engine_throughput.py [--tasks 10000] [--peer-tasks 2000] [--no-peers]

Shapes (all in one run): independent tasks and a 4-level DAG (each node has 2 parents in the level
above), unclustered (one node per task, one submit file per node, as pegasus-plan writes them) and
clustered (seqexec: one ``sheaf-cluster`` node per 50 tasks).  The engine runs in this process
through ``run_planned`` (the library call behind ``sheaf run``; interpreter start-up excluded, DAG
and submit-file parsing included).

Floors: ``xargs -P2`` fork/exec of the same tasks; batched: ``xargs -P2`` over shell scripts of 50
``/bin/true`` each.  Peers: GNU make -j2 (same N); Snakemake, Parsl, Dask, Ray installed into a
throwaway venv under /tmp (not project dependencies), run on ``--peer-tasks`` tasks (Snakemake on
at most 500: it manages a few dozen tasks/s), skipped with a note when they cannot be installed.

Also measured: the journal's cost per node (bytes, and µs of write+fsync) in the engine runs, and the
same records written with the same group-commit sizes to SQLite in WAL mode (synchronous=FULL) versus
the append-only log with fsync - the numbers behind the journal's design.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import msgspec

from sheaf.cli._run import run_planned
from sheaf.engine import state_paths
from sheaf.engine._journal import read_records

BIN = Path(sys.executable).parent
CLUSTER = 50
PEER_VENV = Path("/tmp/sheaf-bench-peers")
SUB = ("universe = vanilla\nexecutable = {exe}\narguments = {args}\n"
       "output = /dev/null\nerror = /dev/null\nqueue\n")


def build(root: Path, name: str, n: int, levels: int, clustered: bool) -> Path:
    d = root / name
    d.mkdir()
    (d / "pool.conf").write_text("NUM_CPUS = 2\n")
    rng = random.Random(7)
    jobs = n // CLUSTER if clustered else n
    per_level = jobs // levels
    lines = []
    for i in range(jobs):
        job = f"j{i:06d}"
        if clustered:
            (d / f"{job}.in").write_text("/bin/true\n" * CLUSTER)
            (d / f"{job}.sub").write_text(SUB.format(exe=BIN / "sheaf-cluster", args=f"{d / job}.in"))
        else:
            (d / f"{job}.sub").write_text(SUB.format(exe="/bin/true", args=""))
        lines.append(f"JOB {job} {job}.sub")
        level = i // per_level
        if 0 < level < levels:
            parents = rng.sample(range((level - 1) * per_level, level * per_level), 2)
            lines.append(f"PARENT {' '.join(f'j{p:06d}' for p in parents)} CHILD {job}")
    (d / "wf.dag").write_text("\n".join(lines) + "\n")
    return d


def run_engine(d: Path, n: int) -> dict[str, float]:
    start = time.perf_counter()
    result = run_planned(str(d), pool_config=str(d / "pool.conf"))
    wall = time.perf_counter() - start
    assert result.succeeded, result.failed_nodes[:3]
    journal = state_paths(str(d / "wf.dag"))["journal"]
    nodes = result.total
    return {"seconds": wall, "tasks": n, "journal_bytes_per_node": os.path.getsize(journal) / nodes,
            "journal_us_per_node": result.extra.get("journal_seconds", 0.0) / nodes * 1e6,
            "commits": result.journal_commits, "nodes": nodes}


def timed(cmd: list[str], **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def floors(root: Path, n: int) -> dict[str, float]:
    (root / "list").write_text("x\n" * n)
    batches = root / "batches"
    batches.mkdir(exist_ok=True)
    for i in range(n // CLUSTER):
        (batches / f"b{i}.sh").write_text("/bin/true\n" * CLUSTER)
    (root / "blist").write_text("".join(f"{batches}/b{i}.sh\n" for i in range(n // CLUSTER)))
    with open(root / "list") as stdin:
        xargs = timed(["xargs", "-P2", "-n1", "/bin/true"], stdin=stdin)
    with open(root / "blist") as stdin:
        batched = timed(["xargs", "-P2", "-n1", "/bin/sh"], stdin=stdin)
    return {"xargs": xargs, "batched": batched}


def make_peer(root: Path, n: int) -> float | None:
    if shutil.which("make") is None:
        return None
    targets = " ".join(f"t{i}" for i in range(n))
    rules = "".join(f"t{i}:\n\t@/bin/true\n" for i in range(n))
    (root / "Makefile").write_text(f".PHONY: all {targets}\nall: {targets}\n{rules}")
    return timed(["make", "-j2", "-s", "-f", str(root / "Makefile")], cwd=root)


PEER_SCRIPTS = {
    "dask": """
        import subprocess, sys, time
        from dask.distributed import Client, LocalCluster
        n = int(sys.argv[1])
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        with cluster as c, Client(c) as cl:
            t = time.perf_counter()
            cl.gather(cl.map(lambda i: subprocess.run(["/bin/true"]).returncode, range(n)))
            print(time.perf_counter() - t)
    """,
    "ray": """
        import subprocess, sys, time, ray
        n = int(sys.argv[1])
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        @ray.remote
        def task(i):
            return subprocess.run(["/bin/true"]).returncode
        t = time.perf_counter()
        ray.get([task.remote(i) for i in range(n)])
        print(time.perf_counter() - t)
    """,
    "parsl": """
        import sys, time, parsl
        from parsl.config import Config
        from parsl.executors import HighThroughputExecutor
        from parsl.providers import LocalProvider
        from parsl.app.app import bash_app
        n = int(sys.argv[1])
        parsl.load(Config(executors=[HighThroughputExecutor(max_workers_per_node=2,
                   provider=LocalProvider(init_blocks=1, max_blocks=1))]))
        @bash_app
        def task():
            return "/bin/true"
        t = time.perf_counter()
        [f.result() for f in [task() for _ in range(n)]]
        print(time.perf_counter() - t)
        parsl.dfk().cleanup()
    """,
}


def peer_venv() -> Path | None:
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    missing = [p for p in ("snakemake", "parsl", "dask[distributed]", "ray")
               if subprocess.run([str(python), "-c", f"import {p.split('[')[0]}"],
                                 capture_output=True, check=False).returncode]
    if missing and subprocess.run(pip + missing, capture_output=True, check=False).returncode:
        for p in missing:  # install what installs; the rest are reported as skipped
            subprocess.run([*pip, p], capture_output=True, check=False)
    return python


def run_peer(python: Path, name: str, root: Path, n: int) -> float | str:
    if name == "snakemake":
        work = root / "smk"
        work.mkdir(exist_ok=True)
        (work / "Snakefile").write_text(textwrap.dedent(f"""
            rule all:
                input: expand("out/{{i}}", i=range({n}))
            rule task:
                output: touch("out/{{i}}")
                shell: "/bin/true"
            """))
        exe = python.parent / "snakemake"
        if not exe.exists():
            return "not installed"
        start = time.perf_counter()
        done = subprocess.run([str(exe), "-j2", "--quiet", "all"], cwd=work, capture_output=True, text=True,
                              check=False)
        return time.perf_counter() - start if done.returncode == 0 else f"failed: {done.stderr[-200:]}"
    script = root / f"peer_{name}.py"  # not "<name>.py": it would shadow the package it imports
    body = textwrap.indent(textwrap.dedent(PEER_SCRIPTS[name]), "    ")
    script.write_text(f"if __name__ == '__main__':  # worker processes re-import this file\n{body}")
    env = {**os.environ, "PATH": f"{python.parent}:{os.environ.get('PATH', '')}"}  # parsl's interchange
    done = subprocess.run([str(python), str(script), str(n)], capture_output=True, text=True, cwd=root,
                          check=False, env=env, timeout=900)
    if done.returncode:
        return "not installed" if "ModuleNotFoundError" in done.stderr else f"failed: {done.stderr[-200:]}"
    return float(done.stdout.strip().splitlines()[-1])


def journal_formats(journal: str, commits: int) -> dict[str, tuple[float, float]]:
    """The same records, same group sizes: (µs per record, bytes per record) for log vs SQLite WAL."""
    records = [msgspec.to_builtins(r) for r in read_records(journal)]  # as the lines on disk
    lines = [repr(r).encode() + b"\n" for r in records]
    group = max(1, len(records) // max(1, commits))
    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(dir=os.path.dirname(journal)) as tmp:
        path = os.path.join(tmp, "log")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        start = time.perf_counter()
        for i in range(0, len(lines), group):
            os.write(fd, b"".join(lines[i:i + group]))
            os.fsync(fd)
        out["append-only log + fsync"] = ((time.perf_counter() - start) / len(lines) * 1e6,
                                          os.path.getsize(path) / len(lines))
        os.close(fd)
        db = sqlite3.connect(os.path.join(tmp, "j.db"), isolation_level=None)
        db.execute("pragma journal_mode=wal")
        db.execute("pragma synchronous=full")
        db.execute("create table j (k text, t real, node text, a text, b text, attempt int, info text)")
        rows = [(r[0], r[1], *(str(x) for x in (r[2:] + [None] * 5)[:5])) for r in records]
        start = time.perf_counter()
        for i in range(0, len(rows), group):
            db.execute("begin")
            db.executemany("insert into j values (?,?,?,?,?,?,?)", rows[i:i + group])
            db.execute("commit")
        seconds = time.perf_counter() - start
        db.execute("pragma wal_checkpoint(truncate)")
        db.close()
        out["SQLite WAL, synchronous=FULL"] = (seconds / len(rows) * 1e6,
                                               os.path.getsize(os.path.join(tmp, "j.db")) / len(rows))
    return out


def compile_sheaf() -> None:
    """Write sheaf's bytecode first: with PYTHONDONTWRITEBYTECODE set and stale caches every
    ``sheaf-cluster`` start would compile its modules again (installed packages ship compiled)."""
    import compileall

    import sheaf

    compileall.compile_dir(os.path.dirname(sheaf.__file__), quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--peer-tasks", type=int, default=2_000)
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    n = args.tasks
    compile_sheaf()
    root = Path(tempfile.mkdtemp(prefix="sheaf-bench-"))
    print(f"{n} /bin/true tasks, 2 slots, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"work dir {root}")
    rows: list[tuple[str, int, float | str, str]] = []
    floor = floors(root, n)
    rows.append(("floor: xargs -P2", n, floor["xargs"], "xargs"))
    rows.append(("floor: xargs -P2, batched by 50", n, floor["batched"], "batched"))
    engine: dict[str, dict[str, float]] = {}
    adjacent: dict[str, float] = {}  # the floor measured right before each engine run (load drifts)
    for name, levels, clustered in (("independent", 1, False), ("dag-4-level", 4, False),
                                    ("independent-clustered", 1, True), ("dag-4-level-clustered", 4, True)):
        base = "batched" if clustered else "xargs"
        if clustered and not (BIN / "sheaf-cluster").exists():
            rows.append((f"sheaf {name}", n, "skipped: sheaf-cluster not installed", base))
            continue
        directory = build(root, name, n, levels, clustered)
        adjacent[name] = floors(root / name, n)[base]
        engine[name] = run_engine(directory, n)
        rows.append((f"sheaf {name}", n, engine[name]["seconds"], base))
    made = make_peer(root, n)
    rows.append(("peer: GNU make -j2", n, made if made is not None else "skipped: no make", "xargs"))
    if not args.no_peers:
        python = peer_venv()
        m = args.peer_tasks
        for peer in ("ray", "parsl", "dask", "snakemake"):
            k = min(m, 500) if peer == "snakemake" else m
            seconds = run_peer(python, peer, root, k) if python else "no venv"
            rows.append((f"peer: {peer}", k, seconds, "xargs"))
    print(f"\n{'run':40} {'tasks':>7} {'seconds':>9} {'tasks/s':>9} {'vs floor':>9} "
          f"{'vs adjacent floor':>18}")
    for label, tasks, seconds, base in rows:
        if isinstance(seconds, str):
            print(f"{label:40} {tasks:7d} {seconds}")
            continue
        rate = tasks / seconds
        near = adjacent.get(label.removeprefix("sheaf "))
        beside = f"{rate / (n / near):17.2f}x" if near else ""
        print(f"{label:40} {tasks:7d} {seconds:9.2f} {rate:9.0f} {rate / (n / floor[base]):8.2f}x {beside}")
    print("\njournal cost per node (engine runs): ")
    for name, stats in engine.items():
        print(f"  {name:28} {stats['journal_bytes_per_node']:6.0f} bytes, "
              f"{stats['journal_us_per_node']:6.0f} µs write+fsync, "
              f"{stats['commits']:.0f} commits for {stats['nodes']:.0f} nodes")
    if engine:
        first = next(iter(engine))
        journal = state_paths(str(root / first / "wf.dag"))["journal"]
        print(f"journal formats, same records and group sizes as '{first}':")
        for fmt, (us, size) in journal_formats(journal, int(engine[first]["commits"])).items():
            print(f"  {fmt:32} {us:7.1f} µs/record {size:6.0f} bytes/record")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
