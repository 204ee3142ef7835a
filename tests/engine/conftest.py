"""Fixtures of the engine tests; the helpers themselves are in ``tests/engine_helpers.py``."""

from __future__ import annotations

import pytest

from engine_helpers import FakeBackend


@pytest.fixture
def fake() -> FakeBackend:
    return FakeBackend()
