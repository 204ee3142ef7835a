"""``sheaf predict --backend slurm`` on the tests' private Slurm cluster (``tests/slurm_cluster.py``):
the slots are the cluster's CPUs as sinfo reports them."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_platform import env, fan, predict_json

from slurm_cluster import cluster_running, unavailable

__all__ = ["env", "fan"]  # the fixtures this module's test takes


def test_a_real_slurm_cluster_gives_its_cpus(fan: Path, env: dict[str, str]) -> None:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with cluster_running() as cluster:
        got = predict_json(fan, {**env, "SLURM_CONF": cluster.env["SLURM_CONF"]}, "--backend", "slurm")
    assert got["slots"] == cluster.cpus
    assert got["slots_source"] == f"sinfo: {cluster.cpus} CPUs allocated or idle of {cluster.cpus}"
