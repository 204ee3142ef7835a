"""sheaf leaves the process's recursion limit as it found it: importing ``sheaf.classad`` and reading,
writing, comparing and evaluating text nested deeper than Python's default limit allows (the parser's
``MAX_DEPTH`` levels) raise it only while that one operation runs (``_stack.deep_stack``).  Run in a
fresh interpreter, at the default limit and in both builds (the C parser and ``SHEAF_PURE_PYTHON``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import sys, threading
start = sys.getrecursionlimit()
from sheaf import classad
from sheaf.classad import ClassAd
assert sys.getrecursionlimit() == start, "import"

def nested(levels, fn, *args):  # a caller already deep in its own stack
    return nested(levels - 1, fn, *args) if levels else fn(*args)

texts = {"-" * 990 + "1": -1 if 990 % 2 else 1, "!" * 991 + "true": False, "{" * 165 + "}" * 165: None,
         "-(" * 160 + "1" + ")" * 160: 1, "a" + ".b" * 990: classad.UNDEFINED}
for levels in (0, 500):
    for text, value in texts.items():
        expr = nested(levels, classad.parse, text)
        assert nested(levels, classad.parse, nested(levels, str, expr)) == expr
        got = nested(levels, classad.evaluate, text)
        assert value is None or got == value or got is value, (text[:10], got)
        nested(levels, classad.evaluate, expr)
        nested(levels, classad.evaluate, expr)  # the second evaluation runs the compiled closure
        assert sys.getrecursionlimit() == start, text[:10]
    ad = nested(levels, ClassAd.parse, "[a=" * 160 + "1" + "]" * 160)
    assert nested(levels, ClassAd.parse, nested(levels, str, ad)) == ad
    old = nested(levels, ClassAd.parse_old, "x = " + "-" * 990 + "1")
    assert old.eval("x") == 1 and sys.getrecursionlimit() == start

errors = []
def worker():
    try:
        for _ in range(20):
            assert classad.evaluate("-" * 990 + "1") == 1
    except BaseException as exc:
        errors.append(exc)
threads = [threading.Thread(target=worker) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert not errors and sys.getrecursionlimit() == start, errors
print("ok", sys.getrecursionlimit())
"""


@pytest.mark.parametrize("pure", ["", "1"])
def test_deep_text_leaves_the_recursion_limit_as_it_was(pure: str) -> None:
    env = {**os.environ, "SHEAF_PURE_PYTHON": pure} if pure else {
        k: v for k, v in os.environ.items() if k != "SHEAF_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "1000"]
