"""What each backend costs against its own floor, measured in the same run, against its speed targets.

One section per backend; each prints its workload, its floor, both times and the ratio with its target.

Dask (``--backend dask``)
    N ``/bin/true`` tasks (default 10,000) clustered by C (default 100): N/C seqexec cluster jobs run by
    the runner a plan names (``codegen.seqexec_runner``: the compiled ``sheaf-cluster-c`` where it was
    built), each one ``Launch`` handed to a ``DaskBackend`` on a LocalCluster it owns (one worker, a
    thread per CPU).  Floor: a plain 2-thread pool (``ThreadPoolExecutor``) running the same N commands
    with ``subprocess.run``.  Target: Dask throughput >= 0.8x the floor's.  A second line runs the N/C
    cluster jobs themselves on the same 2-thread pool: what clustering costs, apart from what Dask
    costs.  Start-up -- the LocalCluster, and each worker's first imports and guard, which the backend
    does before its first task -- is paid once per run, not per task: it is printed apart and the
    target ratio leaves it out; a second ratio counts it, for the whole picture.

Slurm (``--backend slurm``)
    On the tests' private single-node cluster (``tests/slurm_cluster.py``, whose configuration has
    ``SchedulerParameters=batch_sched_delay=0``; needs root and Debian's slurm-wlm/munge, else the
    section says why and is skipped):

    - a LEVELS x WIDTH DAG of ``sleep SLEEP`` jobs (each level's nodes children of every node of the
      level above), run by ``sheaf run --backend slurm``'s engine and backend, against a shell script
      that submits the same jobs with ``sbatch --dependency=afterok:<parents>`` and waits until
      ``squeue`` lists none (target: <= 1.05x), with the controller RPCs per job from ``sdiag`` before
      and after (target: <= 2.5; the messages slurmd sends for every job are counted apart, since they
      are the same however the job was submitted);
    - a chain of CHAIN such jobs, the same two ways (target: <= 1.1x);
    - SLURM_TASKS ``/bin/true`` clustered into 2 jobs (``sheaf-cluster`` seqexec files, one per job)
      against one ``sbatch`` job whose script runs the commands (target: <= 1.5x).

    Every job asks for 1 CPU and 64 MB both ways (without ``--mem`` a job would take the whole node's
    memory and the jobs would run one at a time).  Figures are wall-clock seconds of one run each.

    usage: python benchmarks/backend_overhead.py [--backend dask] [--tasks N] [--cluster C] [--repeats R]
           python benchmarks/backend_overhead.py --backend slurm [--levels 4] [--width 25] [--chain 8]
                                                 [--slurm-tasks 1000] [--sleep 1]
"""

from __future__ import annotations

import argparse
import itertools
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the Slurm test cluster

import slurm_cluster  # noqa: E402
from sheaf.backends.slurm import SlurmBackend  # noqa: E402
from sheaf.backends.slurm._ctl import RateLimit, SlurmCommands  # noqa: E402
from sheaf.classad import ClassAd  # noqa: E402
from sheaf.codegen._write import seqexec_runner  # noqa: E402
from sheaf.engine import Exited, Launch, run_workflow  # noqa: E402

