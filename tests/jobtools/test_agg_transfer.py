"""``sheaf-transfer``'s pairs file: what ``sheaf plan`` writes is read back path for path, what one
line cannot carry is refused at plan time, a bad file is one message and exit 2, and a 1 MB line is
read in linear time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.codegen._staging import pairs_text
from sheaf.errors import PlanningError
from sheaf.jobtools._transfer_pairs import read_pairs

TOOL = str(Path(sys.executable).parent / "sheaf-transfer")
# File-name text: quotes, shell and line-format specials, the line breaks str.splitlines knows.
NAME = st.text(st.one_of(st.sampled_from(list(" \t\r\x0b\x0c\x1c\x85\u2028'\"\\$`#%;é-")),
                         st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\0/")),
               min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(NAME, NAME), min_size=1, max_size=4))
def test_pairs_round_trip(tmp_path_factory: pytest.TempPathFactory, names: list[tuple[str, str]]) -> None:
    root = str(tmp_path_factory.mktemp("root"))
    pairs = [(f"/src/{a}", f"{root}/{b}") for a, b in names]
    path = os.path.join(root, "pairs.in")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(pairs_text(pairs))
    assert read_pairs(path, root) == [(src, dst, False) for src, dst in pairs]


@pytest.mark.parametrize("bad", ["/a\nb", "/a\0b", "/a\udcffb"])
def test_what_a_line_cannot_carry_is_refused_at_plan_time(bad: str) -> None:
    with pytest.raises(PlanningError, match="pairs file"):
        pairs_text([(bad, "/root/x")])


def _run(tmp_path: Path, content: bytes) -> subprocess.CompletedProcess[str]:
    pairs = tmp_path / "pairs.in"
    pairs.write_bytes(content)
    return subprocess.run([TOOL, "--root", str(tmp_path / "root"), str(pairs)], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("content", [b"/a \xff\xfe/b\n", b"/a '/b\n", b"/a\0x /b\n", b"/a\n"])
def test_a_bad_pairs_file_is_one_message_and_exit_2(tmp_path: Path, content: bytes) -> None:
    done = _run(tmp_path, content)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_form_feed_does_not_end_a_line(tmp_path: Path) -> None:
    src = tmp_path / "in\x0cput"
    src.write_text("data")
    root = tmp_path / "root"
    done = _run(tmp_path, pairs_text([(str(src), f"{root}/out\x85put")]).encode())
    assert done.returncode == 0, done.stderr
    assert (root / "out\x85put").read_text() == "data"


def test_a_1mb_line_is_read_in_linear_time(tmp_path: Path) -> None:
    root = tmp_path / "root"
    name = "a" * 1_000_000
    path = tmp_path / "pairs.in"
    path.write_text(f"/src/{name} '{root}/{name}'\n")
    start = time.perf_counter()
    sum(1 for c in name if c == " ")  # a linear pass in Python over the same length
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    assert read_pairs(str(path), str(root)) == [(f"/src/{name}", f"{root}/{name}", False)]
    took = time.perf_counter() - start
    assert took < 100 * baseline + 1.0, f"{took:.2f} s"  # shlex.split took ~10 s
