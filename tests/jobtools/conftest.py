"""Servers the transfer tests talk to, started once per test module on 127.0.0.1; both sheaf-clusters."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sheaf.codegen._write import COMPILED_CLUSTER
from transfer_servers import S3, FaultyHTTP, Sshd, start_s3, start_sshd


@pytest.fixture
def http_server() -> Iterator[FaultyHTTP]:
    server = FaultyHTTP()
    yield server
    server.close()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    try:
        server = start_sshd(tmp_path_factory.mktemp("sshd"))
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"no sshd to test scp/sftp against: {exc} (scripts/system-deps.sh installs it)")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    pytest.importorskip("boto3", reason="boto3 is in the test extras")
    pytest.importorskip("moto.server", reason="moto[server] is in the test extras")
    server = start_s3(Path(tmp_path_factory.mktemp("s3")))
    yield server
    server.server.stop()


CLUSTER_PY = str(Path(sys.executable).parent / "sheaf-cluster")


@pytest.fixture(params=["python", "c"])
def cluster(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each sheaf-cluster: the Python one and the compiled one (which hands what it does not do
    itself to the Python one: ``SHEAF_CLUSTER_FALLBACK``, as codegen writes it)."""
    if request.param == "python":
        return CLUSTER_PY
    if not os.access(COMPILED_CLUSTER, os.X_OK):
        pytest.skip("sheaf-cluster-c was not built (no C compiler at install time)")
    monkeypatch.setenv("SHEAF_CLUSTER_FALLBACK", CLUSTER_PY)
    return COMPILED_CLUSTER
