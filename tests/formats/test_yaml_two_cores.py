"""Slices parsed by the worker process (``_slice_worker``) read exactly as slices parsed in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf import formats
from sheaf.errors import FormatError
from sheaf.formats import _yaml_chunks
from sheaf.model import Workflow


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small slices, and a count of the workers started (the real ``_Worker.start`` runs)."""
    monkeypatch.setattr(_yaml_chunks, "SLICE_CHARS", 400)
    counts: list[int] = []
    real = _yaml_chunks._Worker.start

    def counting(path: str, spans: list[tuple[int, int]]) -> _yaml_chunks._Worker | None:
        counts.append(len(spans))
        return real(path, spans)

    monkeypatch.setattr(_yaml_chunks._Worker, "start", staticmethod(counting))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    return counts


def _file(path: Path, odd: str = "") -> Path:
    jobs = "".join(f"- type: job\n  id: j{i}\n  name: t{i % 3}\n"
                   f"  arguments: [-i, f{i}, {i}, 4.0{odd if i == 57 else ''}]\n"
                   f"  uses:\n  - {{lfn: f{i}, type: input}}\n"
                   f"  - {{lfn: f{i + 1}, type: output, stageOut: false, registerReplica: true}}\n"
                   for i in range(120))
    path.write_text(f"pegasus: '5.0'\nname: w\njobs:\n{jobs}jobDependencies: []\n")
    return path


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, worker: str) -> Workflow:
    monkeypatch.setenv("SHEAF_LOAD_WORKER", worker)
    return formats.read_workflow(path)


def test_worker_slices_equal_local_slices(started: list[int], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path / "wf.yml")
    local = _read(path, monkeypatch, "0")
    assert not started
    two = _read(path, monkeypatch, "1")
    assert started and started[0] > 5
    assert two == local and list(two.jobs) == list(local.jobs) and len(two.jobs) == 120


def test_a_slice_msgpack_cannot_carry_is_parsed_here(started: list[int], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path / "wf.yml", odd=", 123456789012345678901234567890")  # past 64 bits
    two = _read(path, monkeypatch, "1")
    assert started and two == _read(path, monkeypatch, "0")
    assert two.jobs["j57"].arguments[-1] == "123456789012345678901234567890"


def test_a_bad_slice_gives_the_one_process_error(started: list[int], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path / "wf.yml", odd="]: [")
    with pytest.raises(FormatError) as local:
        _read(path, monkeypatch, "0")
    with pytest.raises(FormatError) as two:
        _read(path, monkeypatch, "1")
    assert started and str(two.value) == str(local.value) and two.value.line == local.value.line
