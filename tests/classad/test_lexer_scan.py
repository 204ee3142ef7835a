"""The parser's fast token path (``_lexer.scan``: texts only) against the careful one (``tokenize``).

The parser reads ``scan``'s texts and re-reads the text with ``tokenize`` only to place an error's
caret, so both must cut any text the same way, and any text must parse or raise ClassAdSyntaxError.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sheaf.classad import ClassAdSyntaxError, parse
from sheaf.classad._lexer import scan, tokenize

TOKENS = st.sampled_from([
    "a", "Memory", "TARGET", "is", "ISNT", "true", "x_1", "0", "12", "-7", "1.5", ".5e3", "-0.25", '"s"',
    '"a\\"b"', "'q n'", "||", "&&", "==", "=?=", "=!=", "<=", ">>>", "?:", "?", ":", "-", "+", "*", "/",
    "!", "~", "(", ")", "[", "]", "{", "}", ",", ";", ".", "=", "<", "|", "&", "^", "%",
])
BLANKS = st.sampled_from([" ", "  ", "\n", "\t", " /* c */", " // c\n", "\t/**/"])  # no "/" + "/*" = "//"
NOISE = st.text(alphabet="ab01 -+*/()[]{}\"'.,;:?!=<>|&^%~@#$\n\\_", max_size=40)


@given(st.lists(st.tuples(TOKENS, BLANKS), max_size=30))
def test_scan_returns_the_tokens_between_the_blanks(pairs: list[tuple[str, str]]) -> None:
    # a blank after every token, so "-" then "7" never fuse into one literal
    text = "".join(token + blank for token, blank in pairs)
    assert scan(text) == [token for token, _ in pairs] + [""]
    assert [kind for kind, _, _ in tokenize(text)][-1] == "eof"


@given(NOISE)
def test_scan_and_tokenize_cut_any_text_alike(text: str) -> None:
    try:
        located = tokenize(text)
    except ClassAdSyntaxError:
        assert scan(text).count("") == 2  # a character that starts no token: an early ""
        return
    texts, i = scan(text), 0
    for token in texts[:-1]:
        at = located[i][2]
        assert text.startswith(token, at)
        # tokenize splits a "-5" found after an operand in two; scan leaves it whole for the parser
        i += 2 if located[i][:2] == ("op", "-") and token != "-" else 1
    assert texts[-1] == "" and located[i][0] == "eof" and i == len(located) - 1


@given(NOISE)
def test_any_text_parses_or_raises_a_located_syntax_error(text: str) -> None:
    try:
        parse(text)
    except ClassAdSyntaxError as error:
        assert 0 <= error.pos <= len(text) and str(error).splitlines()[-1].strip() == "^"
