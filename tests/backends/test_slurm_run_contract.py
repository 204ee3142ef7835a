"""The run contract (``contract.RunContract``) through ``sheaf run --backend slurm`` on the private test
cluster: kill -9 of the engine and a resume finish each task once (the jobs run on in Slurm and are
adopted or their exit records taken), and a job ``scancel``ed from outside is a failed attempt that
RETRY runs again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from slurm_cluster import Cluster

from .contract import RunContract, parent_of


class TestSlurmRunContract(RunContract):
    overhead = 1.5  # seconds: a Slurm job takes ~0.6-1.5 s from sbatch to its end on the test cluster

    @pytest.fixture(autouse=True)
    def _cluster(self, slurm: Cluster) -> None:
        self.cluster = slurm

    def run_args(self) -> list[str]:
        return ["--backend", "slurm"]

    def run_env(self) -> dict[str, str]:
        return {**super().run_env(), **self.cluster.env, "SHEAF_SLURM_SQUEUE_INTERVAL": "1",
                "SHEAF_SLURM_VANISH_GRACE": "3"}

    def kill_from_outside(self, pid: int) -> None:
        """``scancel`` of the job that runs ``pid`` (the ``SLURM_JOB_ID`` of its parent, sheaf's job
        wrapper: the job itself has exactly its launch's environment)."""
        environ = Path(f"/proc/{parent_of(pid)}/environ").read_bytes().split(b"\0")
        job = next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SLURM_JOB_ID="))
        subprocess.run(["scancel", job], env=self.cluster.env, check=True)
