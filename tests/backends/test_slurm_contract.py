"""The Backend contract, run against the Slurm backend on the private test cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf.backends.slurm import SlurmBackend
from sheaf.backends.slurm._ctl import RateLimit
from sheaf.engine import Backend
from slurm_cluster import Cluster

from .contract import BackendContract


def slurm_backend(cluster: Cluster, state: Path, slots: int = 1000, **options: object) -> SlurmBackend:
    options = {"squeue_interval": 2.0, "vanish_grace": 3.0, "config": {"PERIODIC_EXPR_INTERVAL": "0.2"},
               **options}
    return SlurmBackend(str(state), max_queued=slots, env=cluster.env, **options)  # type: ignore[arg-type]


class TestSlurmBackendContract(BackendContract):
    overhead = 1.5   # seconds: a Slurm job takes ~0.6-1.5 s from sbatch to its end on the test cluster
    short_jobs = 20
    file_transfer = True

    @pytest.fixture(autouse=True)
    def _cluster(self, slurm: Cluster) -> None:
        self.cluster = slurm

    def make_backend(self, tmp_path: Path, slots: int) -> Backend:
        return slurm_backend(self.cluster, tmp_path / "slurm-state", slots, rate=RateLimit(100.0, 100))
