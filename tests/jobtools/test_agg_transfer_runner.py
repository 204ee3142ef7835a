"""The runner in-process (``run_transfers`` with an injected ``sleep``): the waits between attempts,
and a property test of resume -- whatever byte the connection drops at, and whether or not the server
honours ranges, the delivered file is the server's, with one request per drop."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf.jobtools.transfer import Endpoint, Transfer, TransferOptions, run_transfers
from transfer_servers import FaultyHTTP

DATA = os.urandom(200_000)


@pytest.fixture(scope="module")
def server() -> Iterator[FaultyHTTP]:
    http = FaultyHTTP()
    http.files["/f"] = DATA
    yield http
    http.close()


def _options(root: Path, waits: list[float], attempts: int = 3, backoff: float = 0.0) -> TransferOptions:
    return TransferOptions(roots=(str(root),), sleep=waits.append, log=lambda line: None, attempts=attempts,
                   backoff=backoff)


def test_waits_double_and_are_capped(tmp_path: Path, server: FaultyHTTP) -> None:
    server.faults.fail_first["/f"] = 4
    waits: list[float] = []
    item = Transfer(lfn="f", sources=(Endpoint(f"{server.url}/f"),), dest=Endpoint(f"file://{tmp_path}/f"))
    (outcome,) = run_transfers([item], _options(tmp_path, waits, attempts=5, backoff=25.0))
    assert outcome.source == f"{server.url}/f" and (tmp_path / "f").read_bytes() == DATA
    assert waits == [25.0, 50.0, 60.0, 60.0]
    assert len(outcome.failures) == 4 and all("HTTP 503" in f for f in outcome.failures)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drop=st.integers(0, len(DATA) - 1), ranges=st.booleans())
def test_resume_delivers_the_servers_bytes(tmp_path_factory: pytest.TempPathFactory, server: FaultyHTTP,
                                            drop: int, ranges: bool) -> None:
    root = tmp_path_factory.mktemp("root")
    server.faults.log.clear()
    server.faults.drop_after["/f"] = drop
    if ranges:
        server.faults.no_ranges.discard("/f")
    else:
        server.faults.no_ranges.add("/f")
    waits: list[float] = []
    item = Transfer(lfn="f", sources=(Endpoint(f"{server.url}/f"),), dest=Endpoint(f"file://{root}/f"))
    (outcome,) = run_transfers([item], _options(root, waits))
    assert outcome.source is not None, outcome.failures
    assert (root / "f").read_bytes() == DATA and os.listdir(root) == ["f"]
    expected = [None, f"bytes={drop}-"] if drop else [None, None]
    assert [r for _, _, r in server.faults.log] == expected
