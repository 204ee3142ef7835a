"""The error tree's messages: one readable line whatever the offending value."""

from __future__ import annotations

from sheaf.errors import SHOWN_VALUE, FormatError


def test_a_short_value_is_shown_whole() -> None:
    err = FormatError("bad type", rule="types are known", value="jbo", path="wf.yml", line=3)
    assert str(err) == "wf.yml:3: bad type (rule: types are known): 'jbo'"


def test_a_huge_value_is_cut_in_the_middle_with_its_length() -> None:
    value = "a" * 500_000 + "TAIL"
    text = str(FormatError("bad type", rule="types are known", value=value, path="wf.yml", line=3))
    assert len(text) < SHOWN_VALUE + 120
    assert text.startswith("wf.yml:3: bad type (rule: types are known): 'aaa")
    assert text.endswith(f"TAIL' ({len(repr(value))} characters)")
