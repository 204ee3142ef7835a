"""A journal record whose ``info`` holds a value of the wrong type is damage, as a torn or garbled
line is: ``sheaf status`` warns (file and byte offset) and exits 0; ``sheaf run`` warns and goes
on when the record lies before the latest run's start, and refuses with exit 2 after it.  Neither
shows a traceback (the events loader that ``sheaf run`` starts included).  Real runs, real files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))
BAD = {"an object": "{}", "null": "null", "a string": '"x"', "a list": "[1]",
       "beyond 64 bits": "123456789012345678901234567890"}
OTHER = {"cluster": '"x"', "exit": str(2**70), "slot": "[1]", "started": "1e400", "retry": "-1"}


def _sheaf(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DAG run twice (A succeeds, then B fails each time; B retried once each run)."""
    here = tmp_path_factory.mktemp("two-runs")
    (here / "wf.dag").write_text("JOB A a.sub\nJOB B b.sub\nRETRY B 1\nPARENT A CHILD B\n")
    (here / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (here / "b.sub").write_text("executable = /bin/false\nqueue\n")
    for _ in range(2):
        assert _sheaf("run", here).returncode == 1
    return here


def _damage(source: Path, tmp_path: Path, field: str, value: str, *, run: int) -> tuple[Path, int]:
    """A copy of the run directory with ``field`` set to ``value`` (JSON text) in the first change
    of ``run`` (1 or 2) that has it; returns the copy and the byte offset of the damaged line."""
    here = tmp_path / "run"
    shutil.copytree(source, here)
    for stale in here.glob("*.events.db*"):
        stale.unlink()
    journal = here / ".sheaf" / "wf.dag.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    begins = [i for i, record in enumerate(records) if record[0] == "B"]
    first, last = begins[run - 1], begins[run] if run < len(begins) else len(lines)
    at = next(i for i in range(first, last) if records[i][0] == "C" and field in (records[i][6] or {}))
    records[at][6][field] = "PLACEHOLDER"
    lines[at] = json.dumps(records[at]).replace('"PLACEHOLDER"', value).encode() + b"\n"
    journal.write_bytes(b"".join(lines))
    return here, sum(map(len, lines[:at]))


CASES = [("return", value) for value in BAD.values()] + list(OTHER.items())


@pytest.mark.parametrize(("field", "value"), CASES)
def test_a_bad_value_before_the_latest_run_is_a_warning(two_runs: Path, tmp_path: Path, field: str,
                                                        value: str) -> None:
    here, offset = _damage(two_runs, tmp_path, field, value, run=1)
    status = _sheaf("status", here)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert f"wf.dag.journal: damaged record at byte offset {offset}" in status.stderr, status.stderr
    done = _sheaf("run", here)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr  # B fails again
    assert f"byte offset {offset}" in done.stderr, done.stderr


@pytest.mark.parametrize(("field", "value"), CASES)
def test_a_bad_value_in_the_latest_run_is_refused_by_run_and_shown_by_status(
        two_runs: Path, tmp_path: Path, field: str, value: str) -> None:
    here, offset = _damage(two_runs, tmp_path, field, value, run=2)
    status = _sheaf("status", here)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert f"byte offset {offset}" in status.stderr, status.stderr
    done = _sheaf("run", here)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"damaged journal record at byte offset {offset}" in done.stderr, done.stderr
