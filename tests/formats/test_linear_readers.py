"""Readers whose work is linear in their input, shown on inputs sized so that a reader with
quadratic or exponential work would need minutes or more: each goes through the command line in a
subprocess with a generous timeout (30 s), where a linear reader needs well under a second.  The
scans that replaced such patterns are compared with the patterns on short inputs (hypothesis).  The
shapes are those a regex of nested or overlapping repetitions backtracks on: runs of blank lines,
comment lines, blanks without the character that ends a pattern, openers without their closer.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzing import examples
from sheaf.condor._submit_queue import _split_arguments
from sheaf.errors import FormatError
from sheaf.formats import Variables
from sheaf.formats._expand import expand_text as formats_expand

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


# ---- the linear scans read what the patterns they replace read ------------------------------------
# (the patterns, kept here as the reference: right, but slow on the inputs above)

_QUEUE_PATTERN = re.compile(r"^(?:(\S+)\s*)?(?:(.*?)\s+)?(in|from|matching)\b\s*(.*)$",
                            re.IGNORECASE | re.DOTALL)
_REFERENCE_PATTERN = re.compile(r"(\\?)\$\{([^}\n]*)\}")
_VARIABLES = Variables({"A": "1", "b": "22"})


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(["a", "in", "IN", "from", "matching", " ", "\n", "\t", "x(", "3", ",", "é"]),
                min_size=1, max_size=8).map("".join).map(str.strip).filter(bool))
def test_the_queue_arguments_split_as_the_pattern_did(rest: str) -> None:
    found = _QUEUE_PATTERN.match(rest)
    want = None if found is None else (found.group(1), found.group(2), found.group(3).lower(),
                                       found.group(4).strip())
    assert _split_arguments(rest) == want


def _expanded_by_pattern(text: str) -> str:
    def value(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)[1:]
        found = _VARIABLES.get(match.group(2))
        if found is None:
            raise FormatError("unset", rule="set")
        return found

    return _REFERENCE_PATTERN.sub(value, text)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(["$", "{", "}", "A", "b", "\\", "\n", "x", "${", "${A}", "\\${"]),
                max_size=10).map("".join))
def test_variables_expand_as_the_pattern_did(text: str) -> None:
    try:
        want = _expanded_by_pattern(text)
    except FormatError:
        want = "unset"
    try:
        got = formats_expand(text, _VARIABLES, "f")
    except FormatError:
        got = "unset"
    assert got == want
