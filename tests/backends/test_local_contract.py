"""The Backend contract, run against the local backend."""

from __future__ import annotations

from pathlib import Path

from sheaf.backends import MachineLimits, Pool
from sheaf.backends.local import LocalBackend
from sheaf.engine import Backend

from .contract import BackendContract, RunContract


class TestLocalBackendContract(BackendContract):
    file_transfer = True

    def make_backend(self, tmp_path: Path, slots: int) -> Backend:
        pool = Pool(f"NUM_CPUS = {slots}\nMEMORY = {1024 * slots}\nPERIODIC_EXPR_INTERVAL = 0.2\n")
        return LocalBackend(pool, limits=MachineLimits(pool.config, path=tmp_path / "limits.sqlite"))


class TestLocalRunContract(RunContract):
    def run_args(self) -> list[str]:
        return ["--backend", "local"]


def test_public_names() -> None:
    import sheaf.backends
    import sheaf.engine

    assert sheaf.backends.__all__ == ["BACKENDS", "BATCH_SYSTEMS", "LocalBackend", "MachineLimits", "Pool",
                                      "load_pool_config", "make_backend"]
    assert "Pool" not in sheaf.engine.__all__ and "MachineLimits" not in sheaf.engine.__all__
    assert sheaf.backends.LocalBackend is LocalBackend
