"""sheaf-exitcode as DAGMan runs it: exit code, success/failure messages, cluster-summary records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sheaf.jobtools.exitcode import decode_message, errfile_of

EXITCODE = str(Path(sys.executable).parent / "sheaf-exitcode")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXITCODE, *args], check=False, cwd=cwd, capture_output=True, text=True,
                          timeout=30)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    (tmp_path / "job.out").write_text("Execution time in seconds: 12\nall good\n")
    (tmp_path / "job.err").write_text("warning: slow disk\n")
    return tmp_path


@pytest.mark.parametrize(("args", "code", "needle"), [
    (["-r", "0", "job.out"], 0, ""),
    (["job.out"], 0, ""),
    (["-r", "1", "job.out"], 1, "job exit code 1"),
    (["-r", "-11", "job.out"], 1, "killed by a signal"),
    (["-r", "3", "-S", "3", "job.out"], 0, ""),
    (["-r", "0", "-s", "Execution+time+in+seconds:", "job.out"], 0, ""),
    (["-r", "0", "--success-msg", "Execution+time", "--success-msg", "all+good", "job.out"], 0, ""),
    (["-r", "0", "-s", "Execution+time", "-s", "never+printed", "job.out"], 1, "'never printed'"),
    (["-r", "0", "-f", "slow+disk", "job.out"], 1, "failure message found"),  # found in job.err
    (["-r", "0", "--failure-msg", "Segmentation", "job.out"], 0, ""),
    (["-r", "0", "missing.out"], 1, "does not exist"),
    (["-r", "0", "-s", "extra+file", "job.out", "more.log"], 0, ""),
    (["-r", "zero", "job.out"], 2, "invalid int value"),
    (["--bogus", "job.out"], 2, "unrecognized arguments"),
    ([], 2, "required"),
])
def test_outcomes(job: Path, args: list[str], code: int, needle: str) -> None:
    (job / "more.log").write_text("extra file\n")
    res = _run(job, *args)
    assert res.returncode == code, res.stderr
    assert needle in res.stderr and "Traceback" not in res.stderr


def test_cluster_summary_records_decide(tmp_path: Path) -> None:
    out = tmp_path / "merge.out"
    out.write_text('[cluster-task id=1, start="x", duration=0.1, status=0, line=1, pid=1, app="a"]\n'
                   '[cluster-summary stat="ok", lines=1, tasks=1, succeeded=1, failed=0, extra=0, '
                   'duration=0.1, start="x", pid=2, app="sheaf-cluster"]\n')
    assert _run(tmp_path, "-r", "0", "merge.out").returncode == 0
    out.write_text('[cluster-summary stat="ok", tasks=2, submitted=2, succeeded=1, failed=1, extra=0]\n')
    assert "failed=1" in _run(tmp_path, "-r", "0", "merge.out").stderr
    out.write_text('[cluster-summary stat="failed", tasks=2, submitted=2, succeeded=2, failed=0]\n')
    assert _run(tmp_path, "merge.out").returncode == 1
    out.write_text('[cluster-task id=1, start="x", duration=0.1, status=0, line=1, pid=1, app="a"]\n')
    assert "cluster-summary is missing" in _run(tmp_path, "merge.out").stderr


def test_sheaf_cluster_output_is_judged_end_to_end(tmp_path: Path) -> None:
    cluster = str(Path(sys.executable).parent / "sheaf-cluster")
    (tmp_path / "a.in").write_text("echo done-a\nfalse\n")
    with open(tmp_path / "a.out", "w") as out:
        rc = subprocess.run([cluster, "-e", "a.in"], check=False, cwd=tmp_path, stdout=out, timeout=30)
    # -e hides the failure from the exit code and stat, but the summary still counts it
    assert rc.returncode == 0
    assert _run(tmp_path, "-r", "0", "-s", "done-a", "a.out").returncode == 1


def test_rename_rotates_out_and_err(job: Path) -> None:
    assert _run(job, "--rename", "-r", "0", "job.out").returncode == 0
    assert _run(job, "--rename", "-r", "0", "job.out").returncode == 1  # nothing left to judge
    assert (job / "job.out.000").exists() and (job / "job.err.000").exists()
    (job / "job.out").write_text("again\n")
    assert _run(job, "--rename", "-s", "again", "job.out").returncode == 0
    assert (job / "job.out.001").read_text() == "again\n"


def test_message_encoding_and_err_names() -> None:
    assert decode_message("a+b\\+c\\d") == "a b+c\\d"
    assert errfile_of("x/job.out") == "x/job.err"
    assert errfile_of("job.out.003") == "job.err.003"
