"""Java properties files: the grammar of ``java.util.Properties.load`` and a round trip."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.errors import FormatError
from sheaf.formats import read_properties, write_properties
from sheaf.formats._properties import format_properties, parse_properties


def test_the_syntax_users_write() -> None:
    text = (
        "# PEGASUS PROPERTIES FILE\n"
        "! also a comment\n"
        "\n"
        "pegasus.clusterer.job.aggregator seqexec\n"
        "pegasus.clusterer.preference          Runtime\n"
        "dagman.stage-in.maxjobs = 4\n"
        "dagman.retry:3\n"
        "pegasus.catalog.replica.cache.asrc  true\n"
        "long.value = first \\\n"
        "             second \\\n"
        "   third\n"
        "key\\ with\\ spaces = v\n"
        "escapes = tab\\there\\nnew\\u00e9\n"
        "empty =\n"
        "bare\n"
        "  indented.key = value with trailing   \n"
        "equals\\=in\\:key = a=b:c\n"
    )
    assert parse_properties(text) == {
        "pegasus.clusterer.job.aggregator": "seqexec",
        "pegasus.clusterer.preference": "Runtime",
        "dagman.stage-in.maxjobs": "4",
        "dagman.retry": "3",
        "pegasus.catalog.replica.cache.asrc": "true",
        "long.value": "first second third",
        "key with spaces": "v",
        "escapes": "tab\there\nnew\u00e9",
        "empty": "",
        "bare": "",
        "indented.key": "value with trailing   ",
        "equals=in:key": "a=b:c",
    }


def test_continuation_rules() -> None:
    # an even number of trailing backslashes is an escaped backslash, not a continuation
    assert parse_properties("a = x\\\\\nb = y\n") == {"a": "x\\", "b": "y"}
    assert parse_properties("a = x\\\n# not a comment inside a continuation\n") == {
        "a": "x# not a comment inside a continuation"}
    assert parse_properties("a = x\r\nb = y\rc = z") == {"a": "x", "b": "y", "c": "z"}
    assert parse_properties("a = 1\na = 2\n") == {"a": "2"}


def test_malformed_unicode_escape_has_a_line(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_text("a = 1\nb = \\u12g4\n")
    with pytest.raises(FormatError) as info:
        read_properties(path)
    assert info.value.line == 2 and info.value.path == str(path)


def test_latin1_file(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_bytes(b"name = caf\xe9\n")
    assert read_properties(path) == {"name": "caf\u00e9"}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=12), max_size=6))
def test_round_trip(mapping: dict[str, str]) -> None:
    assert parse_properties(format_properties(mapping)) == mapping
    path = Path(tempfile.mkdtemp()) / "p.properties"
    write_properties(mapping, path)
    assert read_properties(path) == mapping
    path.read_text(encoding="ascii")  # the writer's output is ASCII: it reads the same in Latin-1
