"""String escapes as the ClassAd manual and HTCondor's lexer define them: ``\\a`` and ``\\v`` are BEL
and VT, an octal escape is a byte of the string (HTCondor's strings are bytes, read as UTF-8, so
``"\\342\\200\\223"`` is an en dash, as in the functional tests), and a ``\\0`` is a syntax error (no
literal may hold a NUL).  Control characters are written back as HTCondor writes them.  ``size`` counts
and ``substr`` cuts the UTF-8 bytes, as HTCondor does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_language_exact import ORACLE, assert_refused

from sheaf import classad
from sheaf.classad import ClassAd, _fn_regex


@pytest.mark.parametrize(("text", "value"), [
    ('"\\a\\v"', "\a\v"),
    ('"\\342\\200\\223"', "\u2013"),                 # the functional tests' en dash, in bytes
    ('"\\303\\251t\\303\\251"', "été"),
    ('"\\303" "\\251"', "é"),                        # adjacent literals join before the escapes
    ('"\\101\\044\\44\\1"', "A$$\x01"),               # tests.txt's Octal ad
    ('"\\777"', "?7"),                               # a third digit only after 0-3
    # size counts and substr cuts the UTF-8 bytes
    ('size("é")', 2), ('size("日本語")', 9), ('size("ab")', 2),
    ('substr("éx", 2)', "x"), ('substr("aéb", -3, 2)', "é"), ('substr("\u2013x\u2013", 3, 1)', "x"),
    ('substr("日本語", 3, 3)', "本"), ('substr("日本語", -3)', "語"), ('substr("aé", 1, 0)', ""),
])
def test_strings_read_as_htcondor_reads_them(text: str, value: object) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value


def test_an_octal_byte_outside_utf8_stays_its_character() -> None:
    # the official binding cannot decode such a string at all; sheaf keeps the byte's value
    assert classad.evaluate('"\\344x"') == "\xe4x"


def test_escaped_bytes_equal_the_same_text_written_out() -> None:
    assert classad.evaluate('"\\342\\200\\223" == "\u2013"') is True
    assert classad.evaluate('size("\\303\\251") == size("é")') is True


@pytest.mark.parametrize("text", ['"\\0"', '"a\\00"', '"\\000b"', '"\\08"', "x + \"\\0\"", "'a\\0' + 1"])
def test_a_nul_escape_is_a_syntax_error(text: str) -> None:
    assert_refused(text)


@pytest.mark.parametrize("text", ['[a = 1;\n b = "x\\0"]', "[ a = \"\\0\" ]"])
def test_a_nul_escape_in_an_ad_is_placed_at_its_string(text: str) -> None:
    with pytest.raises(classad.ClassAdSyntaxError) as caught:
        ClassAd.parse(text)
    assert text[caught.value.pos] == '"'
    assert "NUL" in str(caught.value)


def test_old_syntax_backslash_zero_is_two_characters() -> None:
    assert ClassAd.parse_old('a = "x\\0"').eval("a") == "x\\0"


def test_control_characters_are_written_as_htcondor_writes_them() -> None:
    assert classad.unparse(classad.parse('"\\a\\v\\001\\177x\\t\\n"')) == '"\\a\\v\\001\\177x\\t\\n"'
    if ORACLE is not None:
        assert str(ORACLE.ExprTree('"\\a\\v\\001\\177x\\t\\n"')) == '"\\a\\v\\001\\177x\\t\\n"'


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=20))
def test_any_string_reads_back_from_its_text_and_its_bytes(value: str) -> None:
    assert classad.evaluate(classad.unparse(classad.parse(_literal(value)))) == value
    octal = "".join(f"\\{byte:03o}" for byte in value.encode())
    assert classad.evaluate(f'"{octal}"') == value


def _literal(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_a_cut_through_a_character_keeps_its_bytes() -> None:
    # the official binding cannot decode such a string; sheaf keeps each byte as its character
    assert classad.evaluate('substr("éx", 1)') == "\xa9x"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=8), st.integers(-10, 10), st.integers(-10, 10))
def test_substr_of_ascii_is_unchanged_by_the_byte_reading(text: str, offset: int, length: int) -> None:
    ascii_text = text.encode("ascii", "ignore").decode().replace("\\", "").replace('"', "")
    expr = classad.parse(f'substr("{ascii_text}", {offset}, {length})')
    cut = classad.evaluate(expr)
    assert cut == _python_cut(ascii_text, offset, length)


def _python_cut(text: str, offset: int, length: int) -> str:
    if length == 0:
        return ""
    start = max(len(text) + offset, 0) if offset < 0 else min(offset, len(text))
    stop = len(text) + length if length < 0 else start + length
    return text[start:max(stop, start)]


@pytest.mark.parametrize("char", ["\v", "\f", "\x1c", "\x85", "\u2028", "\r"])
def test_an_old_syntax_line_ends_at_a_newline_only(char: str) -> None:
    """HTCondor's old-syntax ad breaks lines at newlines; ``str.splitlines`` breaks at more."""
    text = f'x = "a{char}b"\r\ny = 1\n'
    ad = ClassAd.parse_old(text)
    assert (ad.eval("x"), ad.eval("y")) == (f"a{char}b", 1)
    assert ClassAd.parse_old(ad.unparse_old()).eval("x") == f"a{char}b"
    if ORACLE is not None:
        assert ORACLE.parseOne(text, ORACLE.ParserType.Old)["x"] == f"a{char}b"


@pytest.mark.parametrize(("text", "value"), [
    ('string({"\u2013"})', '{ "\\342\\200\\223" }'), ('string([a = "é"])', '[ a = "\\303\\251" ]'),
    ('string({"a\\tb\\001"})', '{ "a\\tb\\001" }'),
])
def test_htcondor_spelling_writes_bytes_past_ascii_in_octal(text: str, value: str) -> None:
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value
    assert classad.evaluate(f"eval({text})") == classad.evaluate(text[7:-1])  # and reads back


@pytest.mark.parametrize(("text", "value"), [
    ('regexp("^.$", "é")', False), ('regexp("^..$", "é")', True), ('regexp("^..$", "日本")', False),
    ('regexps("^..$", "é", "<\\\\0>")', "<é>"), ('regexps("(é)", "xéy", "[\\\\1]", "g")', "[é]"),
    ('regexp("\\\\w", "é")', False), ('regexp("[[:alpha:]]", "é")', False), ('regexp("É", "é", "i")', False),
    ('replaceAll("é", "éé", "e")', "ee"), ('regexpMember("^..$", {"é"})', True),
])
def test_regular_expressions_match_utf8_bytes(text: str, value: object) -> None:
    """PCRE as HTCondor runs it matches bytes: ``.`` is one byte, classes and caseless are ASCII."""
    assert classad.evaluate(text) == value
    if ORACLE is not None:
        assert ORACLE.ExprTree(text).eval() == value


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab.*^$()[]|?+\\wdWs:", max_size=8), st.text(alphabet="abAB _1", max_size=8),
       st.sampled_from(["", "i", "m", "s", "x"]))
def test_ascii_text_matches_alike_as_characters_and_as_bytes(pattern: str, target: str, options: str) -> None:
    as_text, as_bytes = _fn_regex._compile(pattern, options), _fn_regex._compile(pattern, options, True)
    assert (as_text is None) == (as_bytes is None)
    if as_text is not None:
        found = as_text.search(target), as_bytes.search(target)
        assert [m and m.span() for m in found[:1]] == [m and m.span() for m in found[1:]]
