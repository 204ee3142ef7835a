"""Helpers for the pure state-machine tests: a fake clock, a DagState that checks its invariants
after every step, and an autouse fixture (import it into a test module) that checks every machine a
test built once more when the test ends."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from sheaf.condor._dagman import parse_dag
from sheaf.engine._state import DagState, EngineEvent, Limits, Step, Submit


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


class Checked(DagState):
    """A DagState that validates its invariants after every step."""

    def start(self, idle: int = 0) -> Step:
        step = super().start(idle)
        self.validate_state()
        return step

    def advance(self, events: Iterable[EngineEvent], idle: int = 0) -> Step:
        step = super().advance(events, idle)
        self.validate_state()
        return step


_BUILT: list[DagState] = []


@pytest.fixture(autouse=True)
def validate_every_machine() -> Iterator[None]:
    _BUILT.clear()
    yield
    for m in _BUILT:
        m.validate_state()


def machine(tmp_path: Path, body: str, limits: Limits | None = None, **kw: object) -> DagState:
    (tmp_path / "x.dag").write_text(body)
    m = Checked(parse_dag(str(tmp_path / "x.dag")), limits or Limits(), FakeClock(), **kw)  # type: ignore[arg-type]
    _BUILT.append(m)
    return m


def submits(step: Step) -> list[str]:
    return [i.node for i in step.instructions if isinstance(i, Submit)]


def of(step: Step, kind: type) -> list[object]:
    return [i for i in step.instructions if isinstance(i, kind)]
