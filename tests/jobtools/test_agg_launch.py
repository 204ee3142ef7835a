"""``python -m sheaf.jobtools.launch``: a task's own stream files and checkpoint timeouts."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

REDIRECT = [sys.executable, "-m", "sheaf.jobtools.launch"]


def test_the_task_reads_and_writes_its_files_and_keeps_its_status(tmp_path: Path) -> None:
    (tmp_path / "in").write_text("abc\n")
    (tmp_path / "out").write_text("old content that is truncated\n")
    script = "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.stderr.write('e'); sys.exit(3)"
    done = subprocess.run([*REDIRECT, "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out"),
                           "-e", str(tmp_path / "err"), "--", sys.executable, "-c", script],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 3 and done.stdout == done.stderr == ""
    assert (tmp_path / "out").read_text() == "ABC\n" and (tmp_path / "err").read_text() == "e"


def test_a_missing_stdin_or_program_fails_the_task_naming_it(tmp_path: Path) -> None:
    missing = subprocess.run([*REDIRECT, "-i", str(tmp_path / "nope"), "--", "/bin/true"],
                             capture_output=True, text=True, check=False)
    assert missing.returncode == 1 and str(tmp_path / "nope") in missing.stderr
    absent = subprocess.run([*REDIRECT, "--", str(tmp_path / "no-such-program")], capture_output=True,
                            text=True, check=False)
    assert absent.returncode == 127 and "no-such-program" in absent.stderr


CHECKPOINTING = """
import signal, sys, time
def term(*_):
    open(sys.argv[1], "w").write("state 7")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
time.sleep(60)
"""


def test_checkpoint_time_sends_sigterm_and_the_timed_out_task_fails(tmp_path: Path) -> None:
    state = tmp_path / "state"
    started = time.monotonic()
    done = subprocess.run([*REDIRECT, "-k", "0.5", "-K", "30", "--", sys.executable, "-c", CHECKPOINTING,
                           str(state)], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1, done.stderr  # it exited 0 on SIGTERM, but it timed out
    assert state.read_text() == "state 7" and "SIGTERM" in done.stderr
    assert time.monotonic() - started < 30  # it ended on SIGTERM, long before the SIGKILL


def test_a_task_ignoring_sigterm_gets_sigkill_after_the_grace(tmp_path: Path) -> None:
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    done = subprocess.run([*REDIRECT, "-k", "0.3", "-K", "0.3", "--", sys.executable, "-c", ignoring],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 128 + signal.SIGKILL and "SIGKILL" in done.stderr


def test_a_task_finishing_before_its_checkpoint_time_keeps_its_status(tmp_path: Path) -> None:
    done = subprocess.run([*REDIRECT, "-k", "30", "--", sys.executable, "-c", "raise SystemExit(4)"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 4 and done.stderr == ""
