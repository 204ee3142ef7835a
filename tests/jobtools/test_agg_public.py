"""The job tools' public surface: console scripts only (the formats they read live in
sheaf.formats, where codegen reaches them)."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import sheaf.jobtools

ROOT = Path(__file__).resolve().parents[2]


def test_all_is_pinned() -> None:
    assert sheaf.jobtools.__all__ == []


def test_console_scripts_exist() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name in ("sheaf-cluster", "sheaf-mpi-cluster", "sheaf-exitcode"):
        module, _, attr = scripts[name].partition(":")
        assert module.startswith("sheaf.jobtools.")
        assert callable(getattr(importlib.import_module(module), attr))


def test_format_helpers_for_codegen() -> None:
    from sheaf.formats import _pmcdag, _seqexec_in

    assert {"PmcTask", "PmcDag", "parse_pmc_dag", "parse_rescue", "write_pmc_dag"} == set(_pmcdag.__all__)
    assert {"SeqexecTask", "parse_seqexec_input", "write_seqexec_input"} == set(_seqexec_in.__all__)
