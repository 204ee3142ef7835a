"""The backend registry and the per-site routing, without a batch system: a recording fake backend."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sheaf.backends._registry import BACKENDS, make_backend
from sheaf.backends._routing import RoutingBackend, route_of
from sheaf.backends.local import LocalBackend
from sheaf.classad import ClassAd
from sheaf.engine import Backend, Event, Exited, Launch, run_workflow
from sheaf.errors import UsageError

from .contract import make_launch


class Fake:
    """Runs nothing: every submitted launch ends at the next ``wait`` with exit code 0."""

    def __init__(self, name: str) -> None:
        self.name, self.pending, self.cancelled, self.closed = name, [], [], False

    def submit(self, launch: Launch) -> None:
        self.pending.append(launch.key)

    def wait(self, timeout: float | None) -> list[Event]:
        events: list[Event] = [Exited(k, 0, None, self.name, 0.0, 0.0) for k in self.pending]
        self.pending = []
        return events

    def cancel(self, key: str) -> None:
        self.cancelled.append(key)
        self.pending.remove(key)

    def idle(self) -> int:
        return len(self.pending)

    def running(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


def test_route_of_reads_grid_resource() -> None:
    assert route_of(ClassAd.parse_old('GridResource = "batch slurm"')) == "slurm"
    assert route_of(ClassAd.parse_old('GridResource = "Batch SLURM user@login"')) == "slurm"
    assert route_of(ClassAd.parse_old('GridResource = "condor ce.example.org"')) is None
    assert route_of(ClassAd.parse_old("RequestCpus = 1")) is None


def test_launches_go_to_their_site_s_backend(tmp_path: Path) -> None:
    local, slurm = Fake("local"), Fake("slurm")
    made: list[str] = []
    router = RoutingBackend(local, {"slurm": lambda: made.append("slurm") or slurm})
    router.submit(make_launch(tmp_path, "a", ["/bin/true"]))
    assert made == []  # a route's backend is made on first use
    router.submit(make_launch(tmp_path, "b", ["/bin/true"], ad='GridResource = "batch slurm"'))
    router.submit(make_launch(tmp_path, "c", ["/bin/true"], ad='GridResource = "batch slurm"'))
    assert (local.pending, slurm.pending, made) == (["a#0"], ["b#0", "c#0"], ["slurm"])
    assert router.idle() == 3
    router.cancel("c#0")
    assert slurm.cancelled == ["c#0"] and local.cancelled == []
    events = {e.key: e for e in router.wait(1.0)}
    reasons = {k: e.reason for k, e in events.items() if isinstance(e, Exited)}
    assert reasons == {"a#0": "local", "b#0": "slurm"}
    router.close()
    assert local.closed and slurm.closed


def test_the_registry_names_local_and_slurm(tmp_path: Path) -> None:
    assert {"local", "slurm"} <= set(BACKENDS)
    with pytest.raises(UsageError, match="unknown backend 'nope'"):
        make_backend("nope", directory=str(tmp_path))
    backend = make_backend("local", directory=str(tmp_path))
    try:
        assert isinstance(backend, RoutingBackend) and isinstance(backend.default, LocalBackend)
    finally:
        backend.close()
    assert not (tmp_path / "sheaf-slurm").exists()  # made only when a launch is routed there


def test_without_slurm_s_commands_the_slurm_backend_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found on PATH: sbatch, squeue, scancel"):
        BACKENDS["slurm"](directory=str(tmp_path), env={"PATH": str(tmp_path)})


def test_a_bad_slurm_setting_is_a_usage_error(tmp_path: Path) -> None:
    if shutil.which("sbatch") is None:
        pytest.skip("Slurm's client commands are not installed")
    env = {"SHEAF_SLURM_MAX_QUEUED": "many", "PATH": os.environ["PATH"]}
    with pytest.raises(UsageError, match="SHEAF_SLURM_MAX_QUEUED='many'"):
        BACKENDS["slurm"](directory=str(tmp_path), env=env)
    with pytest.raises(UsageError, match="max_queued"):
        BACKENDS["slurm"](directory=str(tmp_path), env={"SHEAF_SLURM_MAX_QUEUED": "0",
                                                         "PATH": os.environ["PATH"]})


def test_a_route_that_cannot_be_made_holds_its_launches(tmp_path: Path) -> None:
    def broken() -> Backend:
        raise UsageError("not found on PATH: sbatch")

    local = Fake("local")
    router = RoutingBackend(local, {"slurm": broken})
    router.submit(make_launch(tmp_path, "a", ["/bin/true"], ad='GridResource = "batch slurm"'))
    router.submit(make_launch(tmp_path, "b", ["/bin/true"]))
    held = router.wait(1.0)
    assert [(type(e).__name__, e.key) for e in held] == [("Held", "a#0")]
    assert "batch slurm" in held[0].reason and "sbatch" in held[0].reason
    assert [e.key for e in router.wait(1.0)] == ["b#0"]


def test_the_router_refills_itself_while_its_backends_do(tmp_path: Path) -> None:
    """The engine batches exits into fewer turns only with a backend that starts queued attempts by
    itself; the router ``sheaf run`` uses must say so for the local backend, and stop saying so once
    a route's backend that does not is made."""
    slurm = Fake("slurm")
    router = RoutingBackend(LocalBackend(), {"slurm": lambda: slurm})
    try:
        assert router.self_refilling
        router.submit(make_launch(tmp_path, "b", ["/bin/true"], ad='GridResource = "batch slurm"'))
        assert not router.self_refilling
    finally:
        router.close()


def test_a_run_on_the_registry_s_backend_commits_many_exits_at_once(tmp_path: Path) -> None:
    """Real /bin/true nodes, the backend ``sheaf run`` makes: one journal commit per one or two exits
    (the batching never engaged behind the router) was ~2000 commits for 3000 nodes."""
    (tmp_path / "pool.conf").write_text("NUM_CPUS = 2\n")
    (tmp_path / "n.sub").write_text("executable = /bin/true\nuniverse = vanilla\nqueue\n")
    (tmp_path / "w.dag").write_text("".join(f"JOB n{i} n.sub\n" for i in range(600)))
    backend = make_backend("local", directory=str(tmp_path), pool_config=str(tmp_path / "pool.conf"))
    result = run_workflow(str(tmp_path), backend=backend, handle_signals=False)
    assert result.succeeded and result.done == 600
    assert result.journal_commits < 150, result.journal_commits


def test_the_router_has_the_default_backends_descriptor_while_no_route_is_made(tmp_path: Path) -> None:
    local, slurm = LocalBackend(), Fake("slurm")
    router = RoutingBackend(local, {"slurm": lambda: slurm})
    assert router.fileno() == local.fileno()
    router.submit(make_launch(tmp_path, "b", ["/bin/true"], ad='GridResource = "batch slurm"'))
    assert router.fileno() == -1  # two backends: nothing one descriptor could tell
    assert RoutingBackend(Fake("local"), {}).fileno() == -1  # a default without one
    router.close()
