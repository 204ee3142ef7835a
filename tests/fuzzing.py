"""How hard the fuzz tests attack: ``SHEAF_FUZZ_SCALE`` multiplies every fuzz test's example count.

CI runs the default (1: the suite stays within its time on two cores); a release check or a fresh
attack runs, for example, ``SHEAF_FUZZ_SCALE=50 pytest -k fuzz`` for tens of thousands of inputs.
"""

from __future__ import annotations

import os


def examples(base: int) -> int:
    """``base`` examples times ``SHEAF_FUZZ_SCALE`` (a positive integer; default 1)."""
    scale = os.environ.get("SHEAF_FUZZ_SCALE", "1")
    return base * max(1, int(scale)) if scale.isdigit() else base


#: runs of blank and comment lines, the shapes a reader's line or "holds nothing" pattern may
#: backtrack on (blank, blanks with tabs and CRs, comments, indented comments, CRLF)
_LINE_SHAPES = (b"\n", b" \t\r\n", b"#\n", b"# c\n", b"  #\n", b"\r\n")
BLANK_AND_COMMENT_RUNS: list[bytes] = [shape * count for shape in _LINE_SHAPES for count in (6, 18)]
