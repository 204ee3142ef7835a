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


@pytest.mark.parametrize("queue", ["queue x in files (a b)", "queue x in dirs (a b)",
                                   "queue x from any f.txt", "queue x in any (a b)",
                                   "queue x matching table *.txt"])
def test_a_qualifier_after_the_wrong_mode_is_refused_as_htcondor_refuses_it(queue: str) -> None:
    text = f"executable = /bin/true\n{queue}\n"
    with pytest.raises(FormatError, match="queue keyword conflict"):
        parse_submit_lines(logical_lines(text), "t.sub", "/tmp")
    with pytest.raises(ValueError, match="Queue keyword conflict"):
        htcondor2.Submit(text).itemdata()  # the queue statement is read when its items are asked for


@pytest.mark.parametrize(("queue", "kept"), [
    ("queue x in [1:3] (a b c d)", ["b", "c"]), ("queue x in [-1] (a b c d)", ["d"]),
    ("queue x in [2] (a b c d)", ["c", "d"]), ("queue x in [::2] (a b c d e)", ["a", "c", "e"]),
    ("queue x in [:-2] (a b c d)", ["a", "b"]), ("queue x in [1::-2] (a b c d e)", ["b", "d"]),
    ("queue x in [] (a b)", ["a", "b"]),
])
def test_a_queue_slice_keeps_the_items_condor_submit_keeps(queue: str, kept: list[str]) -> None:
    """condor_submit's slice: Python's syntax, but "[2]" keeps the items from the third on and a step
    never reverses; the items themselves are the whole list (``itemdata`` has them all)."""
    text = f"executable = /bin/true\n{queue}\n"
    desc = parse_submit_lines(logical_lines(text), "t.sub", "/tmp")
    rows = queue_items(desc.queue, "/tmp")
    assert rows == [dict(i) for i in htcondor2.Submit(text).itemdata()]
    assert [rows[ix]["x"] for ix in desc.queue.selected(len(rows))] == kept


_BOUND = st.one_of(st.none(), st.integers(-15, 15))


@given(st.integers(0, 12), _BOUND, _BOUND, st.one_of(st.none(), st.integers(-4, 4)))
def test_the_slice_selects_as_qslice_does(count: int, start: int | None, end: int | None,
                                          step: int | None) -> None:
    from sheaf.condor import Queue

    def qslice(ix: int) -> bool:  # HTCondor's qslice::selected, one index at a time
        first = 0 if start is None else (start + count if start < 0 else start)
        last = count if end is None else (end + count if end < 0 else end)
        return first <= ix < last and (not step or (ix - first) % step == 0)

    queue = Queue(part=(start, end, step))
    assert queue.selected(count) == [ix for ix in range(count) if qslice(ix)]


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


def test_an_old_syntax_environment_is_split_on_the_delimiter_its_first_character_names() -> None:
    """HTCondor's ``Env::MergeFromV1AutoDelim``: a first character among its permitted delimiters names
    the delimiter; else ``;``.  The ``$`` of a ``$$(...)`` the match fills in names none."""
    from sheaf.condor import v1_environment_entries

    assert v1_environment_entries("A=1;B=2") == ["A=1", "B=2"]
    assert v1_environment_entries("|A=x;y|B=z|") == ["A=x;y", "B=z"]
    assert v1_environment_entries("  !A=1!B=2") == ["A=1", "B=2"]
    assert v1_environment_entries("$$(SiteEnvironment);PATH=/bin") == ["$$(SiteEnvironment)", "PATH=/bin"]
    assert v1_environment_entries("") == []