TRUE = shutil.which("true") or "/bin/true"
CLUSTER = str(Path(sys.executable).parent / "sheaf-cluster")
# what a plan's seqexec clusters run: the compiled sheaf-cluster-c where it was built
RUNNER, RUNNER_ENV = seqexec_runner()


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
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict(RUNNER_ENV)}
        launches.append(Launch(key=f"{name}#0", node=name, attempt=0, argv=(RUNNER, path), env=env, cwd=tmp,
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
    print(f"== Dask: {n} /bin/true tasks clustered by {per} ({len(launches)} tasks, {RUNNER}), "
          f"best of {repeats}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"   start-up: LocalCluster and warmed worker {up:.2f} s (not counted)")
    for name, took in (("2-thread pool, one command a call", floor),
                       ("2-thread pool, the seqexec cluster jobs", clusters),
                       ("DaskBackend, the seqexec cluster jobs", dask)):
        print(f"   {name:<42} {took:7.2f} s {n / took:8.0f} tasks/s")
    print(f"   Dask / floor throughput: {floor / dask:.2f}x (target >= 0.80x); "
          f"Dask's own cost, against the same cluster jobs on the pool: {clusters / dask:.2f}x; "
          f"with the start-up counted: {floor / (dask + up):.2f}x")



# -- Slurm -------------------------------------------------------------------------------------------
# messages slurmd (not the submitting client) sends the controller for every job
DAEMON_RPCS = frozenset({"REQUEST_COMPLETE_BATCH_SCRIPT", "MESSAGE_EPILOG_COMPLETE", "REQUEST_STEP_COMPLETE",
                         "MESSAGE_NODE_REGISTRATION_STATUS", "REQUEST_COMPLETE_PROLOG",
                         "REQUEST_STATS_INFO"})


def _levels(levels: int, width: int) -> list[list[str]]:
    return [[f"n{level}_{i}" for i in range(width)] for level in range(levels)]


def _sheaf_dag(directory: Path, layers: list[list[str]], argv: str) -> None:
    (directory / "job.sub").write_text("universe = vanilla\nexecutable = /bin/sh\n"
                                       f"arguments = \"-c '{argv}'\"\n"
                                       "output = /dev/null\nerror = /dev/null\nrequest_cpus = 1\n"
                                       "request_memory = 64\nqueue\n")
    lines = [f"JOB {node} job.sub" for layer in layers for node in layer]
    lines += [f"PARENT {' '.join(up)} CHILD {' '.join(down)}"
              for up, down in itertools.pairwise(layers)]
    (directory / "wf.dag").write_text("\n".join(lines) + "\n")


def _raw_script(directory: Path, layers: list[list[str]], command: str) -> Path:
    """The floor: sbatch with afterok dependencies, then wait until squeue lists no job."""
    lines = ["#!/bin/sh", "set -e"]
    for level, layer in enumerate(layers):
        for _node in layer:
            dep = f"--dependency=afterok:$(cat {directory}/ids{level - 1} | paste -sd:)" if level else ""
            lines.append(f"sbatch --parsable --cpus-per-task=1 --mem=64 -o /dev/null {dep} "
                         f"--wrap '{command}' >> {directory}/ids{level}")
    lines.append('while [ -n "$(squeue --noheader --me)" ]; do sleep 0.1; done')
    script = directory / "raw.sh"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def _timed(what: Callable[[], object]) -> float:
    start = time.perf_counter()
    what()
    return time.perf_counter() - start


def _rpcs(commands: SlurmCommands, what: Callable[[], object]) -> tuple[float, int, int]:
    """(seconds, client RPCs, slurmd's RPCs) of ``what``."""
    before = commands.sdiag_rpcs()
    seconds = _timed(what)
    after = commands.sdiag_rpcs()
    diff = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    daemon = sum(v for k, v in diff.items() if k in DAEMON_RPCS)
    return seconds, sum(diff.values()) - daemon, daemon


def _run_sheaf(cluster: slurm_cluster.Cluster, directory: Path) -> None:
    backend = SlurmBackend(str(directory / "sheaf-slurm"), env=cluster.env, rate=RateLimit(100.0, 200))
    result = run_workflow(str(directory), backend=backend, handle_signals=False)
    if not result.succeeded:
        raise SystemExit(f"the sheaf run failed: {result.failed_nodes[:3]}")


def _compare(cluster: slurm_cluster.Cluster, name: str, layers: list[list[str]], command: str,
             target: float) -> None:
    jobs = sum(len(layer) for layer in layers)
    commands = SlurmCommands(cluster.env)
    with tempfile.TemporaryDirectory() as tmp:
        raw_dir, sheaf_dir = Path(tmp, "raw"), Path(tmp, "sheaf")
        raw_dir.mkdir()
        sheaf_dir.mkdir()
        script = _raw_script(raw_dir, layers, command)
        raw, raw_client, raw_daemon = _rpcs(commands, lambda: subprocess.run(
            [str(script)], env=cluster.env, check=True, stdout=subprocess.DEVNULL))
        _sheaf_dag(sheaf_dir, layers, command)
        ours, client, daemon = _rpcs(commands, lambda: _run_sheaf(cluster, sheaf_dir))
    print(f"{name}: {jobs} jobs  sbatch+afterok script {raw:7.2f} s   sheaf {ours:7.2f} s   "
          f"ratio {ours / raw:5.2f} (target <= {target})")
    print(f"    controller RPCs per job: sheaf {client / jobs:4.2f} (target <= 2.5), "
          f"script {raw_client / jobs:4.2f}; slurmd's per job: {daemon / jobs:4.2f} (sheaf) / "
          f"{raw_daemon / jobs:4.2f} (script)")


def _clustered(cluster: slurm_cluster.Cluster, tasks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "all.sh"
        script.write_text("#!/bin/sh\n" + "/bin/true\n" * tasks)
        submit = root / "raw.sh"
        submit.write_text(f"#!/bin/sh\nsbatch --cpus-per-task=1 --mem=64 -o /dev/null {script}\n"
                          'while [ -n "$(squeue --noheader --me)" ]; do sleep 0.1; done\n')
        submit.chmod(0o755)
        raw = _timed(lambda: subprocess.run([str(submit)], env=cluster.env, check=True,
                                            stdout=subprocess.DEVNULL))
        half = [tasks // 2, tasks - tasks // 2]
        for part, count in enumerate(half):
            (root / f"part{part}.in").write_text("".join(f"#@ {i + 1} bench::true ID{i + 1:07d}\n/bin/true\n"
                                                         for i in range(count)))
        (root / "job.sub").write_text(f"universe = vanilla\nexecutable = {CLUSTER}\narguments = $(part)\n"
                                      "output = /dev/null\nerror = /dev/null\nrequest_memory = 64\nqueue\n")
        (root / "wf.dag").write_text("".join(f'JOB c{p} job.sub\nVARS c{p} part="{root}/part{p}.in"\n'
                                             for p in range(2)))
        ours = _timed(lambda: _run_sheaf(cluster, root))
    print(f"{tasks} /bin/true clustered into 2 jobs: one sbatch job running them {raw:6.2f} s"
          f"   sheaf {ours:6.2f} s   ratio {ours / raw:5.2f} (target <= 1.5)")


def slurm_section(args: argparse.Namespace) -> None:
    reason = slurm_cluster.unavailable()
    if reason is not None:
        print(f"== Slurm: skipped: {reason}")
        return
    with slurm_cluster.cluster_running() as cluster:
        config = cluster.run("scontrol", "show", "config").stdout
        scheduler = next((line.split("=", 1)[1].strip() for line in config.splitlines()
                          if line.startswith("SchedulerParameters")), "?")
        print(f"{cluster.run('sinfo', '--version').stdout.strip()}, one node of {cluster.cpus} CPUs, "
              f"SchedulerParameters={scheduler}")
        time.sleep(1.0)  # slurmd's first registration settles
        cmd = f"sleep {args.sleep}"
        _compare(cluster, f"{args.levels}x{args.width} DAG of '{cmd}'", _levels(args.levels, args.width), cmd,
                 1.05)
        _compare(cluster, f"chain of {args.chain} '{cmd}'", _levels(args.chain, 1), cmd, 1.1)
        _clustered(cluster, args.slurm_tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["dask", "slurm"], action="append")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--cluster", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--levels", type=int, default=4)
    parser.add_argument("--width", type=int, default=25)
    parser.add_argument("--chain", type=int, default=8)
    parser.add_argument("--slurm-tasks", type=int, default=1000)
    parser.add_argument("--sleep", default="1")
    args = parser.parse_args()
    for name in args.backend or ["dask"]:
        if name == "dask":
            dask_section(args.tasks, args.cluster, args.repeats)
        elif name == "slurm":
            slurm_section(args)


if __name__ == "__main__":
    main()
