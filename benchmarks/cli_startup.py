"""Start-up benchmark: the CPU one ``sheaf`` command costs on a small workflow, beside bare Python.

Every sub-workflow job of a hierarchical plan runs ``sheaf plan`` and ``sheaf run`` (or their
``pegasus-plan`` shim), and each job of a small workflow is seconds long: what a command costs
before it does anything is paid once per job.  This script runs, ``--runs`` times each and
interleaved round by round (a slow spell of the machine falls on all of them):

- the baseline: ``python -c "import click"``, the interpreter and the command-line library every
  ``sheaf`` command loads;
- ``sheaf --version``;
- ``sheaf plan`` of the bundled blackdiamond example, unclustered and ``--cluster horizontal``,
  into a base directory that already holds ``--history`` earlier runs (automatic clustering reads
  earlier runs' records; a plan that clusters no group automatically should not);
- ``sheaf run`` of one of those plans (the example's eight jobs: mostly waiting on them);
- ``sheaf status`` of the finished run.

It prints each command's mean CPU seconds (user + system, the process and what it waited for: the
kernel counts them in clock ticks, which a mean over the runs evens out) and median wall seconds,
and the CPU's ratio to the baseline's.

Usage::

    .venv/bin/python benchmarks/cli_startup.py                 # 10 runs each, 20 earlier runs
    .venv/bin/python benchmarks/cli_startup.py --runs 3 --history 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "blackdiamond"
SHEAF = str(Path(sys.executable).with_name("sheaf"))


def _timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """(CPU s of the process and its reaped children, wall s, stdout) of one run, which must succeed."""
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = os.times()
    if done.returncode != 0:
        sys.exit(f"cli_startup: {' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return cpu, wall, done.stdout


def _submit_dir(stdout: str) -> str:
    return next(line.removeprefix("submit directory: ") for line in stdout.splitlines()
                if line.startswith("submit directory: "))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    parser.add_argument("--history", type=int, default=20,
                        help="earlier runs under the plans' base directory (default 20)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.history < 0:
        parser.error("--runs must be 1 or more and --history 0 or more")
    with tempfile.TemporaryDirectory(prefix="sheaf-startup-") as tmp:
        work = Path(tmp) / "blackdiamond"
        shutil.copytree(EXAMPLE, work)
        base = str(Path(tmp) / "runs")
        plan = [SHEAF, "plan", "workflow.yml", "--dir", base, "--input-dir", "input"]
        for _ in range(args.history):  # earlier runs, run to the end so that their records exist
            _timed([SHEAF, "run", _submit_dir(_timed(plan, work)[2])], work)
        commands: dict[str, list[str]] = {
            "python -c 'import click' (baseline)": [sys.executable, "-c", "import click"],
            "sheaf --version": [SHEAF, "--version"],
            "sheaf plan": plan,
            "sheaf plan --cluster horizontal": [*plan, "--cluster", "horizontal"],
        }
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in
                                                          [*commands, "sheaf run", "sheaf status"]}
        for _ in range(args.runs):
            for name, command in commands.items():
                cpu, wall, out = _timed(command, work)
                figures[name].append((cpu, wall))
                if name == "sheaf plan":
                    directory = _submit_dir(out)
                    cpu, wall, _ = _timed([SHEAF, "run", directory], work)
                    figures["sheaf run"].append((cpu, wall))
                    cpu, wall, _ = _timed([SHEAF, "status", directory], work)
                    figures["sheaf status"].append((cpu, wall))
    base_cpu = statistics.fmean(cpu for cpu, _ in figures["python -c 'import click' (baseline)"])
    print(f"{args.runs} runs each, {args.history} earlier runs under the base directory; "
          "mean CPU, median wall")
    print(f"{'command':<40} {'cpu s':>7} {'wall s':>7} {'cpu/baseline':>13}")
    for name, rows in figures.items():
        cpu = statistics.fmean(c for c, _ in rows)
        wall = statistics.median(w for _, w in rows)
        print(f"{name:<40} {cpu:7.3f} {wall:7.3f} {cpu / base_cpu:13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
