"""The Backend contract, run against the Dask backend on a real ``LocalCluster`` (one per slot count,
shared by the tests of this module: starting one costs ~3 s), plus what only Dask has: a cluster the
backend owns, requests no worker can meet, a task whose worker dies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .contract import BackendContract, collect, exited, make_launch, wait_for

distributed = pytest.importorskip("distributed", reason="the Dask backend needs the distributed package")

from sheaf.backends.dask import DaskBackend  # noqa: E402
from sheaf.backends.dask._records import decode_events, encode_events  # noqa: E402
from sheaf.engine import Backend, Event, Exited, Held  # noqa: E402
from sheaf.engine._backend import Released, Removed, Suspended  # noqa: E402

_CLUSTERS: dict[int, Any] = {}


def cluster_address(slots: int) -> str:
    """A LocalCluster of one worker with ``slots`` threads and CPUs, started once per module."""
    if slots not in _CLUSTERS:
        _CLUSTERS[slots] = distributed.LocalCluster(
            n_workers=1, threads_per_worker=slots, processes=True, memory_limit=0, dashboard_address=":0",
            resources={"CPU": slots, "MEMORY": 1024 * slots})
    return str(_CLUSTERS[slots].scheduler_address)


@pytest.fixture(scope="module", autouse=True)
def _clusters() -> Iterator[None]:
    yield
    for cluster in _CLUSTERS.values():
        cluster.close()
    _CLUSTERS.clear()


class TestDaskBackendContract(BackendContract):
    overhead = 0.05  # seconds a Dask attempt costs beyond a local one: a task round trip
    file_transfer = True

    def make_backend(self, tmp_path: Path, slots: int) -> Backend:
        return DaskBackend(cluster_address(slots), policy_interval=0.2)  # the contract: policy every 0.2 s


def test_requests_no_worker_can_meet_are_held(tmp_path: Path) -> None:
    with closing(DaskBackend(cluster_address(2))) as backend:
        backend.submit(make_launch(tmp_path, "huge", ["/bin/true"], ad="RequestCpus = 64"))
        backend.submit(make_launch(tmp_path, "fits", ["/bin/true"], ad="RequestCpus = 2"))
        events = collect(backend, 2)
    assert isinstance(events["huge#0"], Held) and "Dask worker" in events["huge#0"].reason
    assert exited(events["fits#0"]).exit_code == 0


def test_request_memory_is_evaluated_per_attempt_and_enforced(tmp_path: Path) -> None:
    """The optimization chapter's retry expression: 64 MB on the first try, 64 * 4 on the second; a job using
    ~150 MB is killed with a memory reason on the first, and succeeds on the second."""
    hog = ["/usr/bin/python3", "-c", "import time; b = bytearray(150 * 2**20); time.sleep(1.0)"]
    ad = "RequestMemory = 64 * (DAGNodeRetry * 3 + 1)"
    with closing(DaskBackend(cluster_address(2))) as backend:
        backend.submit(make_launch(tmp_path, "hog", hog, attempt=0, ad=ad))
        backend.submit(make_launch(tmp_path, "hog", hog, attempt=1, ad=ad))
        events = collect(backend, 2)
    first, second = exited(events["hog#0"]), exited(events["hog#1"])
    assert first.signal == 9 and first.reason is not None and "memory usage" in first.reason
    assert second.exit_code == 0, second


def test_an_owned_local_cluster_is_started_and_closed(tmp_path: Path) -> None:
    backend = DaskBackend(cluster_options={"threads_per_worker": 1, "resources": {"CPU": 1, "MEMORY": 512}})
    try:
        backend.submit(make_launch(tmp_path, "one", ["/bin/sh", "-c", "echo $$ > one.pid"]))
        assert exited(collect(backend, 1)["one#0"]).exit_code == 0
        address = backend.address
    finally:
        backend.close()
    with pytest.raises(OSError):
        distributed.Client(address, timeout=2)


def test_periodic_policy_and_dollar_dollar_run_on_the_worker(tmp_path: Path) -> None:
    """The job's periodic_remove is evaluated on the worker (the local backend's policy), and $$(Cpus)
    is expanded against the worker's slot -- the slot Dask granted: 2 CPUs asked, 2 given."""
    with closing(DaskBackend(cluster_address(2), policy_interval=0.2)) as backend:
        backend.submit(make_launch(tmp_path, "stuck", ["/bin/sleep", "30"],
                                   ad="PeriodicRemove = JobStatus == 2 && NumJobStarts >= 1"))
        backend.submit(make_launch(tmp_path, "cpus", ["/bin/echo", "$$(Cpus)"], ad="RequestCpus = 2"))
        events = collect(backend, 2)
    assert isinstance(events["stuck#0"], Removed) and "PeriodicRemove" in events["stuck#0"].reason
    assert exited(events["cpus#0"]).exit_code == 0
    assert (tmp_path / "cpus.out").read_text() == "2\n"


def test_close_stops_only_its_own_tasks(tmp_path: Path) -> None:
    """Two runs share a scheduler's workers: closing one leaves the other's job running to its end."""
    with closing(DaskBackend(cluster_address(2))) as other:
        other.submit(make_launch(tmp_path, "theirs", ["/bin/sh", "-c", "echo $$ > theirs.pid; sleep 1.5"]))
        mine = DaskBackend(cluster_address(2))
        mine.submit(make_launch(tmp_path, "mine", ["/bin/sleep", "30"]))
        wait_for(lambda: (tmp_path / "theirs.pid").exists() and mine.running() == 1, 30)
        mine.close()
        assert exited(collect(other, 1)["theirs#0"]).exit_code == 0


@given(st.lists(st.one_of(
    st.builds(Exited, st.text(max_size=8), st.none() | st.integers(0, 255), st.none() | st.integers(1, 64),
              st.none() | st.text(max_size=20), st.floats(0, 2e9), st.floats(0, 2e9),
              st.none() | st.text(max_size=8)),
    st.builds(Held, st.text(max_size=8), st.text(max_size=20)),
    st.builds(Suspended, st.text(max_size=8), st.text(max_size=20), st.integers(0, 50), st.integers(0, 50)),
    st.builds(Released, st.text(max_size=8)),
    st.builds(Removed, st.text(max_size=8), st.text(max_size=20))), max_size=4))
@settings(max_examples=50, deadline=None)
def test_exit_records_carry_the_events_exactly(events: list[Event]) -> None:
    assert decode_events(json.loads(json.dumps(encode_events(events)))) == events


def test_a_damaged_exit_record_is_no_result() -> None:
    for damaged in (None, {}, [{"kind": "Nope", "key": "a"}], [{"kind": "Exited", "key": "a"}], ["x"]):
        assert decode_events(damaged) is None
