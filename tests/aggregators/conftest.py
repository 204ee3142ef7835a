"""Servers the transfer tests talk to, started once per test module on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
