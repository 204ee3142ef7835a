"""Regular expressions PCRE refuses for their size are ERROR at once, as in HTCondor: a repeat count
above 65535, or a compiled pattern past PCRE's 64K code units (a repeated group is copied out once a
repeat).  Without the check, ``regex`` expands such a pattern: ``a{99999999}`` took gigabytes and
``(?:a{60000}){60000}`` never finished compiling.  ``classad2`` is the oracle for each pattern."""

from __future__ import annotations

import os

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2  # noqa: F401  (must be imported before classad2)

# isort: split
import classad2
import pytest

from sheaf import classad

PATTERNS = [
    "a{65535}", "a{65536}", "a{99999999}", "x{,99999999}", r"\\{99999999}", "[{99999999}]",
    "(?:a{1000}){1000}", "(?:a{60000}){60000}", "(?:(?:a){255}){255}", "(?:a){1,60000}",
    "(?:ab){6000}", "(?:ab){7000}", "(ab){5000}", "(ab){6000}", "(?P<n>ab){5000}", "(?P<n>ab){6000}",
    "(?:abc){5000}", "(?:abc){6000}", "(?:[ab]c){1500}", "(?:[ab]c){1800}", "(?:a{10}b){4000}",
    "(?:a{10}b){6000}", "(a|b|c){3000}", "(a|b|c){4000}", "[a]{70000}", "(?=a)b{3}", "(?i:ab){6000}",
]


def _oracle(text: str) -> object:
    value = classad2.ExprTree(text).eval()
    return "error" if isinstance(value, classad2.Value) else value


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_too_large_for_pcre_is_error_as_in_htcondor(pattern: str) -> None:
    text = f'regexp("{pattern}", "ab")'
    ours = classad.evaluate(classad.parse(text))
    assert ("error" if ours is classad.ERROR else ours) == _oracle(text), pattern
