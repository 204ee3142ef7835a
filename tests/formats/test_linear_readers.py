"""Readers whose work is linear in their input, shown on inputs sized so that a reader with
quadratic or exponential work would need minutes or more: each goes through the command line in a
subprocess with a generous timeout (30 s), where a linear reader needs well under a second.  The
shapes are those a regex of nested or overlapping repetitions backtracks on: runs of blank lines,
comment lines, blanks without the character that ends a pattern, openers without their closer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SHEAF = str(Path(sys.executable).with_name("sheaf"))
TIMEOUT = 30
WORKFLOW = """pegasus: '5.0'
name: w
jobs:
- {type: job, name: t, id: a, uses: [{lfn: f.a, type: input}]}
"""
RC_ENTRY = 'f.a file:///data/f.a site="local"\n'
TC_ENTRY = 'tr t {\n  site local {\n    pfn "/bin/true"\n    type "INSTALLED"\n  }\n}\n'
SHAPES = {"blank lines": "\n", "comment lines": "# a comment\n", "blanks and CRs": " \t\r\n",
          "indented comments": "  #\n"}


def _sheaf(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, *args], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize(("name", "entry"), [("rc.txt", RC_ENTRY), ("tc.txt", TC_ENTRY)], ids=["rc", "tc"])
def test_a_catalog_of_5000_blank_or_comment_lines_then_an_entry(tmp_path: Path, name: str, entry: str,
                                                                shape: str) -> None:
    (tmp_path / "wf.yml").write_text(WORKFLOW)
    (tmp_path / name).write_text(SHAPES[shape] * 5000 + entry)
    done = _sheaf(tmp_path, "validate", "wf.yml")
    assert "Traceback" not in done.stderr
    assert f"{name}: the " not in done.stderr  # read as a catalog, not warned about as empty
    assert str(tmp_path / name) in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_catalog_of_only_blank_or_comment_lines_is_empty(tmp_path: Path, shape: str) -> None:
    (tmp_path / "wf.yml").write_text(WORKFLOW)
    (tmp_path / "rc.txt").write_text(SHAPES[shape] * 5000)
    done = _sheaf(tmp_path, "validate", "wf.yml")
    assert f"{tmp_path / 'rc.txt'}: the replica catalog is empty" in done.stderr


def test_200000_unclosed_variable_references_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "wf.yml").write_text(WORKFLOW + "# " + "${" * 200_000 + "\n")
    done = _sheaf(tmp_path, "validate", "wf.yml")
    assert done.returncode == 0, done.stderr  # a ${ that does not close is left as written


def test_a_yaml_error_after_250000_blanks_is_shown_clipped(tmp_path: Path) -> None:
    # the form feed splits the source line the error shows into pieces without a gutter
    (tmp_path / "wf.yml").write_text("pegasus: '5.0'\nname: w\njobs: [x\x0c" + " " * 250_000 + "]]]\n")
    done = _sheaf(tmp_path, "validate", "wf.yml")
    assert done.returncode == 2 and "misplaced bracket" in done.stderr
    assert len(done.stderr) < 2000


def test_a_queue_statement_of_long_words_and_blanks_without_a_mode(tmp_path: Path) -> None:
    (tmp_path / "wf.dag").write_text("JOB A a.sub\n")
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue " + "a" * 5000 + " " * 5000 + "b" * 5000
                                    + "\n")
    done = _sheaf(tmp_path, "run", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "not a queue statement" in done.stdout + done.stderr
