"""The journal under damage: corrupt bytes, records of the wrong shape, unknown states, a failing
disk; and what a recovered run reports (reasons kept).  The property: damage never gives a
traceback and never makes a node the journal shows done run again - when in doubt the engine
refuses (exit 2) rather than rerun."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_helpers import FakeBackend, write_dag
from sheaf.engine import _journal as journal_module
from sheaf.engine import read_journal, run_workflow, state_paths
from sheaf.engine._journal import read_records
from sheaf.engine._records import BeginRecord
from sheaf.errors import FormatError, StorageError
from sheaf.monitor import workflow_status

SHEAF = str(Path(sys.executable).parent / "sheaf")
CHAIN = "".join(f"JOB N{i} N.sub\n" for i in range(6)) + "".join(
    f"PARENT N{i} CHILD N{i + 1}\n" for i in range(5))


class Crash(Exception):
    pass


def run(directory: Path, backend: FakeBackend) -> object:
    return run_workflow(str(directory), backend=backend, handle_signals=False)  # type: ignore[arg-type]


def crash_at(directory: Path, node: str) -> None:
    """Run until ``node`` is launched, then die as a killed engine would (no "E" record)."""
    backend = FakeBackend(per_wait=1)

    def hook(launch: object) -> None:
        if launch.node == node:  # type: ignore[attr-defined]
            raise Crash

    backend.hook = hook
    with pytest.raises(Crash):
        run(directory, backend)


def journal_of(directory: Path) -> Path:
    return Path(state_paths(str(directory / "wf.dag"))["journal"])


def done_nodes(directory: Path) -> set[str]:
    return {n for n, r in read_journal(str(journal_of(directory))).nodes.items() if r.state == "done"}


def sheaf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    """A chain N0..N5 whose engine died while N3 ran: N0-N2 journaled done."""
    write_dag(tmp_path, CHAIN)
    crash_at(tmp_path, "N3")
    assert done_nodes(tmp_path) == {"N0", "N1", "N2"}
    return tmp_path


def _damage_line(path: Path, index: int, new: bytes) -> int:
    lines = path.read_bytes().split(b"\n")
    offset = sum(len(x) + 1 for x in lines[:index])
    lines[index] = new
    path.write_bytes(b"\n".join(lines))
    return offset


def _line_of(path: Path, needle: bytes) -> int:
    return next(i for i, line in enumerate(path.read_bytes().split(b"\n")) if needle in line)


@pytest.mark.parametrize("damage", [
    pytest.param(lambda line: line.replace(b'"N', b'"\xffN', 1), id="invalid-utf8"),
    pytest.param(lambda line: b'["C",1.0,"N2"]', id="wrong-shape"),
    pytest.param(lambda line: line.replace(b'"done"', b'"dune"'), id="unknown-state"),
    pytest.param(lambda line: line.replace(b'"N2"', b'"N4"'), id="other-node"),
])
def test_damage_in_the_latest_run_is_refused_with_its_offset(crashed: Path, damage: object) -> None:
    journal = journal_of(crashed)
    index = _line_of(journal, b'"N2","submitted","done"')
    line = journal.read_bytes().split(b"\n")[index]
    offset = _damage_line(journal, index, damage(line))  # type: ignore[operator]
    with pytest.raises(FormatError) as info:
        run(crashed, FakeBackend())
    assert f"byte offset {offset}" in str(info.value) and info.value.path == str(journal)
    done = sheaf("run", str(crashed))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"byte offset {offset}" in done.stderr and done.stderr.count("\n") <= 3
    status = sheaf("status", str(crashed))
    assert status.returncode == 0 and "Traceback" not in status.stderr
    assert f"damaged record at byte offset {offset}" in status.stderr
    assert workflow_status(str(crashed)).counts["done"] >= 2


def test_damage_before_the_latest_run_is_a_warning_and_nothing_done_reruns(crashed: Path) -> None:
    crash_at(crashed, "N4")  # a second engine run: recovery, N3 done too
    journal = journal_of(crashed)
    index = _line_of(journal, b'"N1","submitted","done"')  # in the first run
    offset = _damage_line(journal, index, b'["C",1.0,"N1","submitted","do\xffne",0,null]')
    warned: list[str] = []
    backend = FakeBackend()
    result = run_workflow(str(crashed), backend=backend, handle_signals=False, on_warning=warned.append)
    assert result.succeeded and backend.nodes() == ["N4", "N5"]
    assert len(warned) == 1 and f"byte offset {offset}" in warned[0] and result.warnings == tuple(warned)


def test_a_torn_tail_and_a_torn_line_before_a_restart_stay_silent(crashed: Path) -> None:
    journal = journal_of(crashed)
    with open(journal, "ab") as handle:
        handle.write(b'["C",9.0,"N3","submitted","po')  # killed mid-write
    crash_at(crashed, "N4")  # the next engine starts on a fresh line
    with open(journal, "ab") as handle:
        handle.write(b'["P",9.0,"N4",0,12')
    warned: list[str] = []
    backend = FakeBackend()
    result = run_workflow(str(crashed), backend=backend, handle_signals=False, on_warning=warned.append)
    assert result.succeeded and backend.nodes() == ["N4", "N5"] and warned == []


def test_a_recovered_run_keeps_the_journaled_reason_of_a_failure(tmp_path: Path) -> None:
    write_dag(tmp_path, "JOB A N.sub\nJOB B N.sub\nJOB C N.sub\nJOB X N.sub\nJOB Y N.sub\n"
                        "PARENT A CHILD X\nPARENT X CHILD Y\nPARENT Y CHILD B\n")
    backend = FakeBackend(per_wait=1)
    backend.script("C", [3])

    def hook(launch: object) -> None:
        if launch.node == "B":  # type: ignore[attr-defined]
            raise Crash  # C has failed and is journaled failed; the engine dies before the end

    backend.hook = hook
    with pytest.raises(Crash):
        run(tmp_path, backend)
    assert read_journal(str(journal_of(tmp_path))).nodes["C"].state == "failed"
    result = run(tmp_path, FakeBackend())
    assert result.source == "recovery" and result.failed_nodes == (("C", "exit code 3"),)  # type: ignore[attr-defined]
    assert "# FAILED C: exit code 3" in Path(result.rescue).read_text()  # type: ignore[attr-defined]
    assert workflow_status(str(tmp_path)).failed == (("C", "exit code 3"),)


# ---- a failing disk -------------------------------------------------------------------------------

def _failing_fsync(after: int) -> object:
    calls = {"n": 0}
    real = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)
    return fsync


def test_a_journal_that_cannot_be_written_stops_the_run_promptly(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    write_dag(tmp_path, CHAIN)
    monkeypatch.setattr(journal_module.os, "fsync", _failing_fsync(4))
    outcome: list[BaseException | object] = []

    def target() -> None:
        try:
            outcome.append(run(tmp_path, FakeBackend(per_wait=1)))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the engine hung on a journal it could not write"
    assert isinstance(outcome[0], StorageError) and "the disk is full" in str(outcome[0])
    monkeypatch.undo()
    journal = journal_of(tmp_path)
    assert journal.read_bytes().endswith(b"\n")  # cut back to the last durable commit
    assert read_journal(str(journal)).damage == []
    before = done_nodes(tmp_path)
    backend = FakeBackend()
    result = run(tmp_path, backend)
    assert result.succeeded and not set(backend.nodes()) & before  # type: ignore[attr-defined]


def test_a_failed_rescue_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sheaf.engine.reports import _files

    write_dag(tmp_path, "JOB A N.sub\n")
    backend = FakeBackend()
    backend.script("A", [1])
    def full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files.os, "replace", full)
    with pytest.raises(StorageError, match="rescue001"):
        run(tmp_path, backend)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []
    (tmp_path / f"wf.dag.rescue001.tmp{2**22 + 12345}").write_text("DONE A\n")  # a dead engine's
    assert run(tmp_path, FakeBackend()).source == "recovery"  # type: ignore[attr-defined]
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


# ---- random corruption ---------------------------------------------------------------------------

def _corrupt(data: bytes, kind: str, where: int, bit: int, garbage: bytes) -> tuple[bytes, bytes]:
    """(corrupted journal, the intact part that still counts as the journal's word)."""
    where %= max(1, len(data))
    if kind == "flip":
        return data[:where] + bytes([data[where] ^ (1 << bit)]) + data[where + 1:], data
    if kind == "truncate":
        return data[:where], data[:where]
    start = data.rfind(b"\n", 0, where) + 1
    return data[:start] + garbage.replace(b"\n", b" ") + b"\n" + data[start:], data


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Real journals: one engine run killed, and three runs (two kills, then a failure)."""
    made = []
    for name, kills in (("one", ["N3"]), ("three", ["N2", "N4"])):
        base = tmp_path_factory.mktemp(name)
        write_dag(base, CHAIN + "RETRY N5 1\n")
        for node in kills:
            crash_at(base, node)
        made.append(base)
    return made


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 1), kind=st.sampled_from(["flip", "truncate", "insert"]),
       where=st.integers(0, 10**6), bit=st.integers(0, 7), garbage=st.binary(min_size=1, max_size=40))
def test_random_corruption_never_tracebacks_and_never_reruns_a_done_node(
        journals: list[Path], which: int, kind: str, where: int, bit: int, garbage: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "wf"
        shutil.copytree(journals[which], directory)
        journal = journal_of(directory)
        corrupted, intact = _corrupt(journal.read_bytes(), kind, where, bit, garbage)
        journal.write_bytes(intact)
        done = done_nodes(directory)
        journal.write_bytes(corrupted)
        backend = FakeBackend()
        try:
            run(directory, backend)
        except FormatError as exc:
            assert "damaged journal record" in str(exc)
            return
        assert not done & set(backend.nodes()), f"{kind}: a node journaled done ran again"
        assert all(isinstance(r, BeginRecord) or r.time >= 0 for r in read_records(str(journal)))


# ---- the journal read before the lock -------------------------------------------------------------

def test_the_journal_read_before_the_lock_is_replayed_again_only_if_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run reads the journal before its lock (to know which rescue DAG it reads) and under it: the
    second read reuses the first while the file is unchanged, and replays it when another run wrote it
    in between (its record, not the earlier read, decides)."""
    from sheaf.engine import _loop

    write_dag(tmp_path, CHAIN)
    assert run(tmp_path, FakeBackend()).source == "fresh"  # type: ignore[attr-defined]
    replays: list[str] = []
    real_replay = _loop.replay

    def counted(path: str) -> object:
        replays.append(path)
        return real_replay(path)

    monkeypatch.setattr(_loop, "replay", counted)
    result = run(tmp_path, FakeBackend())
    assert result.source == "complete" and len(replays) == 1  # type: ignore[attr-defined]

    real_lock = _loop._take_lock
    journal = journal_of(tmp_path)

    def lock_after_another_run(path: str, signals: object) -> object:
        stat = journal.stat()
        os.utime(journal, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        return real_lock(path, signals)  # type: ignore[arg-type]

    monkeypatch.setattr(_loop, "_take_lock", lock_after_another_run)
    replays.clear()
    result = run(tmp_path, FakeBackend())
    assert result.source == "complete" and len(replays) == 2  # type: ignore[attr-defined]
