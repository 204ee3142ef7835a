"""Python values become ClassAd values as ``classad2`` takes them: ``bytes`` a string, a ``datetime`` an
``absTime`` of the instant it names (a naive one in local time), through every entry point that takes
Python values -- an attribute set, an ad built from a mapping, a list, a nested ad."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import classad2
import htcondor2  # noqa: F401  -- before classad2, as the bindings ask
import pytest

from sheaf import classad

UTC = datetime.UTC
MOMENTS = [datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC),
           datetime.datetime(1999, 12, 31, 23, 59, 59, 500000),  # noqa: DTZ001 -- naive: local time
           datetime.datetime(2021, 5, 6, 7, 8, 9)]  # noqa: DTZ001


@pytest.mark.parametrize("data", [b"hello", b"", b"caf\xc3\xa9", b"a \"quoted\" \\ word"])
def test_bytes_become_the_string_classad2_makes(data: bytes) -> None:
    ours, theirs = classad.ClassAd(), classad2.ClassAd()
    ours["s"], theirs["s"] = data, bytes(data)
    assert ours["s"] == theirs["s"]
    assert classad.evaluate("size(s)", my=ours) == classad2.ExprTree("size(s)").eval(theirs)
    assert classad.ClassAd({"s": data})["s"] == classad2.ClassAd({"s": bytes(data)})["s"]


@pytest.mark.parametrize("moment", MOMENTS)
def test_datetimes_become_the_abstime_classad2_makes(moment: datetime.datetime) -> None:
    ours, theirs = classad.ClassAd(), classad2.ClassAd()
    ours["t"], theirs["t"] = moment, moment
    value = ours["t"]
    assert isinstance(value, classad.AbsTime) and value.offset == 0
    assert value.secs == theirs["t"].timestamp()
    assert str(ours.lookup("t")) == str(theirs.lookup("t"))
    assert classad.evaluate("t < absTime(\"2100-01-01T00:00:00\")", my=ours) is True


def test_nested_values_convert_too() -> None:
    moment = MOMENTS[0]
    ad = classad.ClassAd({"l": [b"x", moment], "a": {"b": b"y", "t": moment}})
    assert ad["l"][0] == "x" and ad["l"][1] == classad.AbsTime(moment.timestamp(), 0)
    assert ad["a"]["b"] == "y"


def test_a_naive_datetime_is_local_time_as_classad2_reads_it() -> None:
    code = ("import datetime, htcondor2, classad2\nfrom sheaf import classad\n"
            "m = datetime.datetime(2020, 1, 2, 3, 4, 5)\n"
            "o, t = classad.ClassAd(), classad2.ClassAd()\no['t'] = m\nt['t'] = m\n"
            "print(o['t'].secs == t['t'].timestamp() == m.timestamp(), o['t'].secs)")
    env = {**os.environ, "TZ": "America/New_York", "CONDOR_CONFIG": "/dev/null"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    expected = datetime.datetime(2020, 1, 2, 8, 4, 5, tzinfo=UTC).timestamp()
    assert done.stdout.split() == ["True", str(expected)]


@pytest.mark.parametrize("text", ["", "   ", "foo = 2 + i", "a = 1\nb = 2"])
def test_the_constructor_reads_new_syntax_only_as_classad2_does(text: str) -> None:
    with pytest.raises(classad2.ClassAdException):
        classad2.ClassAd(text)
    with pytest.raises(classad.ClassAdSyntaxError):
        classad.ClassAd(text)
    assert classad.ClassAd("[ foo = 2 + i ]").lookup("foo") is not None


def test_old_syntax_is_read_by_its_named_entry_point() -> None:
    ours = classad.ClassAd.parse_old("foo = 2 + i\ni = 3")
    theirs = classad2.parseOne("foo = 2 + i\ni = 3", classad2.ParserType.Old)
    assert ours.eval("foo") == 5 == theirs.eval("foo")
    assert classad.evaluate("foo", my="foo = 2 + i\ni = 3") == 5  # evaluate's my/target still take either


@pytest.mark.parametrize("value", [bytearray(b"caf\xc3\xa9"), memoryview(b"ab"), {3, 1, 2}, frozenset({7}),
                                   range(4), (1, "a"), [True, 2.5], iter([1, 2])])
def test_any_other_iterable_becomes_the_list_classad2_makes(value: object) -> None:
    """A bytearray is a list of its bytes, not a string as bytes are; a set, range or iterator a list."""
    items = list(value) if not isinstance(value, memoryview) else list(value.tobytes())  # type: ignore[call-overload]
    ours, theirs = classad.ClassAd(), classad2.ClassAd()
    ours["v"], theirs["v"] = value if not hasattr(value, "__next__") else iter(items), items
    assert classad.evaluate("size(v)", my=ours) == classad2.ExprTree("size(v)").eval(theirs) == len(items)
    assert [classad.evaluate(f"v[{i}]", my=ours) for i in range(len(items))] == items


@pytest.mark.parametrize("number", [1 << 63, -(1 << 63) - 1, 1 << 100])
def test_an_integer_outside_64_bits_is_refused(number: int) -> None:
    with pytest.raises(SystemError):  # the official binding fails too (as a SystemError)
        classad2.ClassAd()["n"] = number
    with pytest.raises(OverflowError, match="64 bits"):
        classad.ClassAd()["n"] = number
    with pytest.raises(OverflowError):
        classad.ClassAd({"l": [1, number]})


@pytest.mark.parametrize("number", [(1 << 63) - 1, -(1 << 63)])
def test_the_64_bit_limits_themselves_are_integers(number: int) -> None:
    ours, theirs = classad.ClassAd(), classad2.ClassAd()
    ours["n"], theirs["n"] = number, number
    assert ours["n"] == theirs["n"] == number


def test_names_of_an_ad_made_from_a_mapping() -> None:
    """An empty name is left out of an ad made from a mapping, as classad2 leaves it out, and refused
    when set alone; a name that is no string is refused."""
    assert list(classad.ClassAd({"": 1, "a": 2})) == ["a"] == list(classad2.ClassAd({"": 1, "a": 2}))
    ad = classad.ClassAd()
    ad["n"] = {"": 1, "b": 2}
    assert classad.evaluate("n.b", my=ad) == 2 and str(ad.lookup("n")) == "[ b = 2 ]"
    with pytest.raises(ValueError, match="empty"):
        ad[""] = 1
    with pytest.raises(TypeError):
        ad[1] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        classad.ClassAd({1: 2})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ad["m"] = {1: 2}
