"""Engine throughput: N ``/bin/true`` jobs planned by ``sheaf plan`` and run by ``sheaf run``, against
``xargs -P2`` and ``make -j2`` over the same N commands, all measured in one run.

    .venv/bin/python benchmarks/engine_throughput.py [--tasks 10000] [--rounds 3] [--peers]

What is timed
    ``sheaf run DIR --pool-config pool.conf`` (``NUM_CPUS = 2``) as a subprocess, from start to exit:
    interpreter start-up, imports, reading the DAG and every submit description, running every node
    with each state change journaled and fsync'd before the engine acts on it, and the reports.
    Planning (``sheaf plan``) is timed apart and not counted.

Shapes
    ``unclustered``: a workflow of N independent ``/bin/true`` jobs (transformation ``true`` at site
    ``local``), planned as ``sheaf plan`` writes it (one node per job, plus the plan's create-dir
    job); ``clustered``: the same workflow with ``-C horizontal`` and ``pegasus.clusters.size = 50``
    (one cluster node per 50 tasks, run by the compiled ``sheaf-cluster-c`` where it was built);
    ``clustered-py``: the same, planned with ``SHEAF_PURE_PYTHON=1`` so the Python ``sheaf-cluster``
    runs the clusters (the figure before the compiled runner).  ``--shapes`` picks some.

Baselines, measured right before *and* right after each engine run (the machine is shared and its
load drifts; the ratio uses the mean of the two): ``xargs -P2 -n1 /bin/true`` over N lines and GNU
``make -j2`` over N phony targets running ``/bin/true`` (unclustered); ``xargs -P2 -n1 /bin/sh`` over
the plan's own ``.in`` batch files, 50 ``/bin/true`` lines each (clustered).  Each shape runs
``--rounds`` rounds; the round with the median ratio is reported, with the 1-minute load average
at its start (the best round would reward a lucky moment on a machine whose load swings from 1 to 5).

Targets: unclustered >= 1.0x xargs and >= 0.7x make -j2; clustered >= 0.8x xargs sh.

``--events``: instead, each shape runs ``--rounds`` times with the events database loaded beside
the engine (``sheaf.monitor``; the default) and as many times with ``SHEAF_EVENTS=0``, interleaved;
the ratio of the two medians is reported against its target, <= 1.10.

``--peers``: Snakemake, Parsl, Dask and Ray installed into a throwaway venv under /tmp (not project
dependencies), run on ``--peer-tasks`` tasks.  The journal section compares the engine's own
records written as an append-only log with fsync against SQLite in WAL mode (synchronous=FULL), at
the same group-commit sizes -- the numbers behind the journal's design.  The restart line times
``sheaf run`` given the complete unclustered run again (the DAG read, the journal replayed, nothing
run) beside the journal's replay alone and ``sheaf --version``.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import msgspec

from sheaf.engine import read_journal
from sheaf.engine._journal import read_records

BIN = Path(sys.executable).parent
CLUSTER = 50
PEER_VENV = Path("/tmp/sheaf-bench-peers")
TARGETS = {"xargs": 1.0, "make": 0.7, "xargs sh": 0.8}


def workflow(path: Path, n: int) -> None:
    """N independent /bin/true jobs, catalogs inline (Pegasus 5.0 YAML)."""
    head = textwrap.dedent("""\
        pegasus: 5.0.4
        name: bench
        transformationCatalog:
          pegasus: 5.0.4
          transformations:
          - name: "true"
            sites:
            - {name: local, pfn: /bin/true, type: installed}
        siteCatalog:
          pegasus: 5.0.4
          sites:
          - {name: local, directories: []}
        jobs:
        """)
    job = '- {{type: job, name: "true", id: ID{:07d}, arguments: [], uses: []}}\n'
    jobs = "".join(job.format(i) for i in range(n))
    path.write_text(head + jobs + "jobDependencies: []\n")


#: shape -> (clustered, environment of ``sheaf plan``)
SHAPES: dict[str, tuple[bool, dict[str, str]]] = {
    "unclustered": (False, {}), "clustered": (True, {}),
    "clustered-py": (True, {"SHEAF_PURE_PYTHON": "1"}),
}


def plan(wf: Path, out: Path, clustered: bool, env: dict[str, str] | None = None) -> float:
    # --dir is a base, as pegasus-plan's; --relative-dir puts the submit directory exactly at ``out``
    cmd = [str(BIN / "sheaf"), "plan", str(wf), "-d", str(out.parent), "--relative-dir", out.name,
           "-s", "local"]
    if clustered:
        cmd += ["-C", "horizontal", "-D", f"pegasus.clusters.size={CLUSTER}"]
    return timed(cmd, env={**os.environ, **(env or {})})


def timed(cmd: list[str], **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def sheaf_run(directory: Path, pool: Path, events: bool = True) -> float:
    for stale in (".sheaf", "jobstate.log"):  # a second round starts fresh, not "already complete"
        target = directory / stale
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    for rescue in glob.glob(str(directory / "*.rescue*")) + glob.glob(str(directory / "*.events.db*")):
        os.unlink(rescue)
    env = {**os.environ, "SHEAF_EVENTS": "1" if events else "0", "SHEAF_HOME": str(directory.parent / "home")}
    return timed([str(BIN / "sheaf"), "run", str(directory), "--pool-config", str(pool)], env=env)


def events_overhead(root: Path, n: int, rounds: int) -> None:
    """``--events``: each shape run ``rounds`` times with the events loader and as many without,
    interleaved (the order alternates each round); the ratio of the medians, target <= 1.10."""
    wf = root / "wf.yml"
    workflow(wf, n)
    pool = root / "pool.conf"
    pool.write_text("NUM_CPUS = 2\n")
    print(f"\n{'shape':12} {'tasks':>6} {'with s':>8} {'without s':>10} {'ratio':>6} {'target':>7}")
    for shape, clustered in (("unclustered", False), ("clustered", True)):
        directory = root / shape
        plan(wf, directory, clustered)
        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(rounds):
            for events in ((True, False) if i % 2 == 0 else (False, True)):
                times[events].append(sheaf_run(directory, pool, events))
            print(f"  {shape} round {i + 1}: with {times[True][-1]:.2f} s, without {times[False][-1]:.2f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        with_s, without_s = (sorted(times[e])[len(times[e]) // 2] for e in (True, False))
        ratio = with_s / without_s
        print(f"{shape:12} {n:>6} {with_s:>8.2f} {without_s:>10.2f} {ratio:>6.3f} {'<= 1.10':>7} "
              f"{'ok' if ratio <= 1.10 else 'MISSED'}", flush=True)


def xargs(root: Path, n: int) -> float:
    (root / "list").write_text("x\n" * n)
    with open(root / "list") as stdin:
        return timed(["xargs", "-P2", "-n1", "/bin/true"], stdin=stdin)


def xargs_sh(root: Path, batches: list[str]) -> float:
    (root / "blist").write_text("".join(b + "\n" for b in batches))
    with open(root / "blist") as stdin:
        return timed(["xargs", "-P2", "-n1", "/bin/sh"], stdin=stdin)


def make(root: Path, n: int) -> float:
    if not (root / "Makefile").exists():
        targets = " ".join(f"t{i}" for i in range(n))
        rules = "".join(f"t{i}:\n\t@/bin/true\n" for i in range(n))
        (root / "Makefile").write_text(f".PHONY: all {targets}\nall: {targets}\n{rules}")
    return timed(["make", "-j2", "-s", "-f", str(root / "Makefile")], cwd=root)


def around(baseline: dict[str, object], engine: object) -> tuple[dict[str, float], float]:
    """Each baseline before and after the engine run: (mean baseline seconds, engine seconds)."""
    before = {name: fn() for name, fn in baseline.items()}  # type: ignore[operator]
    seconds = engine()  # type: ignore[operator]
    after = {name: fn() for name, fn in baseline.items()}  # type: ignore[operator]
    return {name: (before[name] + after[name]) / 2 for name in baseline}, seconds


def measure(root: Path, n: int, rounds: int, shapes: list[str],
            ) -> list[tuple[str, float, dict[str, float], float]]:
    """Rows (shape, engine seconds, baseline seconds by name, load) - the median round of each shape."""
    wf = root / "wf.yml"
    workflow(wf, n)
    pool = root / "pool.conf"
    pool.write_text("NUM_CPUS = 2\n")
    rows = []
    for shape in shapes:
        clustered, plan_env = SHAPES[shape]
        directory = root / shape
        plan_s = plan(wf, directory, clustered, plan_env)
        batches = sorted(glob.glob(str(directory / "jobs" / "*" / "*.in")))
        bases: dict[str, object] = (
            {"xargs sh": lambda b=batches: xargs_sh(root, b)} if clustered
            else {"xargs": lambda: xargs(root, n), "make": lambda: make(root, n)})
        runs: list[tuple[float, tuple[str, float, dict[str, float], float]]] = []
        for _ in range(rounds):
            load = os.getloadavg()[0]
            base, seconds = around(bases, lambda d=directory: sheaf_run(d, pool))
            runs.append((min(base[k] / seconds for k in base), (shape, seconds, base, load)))
            print(f"  {shape}: {seconds:.2f} s, ratio {runs[-1][0]:.2f} (load {load:.1f})", flush=True)
        runs.sort(key=lambda run: run[0])
        print(f"  {shape}: planned in {plan_s:.2f} s; the median of {rounds} rounds kept", flush=True)
        rows.append(runs[len(runs) // 2][1])
    return rows


def report(rows: list[tuple[str, float, dict[str, float], float]], n: int) -> None:
    print(f"\n{'shape':12} {'tasks':>6} {'sheaf s':>8} {'tasks/s':>8} {'baseline':>9} {'base s':>7} "
          f"{'ratio':>6} {'target':>7} {'load':>5}")
    for shape, seconds, base, load in rows:
        for name, base_s in base.items():
            ratio = base_s / seconds
            verdict = "ok" if ratio >= TARGETS[name] else "MISS"
            print(f"{shape:12} {n:6d} {seconds:8.2f} {n / seconds:8.0f} {name:>9} {base_s:7.2f} "
                  f"{ratio:5.2f}x {TARGETS[name]:4.1f}x {verdict:4} {load:4.1f}")


def journal_formats(journal: str, group: int) -> dict[str, tuple[float, float]]:
    """The same records in groups of ``group``: (µs per record, bytes per record), log vs SQLite."""
    records = [msgspec.to_builtins(r) for r in read_records(journal)]  # as the lines on disk
    lines = [repr(r).encode() + b"\n" for r in records]
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


def journal_report(root: Path) -> None:
    journal = root / "unclustered" / ".sheaf" / "bench.dag.journal"
    if not journal.exists():
        return
    nodes = sum(1 for r in read_records(str(journal)) if getattr(r, "finish", None) == "done")
    print(f"\njournal: {journal.stat().st_size / max(1, nodes):.0f} bytes per node; the same records written "
          "in groups:")
    for group in (1, 8):
        for fmt, (us, size) in journal_formats(str(journal), group).items():
            print(f"  {group} per commit  {fmt:30} {us:7.1f} µs/record {size:6.0f} bytes/record")


def restart_report(root: Path, rounds: int) -> None:
    """``sheaf run`` given the unclustered run again once it is complete: the start-up that reads the
    DAG and replays the journal to find nothing to run, beside the journal's replay alone (in this
    process) and ``sheaf --version`` (the interpreter and the command line)."""
    directory = root / "unclustered"
    journal = directory / ".sheaf" / "bench.dag.journal"
    if not journal.exists():
        return
    env = {**os.environ, "SHEAF_HOME": str(root / "home")}
    again = min(timed([str(BIN / "sheaf"), "run", str(directory), "--pool-config", str(root / "pool.conf")],
                      env=env) for _ in range(rounds))
    version = min(timed([str(BIN / "sheaf"), "--version"]) for _ in range(rounds))
    replay = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        read_journal(str(journal))
        replay = min(replay, time.perf_counter() - start)
    print(f"\nthe complete run given again: {again:.2f} s (best of {rounds}); its journal "
          f"({journal.stat().st_size / 1e6:.1f} MB) replayed alone {replay:.2f} s; sheaf --version "
          f"{version:.2f} s")


PEER_SCRIPTS = {
    "dask": """
        import subprocess, sys, time
        from dask.distributed import Client, LocalCluster
        n = int(sys.argv[1])
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as c, Client(c) as cl:
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


