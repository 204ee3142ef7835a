"""How deep a YAML text nests, found by a linear scan before the YAML library sees it.

``yaml_rs`` bounds *flow* nesting itself (``[``/``{`` past 255 levels is a syntax error), but not
*block* nesting: about 50,000 ``- `` on one line (100 KB) overflow its stack and kill the process
with SIGSEGV.  So every YAML text is scanned first and refused past ``MAX_DEPTH`` block levels.

The measure: lines are read in order with a stack of the columns where open block nodes start; a
line pops the nodes at or right of its indentation and opens one at its indentation, plus one more
after each compact indicator it starts with (``- - x`` opens three, ``? - x`` three).  A block
sequence written at its mapping key's column counts with the key, so the true depth is at most
twice the measure plus one; with flow nesting bounded by the library, the parser's recursion stays
under ~800 levels, far from the ~10,000 at which an 8 MB (or ~1,200 at which a 1 MB) stack runs out.
A continuation line of a multi-line scalar counts as a node: it can only over-count, never hide
depth, and real files stay far below the limit.

Cost: a line opening more than ``MAX_DEPTH`` levels starts with at least ``MAX_DEPTH - 2``
characters of indentation and indicators, so one regex search for such a line decides almost every
file; only a file that has one is scanned line by line.

This module imports nothing of sheaf: ``_slice_worker`` loads it by path.
"""

from __future__ import annotations

import re

#: block nesting levels a YAML text may open (Pegasus files use about ten)
MAX_DEPTH = 255  # the library's own bound on flow nesting, so one rule covers both

_PREFIX = MAX_DEPTH - 2
_DEEP_TEXT = re.compile(rf"\n[ \t?:-]{{{_PREFIX}}}")
_DEEP_BYTES = re.compile(rb"\n[ \t?:-]{%d}" % _PREFIX)
_DEEP_HEAD_TEXT = re.compile(rf"[ \t?:-]{{{_PREFIX}}}")
_DEEP_HEAD_BYTES = re.compile(rb"[ \t?:-]{%d}" % _PREFIX)
_INDICATOR = re.compile(r"[-?:](?:[ \t]+|$)")


def may_be_deep(data: str | bytes) -> bool:
    """True when some line starts with enough indentation and indicators to nest too deep (fast)."""
    if isinstance(data, str):
        return bool(_DEEP_HEAD_TEXT.match(data) or _DEEP_TEXT.search(data))
    return bool(_DEEP_HEAD_BYTES.match(data) or _DEEP_BYTES.search(data))


def too_deep(text: str) -> int | None:
    """The offset where ``text`` first opens more than ``MAX_DEPTH`` block levels, or ``None``."""
    if not may_be_deep(text):
        return None
    stack: list[int] = []
    offset = 0
    for line in text.split("\n"):
        start = offset
        offset += len(line) + 1
        content = line.lstrip(" ")
        if not content.strip() or content.startswith("#"):
            continue
        column = len(line) - len(content)
        while stack and stack[-1] >= column:
            stack.pop()
        stack.append(column)
        at = column
        end = len(line.rstrip())
        while len(stack) <= MAX_DEPTH:
            indicator = _INDICATOR.match(line, at)
            if indicator is None or indicator.end() >= end:
                break
            at = indicator.end()
            stack.append(at)
        if len(stack) > MAX_DEPTH:
            return start + at
    return None
