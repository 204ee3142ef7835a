"""The submit language against ``htcondor2.Submit`` (the official parser) as the oracle: macro
expansion, function macros, if/elif/else and queue statements; plus the refusals."""

from __future__ import annotations

import os

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

import htcondor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf._text import logical_lines
from sheaf.condor._submit_lang import Macros, effective_values, parse_submit_lines, queue_items
from sheaf.errors import FormatError


def _ours(text: str, key: str) -> str:
    desc = parse_submit_lines(logical_lines(text), "t.sub", "/tmp")
    macros = Macros("t.sub", desc.values, environ={"HOME": "/home/x"})
    values, _attrs = effective_values(desc, macros)
    macros.file = values
    return macros.get(key)


def _theirs(text: str, key: str) -> str:
    return str(htcondor2.Submit(text).expand(key))


CASES = [
    ("X = 3\nif $(X)\n  A = three\nelif defined Y\n  A = why\nelse\n  A = other\nendif\n", "A"),
    ("if defined Y\n  A = y\nelif defined X\n  A = x\nelse\n  A = none\nendif\nX = 1\n", "A"),
    ("if ! defined X\n  A = undef\nelse\n  A = def\nendif\n", "A"),
    ("if version >= 8.0\n  A = new\nelse\n  A = old\nendif\n", "A"),
    ("if false\n  A = no\nendif\nif yes\n  B = yes\nendif\nC = $(B)$(A)\n", "C"),
    ("if true\n  if false\n    A = inner\n  else\n    A = outer\n  endif\nendif\n", "A"),
    ("A = $CHOICE(1, a, b, c)\n", "A"),
    ("L = p, q, r\nI = 2\nA = $CHOICE(I, L)\n", "A"),
    ("A = $CHOICE(IsWindows, w, l) $CHOICE(IsLinux, w, l) $(IsLinux)$(IsWindows)\n", "A"),
    ("X = 7\nA = $INT(X,%04d)\n", "A"),
    ("X = 7\nA = $INT(X)\n", "A"),
    ("A = $Fn(/a/b/c.txt)$Fx(/a/b/c.txt)$Fp(/a/b/c.txt)$Fd(/a/b/c.txt)$Fq(/a/b/c.txt)\n", "A"),
    ("A = $BASENAME(/a/b/c.txt) $DIRNAME(/a/b/c.txt)\n", "A"),
    ("N = abcdef\nA = $SUBSTR(N, 1, 3) $SUBSTR(N, -1) $SUBSTR(N, 0, -2)\n", "A"),
    ("A = $RANDOM_INTEGER(5, 5)\n", "A"),
    ("A = $RANDOM_CHOICE(only)\n", "A"),
    ("B = b\nA = x$(B)y$(C:dflt)z\n", "A"),
    ("A = keep $$(Memory) as is\n", "A"),
    ("A = long \\\n  line\n", "A"),
    ("A = a\nA = $(A) b\n", "A"),
    ("B =\nif defined B\n  A = yes\nelse\n  A = no\nendif\n", "A"),
]


@pytest.mark.parametrize(("body", "key"), CASES)
def test_expansion_matches_htcondor(body: str, key: str) -> None:
    text = "executable = /bin/true\n" + body + "queue\n"
    assert _ours(text, key) == _theirs(text, key)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["A", "B", "C"]),
                          st.sampled_from(["1", "0", "x", "$(A)", "$(B)y"])),
                max_size=5),
       st.sampled_from(["defined A", "! defined B", "$(C)", "true", "0"]))
def test_conditionals_match_htcondor(assigns: list[tuple[str, str]], cond: str) -> None:
    body = "".join(f"{k} = {v}\n" for k, v in assigns)
    text = f"executable = /bin/true\n{body}if {cond}\n  R = yes\nelse\n  R = no\nendif\nqueue\n"
    try:
        theirs = _theirs(text, "R")
    except Exception:  # noqa: BLE001 - htcondor refuses (e.g. $(C) not a boolean): so must we
        with pytest.raises(FormatError):
            _ours(text, "R")
        return
    assert _ours(text, "R") == theirs


@pytest.mark.parametrize(("queue", "rows"), [
    ("queue 3", [{}]),
    ("queue in (a, b c)", [{"Item": "a"}, {"Item": "b"}, {"Item": "c"}]),
    ("queue 2 x in (a, b)", [{"x": "a"}, {"x": "b"}]),
    ("queue x, y from (\n 1 2\n 3 4\n)", [{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]),
    ("queue name in (\n one\n two\n)", [{"name": "one"}, {"name": "two"}]),
])
def test_queue_statements_match_htcondor(queue: str, rows: list[dict[str, str]]) -> None:
    text = f"executable = /bin/true\n{queue}\n"
    desc = parse_submit_lines(logical_lines(text), "t.sub", "/tmp")
    assert queue_items(desc.queue, "/tmp") == rows
    theirs = htcondor2.Submit(text)
    items = list(theirs.itemdata() or [])
    if rows != [{}]:
        assert [dict(i) for i in items] == rows
    count = int(str(theirs.getQArgs()).split()[0]) if str(theirs.getQArgs()).split()[0].isdigit() else 1
    assert desc.queue.count == count


def test_queue_matching(tmp_path: os.PathLike[str]) -> None:
    for name in ("a.txt", "b.txt", "c.dat"):
        open(os.path.join(tmp_path, name), "w").close()
    desc = parse_submit_lines(logical_lines("executable = x\nqueue f matching files *.txt\n"), "t",
                              str(tmp_path))
    assert queue_items(desc.queue, str(tmp_path)) == [{"f": "a.txt"}, {"f": "b.txt"}]


@pytest.mark.parametrize(("text", "line", "rule"), [
    ("executable = x\nif $(A) == 3\nendif\nqueue\n", 2, "if [!] defined NAME"),
    ("executable = x\nif true\nqueue\n", 3, "queue is not inside if ... endif"),
    ("executable = x\nendif\nqueue\n", 2, "elif, else and endif follow an if"),
    ("executable = x\nif true\nelse\nelse\nendif\nqueue\n", 4, "else is the last branch of an if"),
    ("executable = x\nqueue\nqueue 2\n", 3, "one queue statement per node's submit description"),
    ("executable = x\nqueue 5 in (a\n", 2, "queue ... ( items ... )"),
])
def test_refusals_name_the_line(text: str, line: int, rule: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_submit_lines(logical_lines(text), "t.sub", "/tmp")
    assert info.value.line == line
    assert rule in (info.value.rule or "")
