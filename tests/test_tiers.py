"""The test tiers of ``tiers.TIERS`` name test modules that exist, with markers pyproject declares, so
that a renamed module cannot silently leave the serial pass (and run, flaky, beside another worker)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tiers import TIERS

TESTS = Path(__file__).resolve().parent


def test_every_tiered_module_exists() -> None:
    assert [module for module in TIERS if not (TESTS / module).is_file()] == []


def test_every_tier_is_a_declared_marker() -> None:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {line.split(":", 1)[0] for line in config["tool"]["pytest"]["ini_options"]["markers"]}
    assert {tier for tiers in TIERS.values() for tier in tiers} <= declared
