"""Fixtures of the backend tests: the private Slurm cluster (``tests/slurm_cluster.py``), one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from slurm_cluster import Cluster, cluster_running, unavailable


@pytest.fixture(scope="module")  # one per module: it starts in about a second
def slurm() -> Iterator[Cluster]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with cluster_running() as cluster:
        yield cluster
