"""sheaf-cluster's quick ``.in`` reader agrees with the full parser wherever it answers, and start-up
imports nothing heavy (the cost every clustered job pays)."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats._seqexec_in import SeqexecTask, parse_seqexec_input, write_seqexec_input
from sheaf.jobtools.seqexec import _quick_tasks

# Lines built from the pieces that matter: metadata records, comments, quotes, odd whitespace.
_PIECES = st.sampled_from(["#@", "#", " ", "\t", "\r", "a", "b/c", "-x", "1", "0", "'", '"', "\\",
                           "\x0b", "\x1c", "\xa0", "é", "=", ";"])
_LINE = st.lists(_PIECES, max_size=8).map("".join)
_TEXT = st.lists(_LINE, max_size=8).map("\n".join)


def _full(text: str) -> list[tuple[tuple[str, ...], int]] | str:
    try:
        return [(t.argv, t.line) for t in parse_seqexec_input(text, "x.in")]
    except FormatError as exc:
        return f"error {exc}"


@settings(max_examples=2000, deadline=None)
@given(_TEXT)
def test_quick_reader_agrees_with_the_full_parser(text: str) -> None:
    quick = _quick_tasks(text)
    if quick is not None:
        assert [(t.argv, t.line) for t in quick] == _full(text)


def test_quick_reader_takes_what_codegen_writes() -> None:
    tasks = [SeqexecTask(("/bin/echo", f"x{i}", "--in=a.txt"), i + 1, "tr", f"ID{i}") for i in range(3)]
    text = write_seqexec_input(tasks)
    quick = _quick_tasks(text)
    assert quick is not None
    assert [(t.argv, t.line) for t in quick] == [(t.argv, t.line) for t in parse_seqexec_input(text)]


def test_quick_reader_defers_bad_files_to_the_full_parser() -> None:
    for bad in ("#@ 1 tr id\n", "#@ 0 tr id\n/bin/true\n", "#@ 1 tr\n/bin/true\n", "#@ 1 a b\n#@ 2 a b\nx\n"):
        assert _quick_tasks(bad) is None
        assert _full(bad).startswith("error")


def test_start_up_imports_nothing_heavy() -> None:
    code = ("import sys; import sheaf.jobtools.seqexec; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dataclasses', 'typing', 're', 'shlex', 'enum', 'sheaf') )))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) == {
        "sheaf", "sheaf.jobtools", "sheaf.jobtools.seqexec",
        "sheaf.jobtools._cli", "sheaf.jobtools._seqexec_run", "sheaf.jobtools._records"}
