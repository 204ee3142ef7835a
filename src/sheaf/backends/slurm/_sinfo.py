"""How many CPUs a Slurm cluster has, as ``sinfo`` reports them per node (run as an argument list,
never through a shell)."""

from __future__ import annotations

__all__ = ["SINFO_TIMEOUT", "cluster_cpus", "sinfo_cpus"]

import subprocess

#: seconds sinfo may take before the cluster counts as not answering
SINFO_TIMEOUT = 15.0


def cluster_cpus() -> tuple[int, int] | str:
    """(allocated + idle, total) CPUs of the cluster ``sinfo`` reaches, or why there is no answer."""
    argv = ["sinfo", "--noheader", "--Node", "--format", "%N %C"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SINFO_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return "sinfo not found, no Slurm cluster to ask"
    except subprocess.TimeoutExpired:
        return f"sinfo did not answer in {SINFO_TIMEOUT:g} s"
    except OSError as exc:
        return f"sinfo could not run: {exc.strerror}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[0]
        return f"sinfo failed: {said}"
    return sinfo_cpus(done.stdout)


def sinfo_cpus(text: str) -> tuple[int, int]:
    """(allocated + idle, total) CPUs of ``sinfo -N -o '%N %C'`` lines: a node in several partitions
    is listed once for each, and counted once; lines not of that form are skipped."""
    nodes: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, counts = line.strip().partition(" ")
        parts = counts.strip().split("/")
        if not name or len(parts) != 4 or not all(part.isdigit() for part in parts):
            continue
        allocated, idle, _other, total = (int(part) for part in parts)
        nodes[name] = (allocated + idle, total)
    return sum(u for u, _ in nodes.values()), sum(t for _, t in nodes.values())
