"""absTime/relTime texts read as the official library reads them: its grammar is
``D* dddd [D* dd ...] [zone]`` for absolute times (any non-digits between fields) and, read from the
end, ``[-] [days (d|+)] [hours (h|:)] [minutes (m|:)] [seconds [s]]`` for relative ones.  The forms
here are those of HTCondor's functional tests and of the ClassAd manual; each is checked against the
official library (``classad2``) where it is installed."""

from __future__ import annotations

import calendar
import time
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_language_exact import ORACLE, assert_refused, needs_oracle

from sheaf import classad
from sheaf.classad._timetext import parse_abstime, parse_reltime


def _utc(text: str) -> int:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


@pytest.mark.parametrize(("text", "utc", "offset"), [
    ("1970-01-01T:00:00:01Z", "1970-01-01T00:00:01", 0),          # the functional tests' form
    ("1970-01-02T:03:04:05-06:00", "1970-01-02T09:04:05", -21600),
    ("1997-08-30T16:04:05-0500", "1997-08-30T21:04:05", -18000),
    ("2020/06/01Z", "2020-06-01T00:00:00", 0),                    # any non-digits between fields
    ("x2020-06-01Z", "2020-06-01T00:00:00", 0),
    ("2020-6-01Z", "2020-06-01T00:00:00", 0),                     # "6-" reads as C's atoi does
    ("2020-06-01T12:00:00 Z", "2020-06-01T12:00:00", 0),
    ("2020-06-01T12:00:00Z  ", "2020-06-01T12:00:00", 0),
    ("2020-06-01-0600", "2020-06-01T06:00:00", -21600),
])
def test_abstime_text_reads_as_the_library_reads_it(text: str, utc: str, offset: int) -> None:
    value = classad.evaluate(f'absTime("{text}")')
    assert (value.secs, value.offset) == (_utc(utc), offset)
    if ORACLE is not None:
        assert ORACLE.ExprTree(f'absTime("{text}")').eval().timestamp() == _utc(utc)


def test_functional_tests_split_time_of_a_t_colon_date() -> None:
    t = 'absTime("1970-01-02T:03:04:05-06:00")'
    assert classad.evaluate(f"splitTime({t}).hours") == 3
    assert classad.evaluate(f"splitTime({t}).offset") == -21600
    assert classad.evaluate('int(absTime("1970-01-01T:00:00:01Z"))') == 1


@pytest.mark.parametrize(("text", "secs"), [
    ("1 d", 86400.0), ("", 0.0), ("1+", 86400.0), ("5:", 300.0), ("1d 2h", 93600.0),
    ("- 5", -5.0), ("5 s", 5.0), ("2+25:14:16.123", 2 * 86400 + 25 * 3600 + 14 * 60 + 16.123),
    ("1d2h3m4.5s", 93784.5), ("99999999999m", 0.0),            # a field past a C int reads 0
])
def test_reltime_text_reads_as_the_library_reads_it(text: str, secs: float) -> None:
    assert parse_reltime(text) == secs
    assert float(classad.evaluate(f'relTime("{text}")')) == secs
    if ORACLE is not None:
        assert ORACLE.ExprTree(f'relTime("{text}")').eval() == secs


@pytest.mark.parametrize("text", ["x", "1.5m", "1.5.5", "1d-2", "1 2", "1e5", "5."])
def test_reltime_junk_is_a_syntax_error(text: str) -> None:
    assert_refused(f'relTime("{text}")')


_TIME_TEXT = st.text(alphabet="0123456789-+:TZ .dhms/x", max_size=16)


def _theirs(kind: str, text: str) -> Any:
    """The official library's reading: None when it refuses the text, else seconds."""
    try:
        value = ORACLE.ExprTree(f'{kind}("{text}")').eval()
    except Exception:  # noqa: BLE001  (a refused text, or a year the binding cannot convert)
        return None
    return value.timestamp() if kind == "absTime" else value


@needs_oracle
@settings(max_examples=300, deadline=None)
@given(_TIME_TEXT)
@example("001:0032")  # month 0 of year 1, day 32: through December of year 0 to 0001-01-01
@example("9999-13-01")  # into year 10000, which the binding's datetime cannot hold
def test_any_time_text_reads_as_in_the_library(text: str) -> None:
    mine = parse_abstime(text)
    theirs = _theirs("absTime", text)
    # the binding's datetime has no year 0 nor 10000: where it says nothing, ours stands alone
    if theirs is not None or mine is None or -62135596800 <= mine[0] < 253402300800:
        assert (None if mine is None else mine[0]) == theirs, text
    assert parse_reltime(text) == _theirs("relTime", text), text
