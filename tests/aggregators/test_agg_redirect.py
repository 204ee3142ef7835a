"""``python -m sheaf.aggregators.redirect``: a clustered task's own stdin/stdout/stderr files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REDIRECT = [sys.executable, "-m", "sheaf.aggregators.redirect"]


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
