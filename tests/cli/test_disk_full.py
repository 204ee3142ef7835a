"""A real full disk: a 2 MB tmpfs (mounted when the tests run as root; skipped with the reason
otherwise), nearly filled, under a real ``sheaf run`` and ``sheaf plan``.  Each must stop promptly with
one message and exit 1 (not bad input: the same command succeeds once there is room), leave the
journal consistent and no temporary file behind, and the run must resume once space is back
without running again a node the journal shows done.  A small file size limit (``ulimit -f``) is a
storage error too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sheaf.engine import read_journal, state_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
SHEAF = str(Path(sys.executable).parent / "sheaf")
NODES = 300


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` up to ``leave`` free bytes; returns the filler (delete it to make room)."""
    stat = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


def sheaf(*args: str, cwd: Path = EXAMPLE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([SHEAF, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def _workflow(directory: Path, marks: Path) -> None:
    directory.mkdir()
    marks.mkdir()
    (directory / "n.sub").write_text('universe = local\nexecutable = /bin/sh\n'
                                     f'arguments = "-c \'echo x >> {marks}/$(node)\'"\n'
                                     "output = /dev/null\nerror = /dev/null\nqueue\n")
    lines = [f'JOB n{i:03d} n.sub\nVARS n{i:03d} node="n{i:03d}"' for i in range(NODES)]
    lines += [f"PARENT n{i:03d} CHILD n{i + 1:03d}" for i in range(NODES - 1)]
    (directory / "wf.dag").write_text("\n".join(lines) + "\n")


def test_sheaf_run_on_a_full_disk_stops_with_one_message_and_resumes(small_disk: Path,
                                                                     tmp_path: Path) -> None:
    work, marks = small_disk / "wf", tmp_path / "marks"
    _workflow(work, marks)
    filler = fill(small_disk, 24 * 1024)
    first = sheaf("run", str(work))  # the subprocess timeout bounds a hang
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stderr and "the disk is full" in first.stderr
    journal = state_paths(str(work / "wf.dag"))["journal"]
    replayed = read_journal(journal)
    assert replayed.damage == [] and replayed.ended is None
    done = {n for n, r in replayed.nodes.items() if r.state == "done"}
    assert 0 < len(done) < NODES
    ran = {p.name: p.read_text() for p in marks.iterdir()}
    assert not [p for p in work.rglob("*") if ".tmp" in p.name]

    filler.unlink()
    second = sheaf("run", str(work))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "started from: recovery" in second.stdout
    for node in done:
        assert (marks / node).read_text() == ran[node] == "x\n", f"{node} ran again"
    assert len(list(marks.iterdir())) == NODES


def test_sheaf_plan_on_a_full_disk_is_one_message_and_leaves_nothing(small_disk: Path) -> None:
    fill(small_disk, 8 * 1024)
    target = small_disk / "plan"
    done = sheaf("plan", "workflow.yml", "-d", str(target.parent), "--relative-dir", target.name,
                 "--input-dir", "input")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "the disk is full" in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def _small_file_limit() -> None:
    """``ulimit -f 256`` with SIGXFSZ ignored: a write past 256 KiB fails with EFBIG."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def test_sheaf_run_under_a_small_file_size_limit_stops_with_one_message_and_resumes(tmp_path: Path) -> None:
    """The job guard's table (an in-memory file of 512 KiB) counts against ``ulimit -f``: a storage error."""
    (tmp_path / "t.sub").write_text("universe = local\nexecutable = /bin/true\nqueue\n")
    (tmp_path / "wf.dag").write_text("JOB A t.sub\nJOB B t.sub\nPARENT A CHILD B\n")
    first = subprocess.run([SHEAF, "run", str(tmp_path)], capture_output=True, text=True, timeout=120,
                           check=False, preexec_fn=_small_file_limit)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    assert first.stderr.strip().splitlines() == [(
        "sheaf: error: cannot write the job guard's table (an in-memory file of 512 KiB) (File too large); "
        "no job was started and the run stopped; run `sheaf run` again to resume once files of that size "
        "can be written")]
    again = sheaf("run", str(tmp_path), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
