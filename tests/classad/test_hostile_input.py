"""Hostile ClassAd text: huge literals read as HTCondor reads them, errors are found in linear time,
and nothing but ``ClassAdSyntaxError`` ever escapes the parser.

The expected values of huge literals are what the official binding (``classad2``) gives; the time
bounds are generous: each input took 7 to 50 s before the error path was made linear, and takes
milliseconds now.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzing import examples
from sheaf import classad
from sheaf.classad import ClassAdSyntaxError

SHEAF = Path(sys.executable).with_name("sheaf")
DIGITS_5000 = "1" * 5000
INT64_MIN = -(1 << 63)


@pytest.mark.parametrize(("text", "value"), [
    (DIGITS_5000, 0),                         # more than Python's 4,300-digit conversion limit
    ("-" + DIGITS_5000, 0),
    ("9223372036854775808", 0),               # 2**63: one past the largest
    ("-9223372036854775808", INT64_MIN),      # the smallest still fits
    ("-9223372036854775809", 0),
    ("1" * 30, 0),
])
def test_integer_literals_beyond_64_bits_read_as_zero_as_in_htcondor(text: str, value: int) -> None:
    assert classad.evaluate(classad.parse(text)) == value


def test_huge_literals_inside_expressions_and_ads() -> None:
    assert str(classad.parse("x == " + DIGITS_5000)) == "x == 0"
    assert classad.ClassAd.parse(f"[a = {DIGITS_5000}; b = a + 1]").eval("b") == 1
    assert classad.ClassAd.parse_old(f"a = -{DIGITS_5000}").eval("a") == 0


@pytest.mark.parametrize(("text", "value"), [
    ('stringListSum("' + DIGITS_5000 + '")', INT64_MIN),
    ('stringListSum("' + "1" * 30 + '")', INT64_MIN),
    ('stringListSum("-' + "1" * 30 + ', 1")', INT64_MIN),
    ('stringListSum("9223372036854775807, 1")', INT64_MIN),
    ('stringListAvg("' + "1" * 30 + '")', INT64_MIN),
    ('stringListMax("' + "1" * 30 + '")', INT64_MIN),
    ('stringListSum("1, 2")', 3),
])
def test_string_list_numbers_beyond_64_bits_as_in_htcondor(text: str, value: int) -> None:
    assert classad.evaluate(classad.parse(text)) == value


def test_a_syntax_error_in_huge_text_shows_a_bounded_excerpt() -> None:
    with pytest.raises(ClassAdSyntaxError) as caught:
        classad.parse("x" * 100_000 + " @ " + "y" * 100_000)
    shown = str(caught.value).splitlines()
    assert caught.value.column == 100_002
    assert len(shown[1]) < 200 and shown[1].strip().startswith("...") and shown[2].strip() == "^"
    assert shown[1].index("@") == shown[2].index("^")


SLOW_BEFORE = {
    "trailing blanks": "a +" + " " * 16_000,                 # 17 s for 8,000 before
    "unclosed block comments": "a " + "/* " * 30_000,
    "unclosed line comments": "a " + "// " * 80_000,
    "leading zeros": "0" * 25_000,
    "trailing blanks in an ad": "[a = 1; b = ]" + " " * 16_000,
}


@pytest.mark.parametrize("name", sorted(SLOW_BEFORE))
def test_syntax_errors_are_found_in_linear_time(name: str) -> None:
    text = SLOW_BEFORE[name]
    started = time.perf_counter()
    with pytest.raises(ClassAdSyntaxError):
        classad.ClassAd.parse(text) if text.startswith("[") else classad.parse(text)
    assert time.perf_counter() - started < 1.5, name


HOSTILE = st.lists(st.sampled_from([
    "a", "1", "0", "00", "-", "+", "(", ")", "[", "]", "{", "}", ";", "=", ",", "?", ":", "?:", ".",
    "/*", "*/",
    "//", "\n", " ", '"', "'", "\\", "1e", "1e400", ".5", "is", "isnt", "=?=", "strcat(", "int(", "real(",
    "stringListSum(", DIGITS_5000[:4400], " " * 3000, "@", "\x00", "\u2028",
]), max_size=25).map("".join)


@settings(max_examples=examples(150), deadline=None)
@given(HOSTILE)
def test_any_text_parses_or_raises_a_syntax_error_quickly(text: str) -> None:
    started = time.perf_counter()
    for parse in (classad.parse, classad.ClassAd.parse, classad.ClassAd.parse_old):
        try:
            parsed = parse(text)
        except ClassAdSyntaxError:
            continue
        if isinstance(parsed, classad.Expr):
            classad.evaluate(parsed, my="[a = 1]", target="[b = 2]")
    assert time.perf_counter() - started < 2.0


def test_cli_eval_of_hostile_text_exits_2_with_one_message_or_prints_the_value() -> None:
    def run(expr: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SHEAF), "classad", "eval", expr], capture_output=True,
                              text=True, timeout=60, check=False)

    bad = run("a +" + " " * 8000)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.startswith("sheaf: error:")
    assert len(bad.stderr) < 1000
    huge = run(DIGITS_5000)
    assert (huge.returncode, huge.stdout.strip(), huge.stderr) == (0, "0", "")
