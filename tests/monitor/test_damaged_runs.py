"""The views of a run directory whose records are damaged: one message and exit 2, never a traceback;
the plots of a run with no events yet are empty pictures, and nothing is written where a file stands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))
VIEWS = (["status"], ["statistics"], ["analyze"], ["plots", "-o"])


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run")
    (run / "t.sub").write_text("executable = /bin/true\nqueue\n")
    (run / "a.dag").write_text("JOB A t.sub\nJOB B t.sub\nPARENT A CHILD B\n")
    assert subprocess.run([SHEAF, "run", str(run)], capture_output=True, check=False).returncode == 0
    return run


def _view(argv: list[str], run: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    out = [str(tmp_path / "plots")] if argv[-1] == "-o" else []
    return subprocess.run([SHEAF, *argv, *out, str(run)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("damage", "said"), [
    ("journal", "the engine journal"),
    ("a.dag.events.db", "the run's records cannot be read"),
])
def test_a_record_that_is_a_directory_is_one_message(finished: Path, tmp_path: Path, damage: str,
                                                      said: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    target = run / ".sheaf" / "a.dag.journal" if damage == "journal" else run / damage
    target.unlink()
    target.mkdir()
    for argv in VIEWS:
        done = _view(argv, run, tmp_path)
        assert done.returncode == 2 and said in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "plots").exists()


def test_plots_of_a_run_with_no_events_and_into_a_file(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / ".sheaf" / "a.dag.journal").write_bytes(b"")
    (run / "a.dag.events.db").unlink()
    done = _view(["plots", "-o"], run, tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "breakdown.png", "gantt.png", "index.html", "slots.png"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run([SHEAF, "plots", "-o", str(blocker), str(finished)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "not a directory" in done.stderr, done.stderr