def peer_venv() -> Path:
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


def peers(root: Path, m: int) -> None:
    python = peer_venv()
    print(f"\npeers ({m} tasks; Snakemake at most 500):")
    for peer in ("ray", "parsl", "dask", "snakemake"):
        k = min(m, 500) if peer == "snakemake" else m
        result = run_peer(python, peer, root, k)
        print(f"  {peer:10} {result if isinstance(result, str) else f'{k / result:8.0f} tasks/s'}")


def compile_sheaf() -> None:
    """Write sheaf's bytecode first: with stale caches every ``sheaf`` and ``sheaf-cluster`` start would
    compile its modules again (installed packages ship compiled)."""
    import compileall

    import sheaf

    compileall.compile_dir(os.path.dirname(sheaf.__file__), quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--peer-tasks", type=int, default=2_000)
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--events", action="store_true",
                        help="only compare runs with and without the events loader (monitor)")
    args = parser.parse_args()
    compile_sheaf()
    root = Path(tempfile.mkdtemp(prefix="sheaf-bench-"))
    print(f"{args.tasks} /bin/true tasks, 2 slots, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"work dir {root}")
    try:
        if args.events:
            events_overhead(root, args.tasks, args.rounds)
            return
        report(measure(root, args.tasks, args.rounds, args.shapes.split(",")), args.tasks)
        journal_report(root)
        restart_report(root, args.rounds)
        if args.peers:
            peers(root, args.peer_tasks)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
