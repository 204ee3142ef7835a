"""The DAG-file grammar, driven by data folders: every ``valid/*.dag`` parses to what its ``.json``
says, every ``invalid/*.dag`` fails with the line and the message its first line names
(``# expect: LINE: text``).  Plus several DAG files in one DAG, and writer -> reader round trips."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.condor._dagman import Dag, parse_dag
from sheaf.condor._dagman_file import DagFile, bare, split_words
from sheaf.condor._dagman_settings import _VARS_RULE
from sheaf.errors import FormatError

DATA = Path(__file__).parent / "data" / "dagman"
VALID = sorted((DATA / "valid").glob("*.dag"))
INVALID = sorted((DATA / "invalid").glob("*.dag"))


def _rel(path: str | None, base: Path) -> str | None:
    return None if path is None else os.path.relpath(path, base)


def _node_view(dag: Dag, name: str, base: Path) -> dict[str, Any]:
    spec = dag.nodes[name] if name in dag.nodes else dag.services[name]
    return {
        "vars": spec.vars, "directory": _rel(spec.directory, base), "retries": spec.retries,
        "priority": spec.priority, "category": spec.category, "done": spec.done, "noop": spec.noop,
        "description": spec.description, "submit": _rel(spec.submit, base),
        "pre": spec.pre and os.path.basename(spec.pre.argv[0]),
        "pre_debug": spec.pre and spec.pre.debug and [_rel(spec.pre.debug[0], base), spec.pre.debug[1]],
        "post": spec.post and os.path.basename(spec.post.argv[0]),
        "hold": spec.hold and os.path.basename(spec.hold.argv[0]),
        "save_point": _rel(spec.save_point, base),
        "tolerance": spec.tolerance and list(spec.tolerance),
    }


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid(path: Path) -> None:
    expected = json.loads(path.with_suffix(".json").read_text())
    dag = parse_dag(str(path))
    base = path.parent
    assert set(dag.nodes) == set(expected["nodes"])
    assert set(dag.services) == set(expected.get("services", {}))
    for name, want in (*expected["nodes"].items(), *expected.get("services", {}).items()):
        view = _node_view(dag, name, base)
        assert {k: view[k] for k in want} == want, name
    if "edges" in expected:
        edges = sorted([p, c] for p in dag.children for c in dag.children[p])
        assert edges == sorted(expected["edges"])
    if "cycle" in expected:
        assert list(dag.cycle) == expected["cycle"]
    if "weak" in expected:
        assert sorted([p, c] for p, c in dag.weak) == sorted(expected["weak"])
    if "descriptions" in expected:
        assert {k: len(v.lines) for k, v in dag.descriptions.items()} == expected["descriptions"]
    for key in ("env", "job_attrs"):
        if key in expected:
            assert getattr(dag, key) == expected[key]
    if "env_get" in expected:
        assert list(dag.env_get) == expected["env_get"]
    if "dot" in expected:
        o = dag.dot_options
        assert [_rel(dag.dot, base), o.update, o.overwrite, _rel(o.include, base)] == expected["dot"]
    assert len(dag.warnings) == expected.get("warnings", 0), dag.warnings


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid(path: Path) -> None:
    header = re.match(r"# expect: (\d+): (.*)", path.read_text().splitlines()[0])
    assert header is not None, path
    with pytest.raises(FormatError) as info:
        parse_dag(str(path))
    assert info.value.line == int(header.group(1)), str(info.value)
    assert header.group(2) in str(info.value)
    assert info.value.path is not None and info.value.path.endswith((".dag", ".inc"))


def test_several_dag_files_make_one_dag(tmp_path: Path) -> None:
    (tmp_path / "a.dag").write_text("JOB A a.sub\nRETRY ALL_NODES 2\n")
    (tmp_path / "b.dag").write_text("JOB B b.sub\nPARENT A CHILD B\nCONFIG b.config\n")
    (tmp_path / "b.config").write_text("DAGMAN_MAX_JOBS_SUBMITTED = 3\n")
    dag = parse_dag(str(tmp_path / "a.dag"), str(tmp_path / "b.dag"))
    assert dag.path == str(tmp_path / "a.dag")
    assert dag.children["A"] == ["B"]
    assert (dag.nodes["A"].retries, dag.nodes["B"].retries) == (2, 0)  # ALL_NODES is per file
    assert dag.config["DAGMAN_MAX_JOBS_SUBMITTED"] == "3"


def test_several_dag_files_need_unique_names(tmp_path: Path) -> None:
    (tmp_path / "a.dag").write_text("JOB A a.sub\n")
    (tmp_path / "b.dag").write_text("JOB A b.sub\n")
    with pytest.raises(FormatError) as info:
        parse_dag(str(tmp_path / "a.dag"), str(tmp_path / "b.dag"))
    assert (info.value.path, info.value.line, info.value.rule) == (str(tmp_path / "b.dag"), 1,
                                                                   "node names are unique")


_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,8}", fullmatch=True)
_VALUE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\'),
                 max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_NAME, st.tuples(st.integers(0, 5), st.integers(-10, 10), st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(lambda k: not k.startswith("queue")), _VALUE,
    max_size=3)), min_size=1, max_size=6), st.booleans(), st.data())
def test_writer_reader_round_trip(tmp_path_factory: pytest.TempPathFactory,
                                  nodes: dict[str, tuple[int, int, dict[str, str]]], continued: bool,
                                  data: st.DataObject) -> None:
    """What codegen writes (its record lines) reads back as written, with lines continued or not."""
    from sheaf.codegen._dag import NodeSettings, node_lines

    names = sorted(nodes)
    edges = sorted({(a, b) for a, b in data.draw(st.lists(st.tuples(st.sampled_from(names),
                                                                    st.sampled_from(names))))
                    if names.index(a) < names.index(b)})
    lines: list[str] = []
    for name in names:
        retry, priority, vars_ = nodes[name]
        lines += node_lines(name, f"{name}.sub", NodeSettings(retry, "cat", priority, None, None, None), "o")
        lines += [f'VARS {name} {k}="{v}"' for k, v in vars_.items()]
    lines += [f"PARENT {a} CHILD {b}" for a, b in edges]
    if continued:
        lines = [line.replace(" ", " \\\n  ", 1) for line in lines]
    directory = tmp_path_factory.mktemp("rt")
    (directory / "x.dag").write_text("\n".join(lines) + "\n")
    dag = parse_dag(str(directory / "x.dag"))
    assert sorted(dag.nodes) == names
    for name in names:
        retry, priority, vars_ = nodes[name]
        spec = dag.nodes[name]
        assert (spec.retries, spec.priority, spec.category) == (retry, priority, "cat")
        assert spec.vars == {"+DAGNodeRetry": "$(RETRY)", **vars_}
    assert sorted((p, c) for p in dag.children for c in dag.children[p]) == edges


#: the VARS entry pattern written plainly (an alternation per character), against which the unrolled one
#: is checked
_OLD_VARS_RE = re.compile(r"""[ \t\r]*((?!(?:\+|My\.)[ \t\r=])[^ \t\r"'=]+)[ \t\r]*=[ \t\r]*"""
                          r"""(?:"((?:[^"\\]|\\.)*)"(?=[ \t\r]|$)|'((?:[^'\\]|\\.)*)'(?=[ \t\r]|$)|"""
                          r"""((?![ \t\r=])(?:[^ \t\r"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')+"""
                          r"""(?=[ \t\r]|$)))""")


def _dagman_word(text: str, pos: int) -> tuple[str, int] | None:
    """DAGMan's lexer reading a word at ``pos`` (a non-blank): quotes start and end quoted runs inside it
    (kept in the word), a backslash in a run takes the next character; (the word, where it ends), or None
    for an unclosed quote."""
    out, quote = [], ""
    while pos < len(text):
        c = text[pos]
        if quote and c == "\\":
            if pos + 1 == len(text):
                return None
            out.append(text[pos + 1])
            pos += 1
        elif quote:
            out.append(c)
            quote = "" if c == quote else quote
        elif c in " \t\r":
            break
        else:
            out.append(c)
            quote = c if c in "\"'" else ""
        pos += 1
    return None if quote else ("".join(out), pos)


def _vars_reference(text: str) -> list[tuple[str, str]] | None:
    """A VARS line's entries as DAGMan's key=value reader takes them (the key up to a blank, a quote or
    "=", blanks around the "=", the value one word, without its first and last characters when it starts
    with a quote), or None where DAGMan refuses the line."""
    pos, entries = 0, []
    while text[pos:].strip(" \t\r"):
        match = re.compile(r"""[ \t\r]*([^ \t\r"'=]+)[ \t\r]*=[ \t\r]*""").match(text, pos)
        if match is None or match.end() == len(text) or text[match.end()] == "=" or \
                match.group(1) in ("+", "My.") or match.group(1).lower().startswith("queue"):
            return None
        word = _dagman_word(text, match.end())
        if word is None:
            return None
        value, pos = word
        entries.append((match.group(1), value[1:-1] if value[0] in "\"'" else value))
    return entries or None


_VARS_PIECE = st.one_of(st.sampled_from([" ", "  ", "\t", "My.", "+", "a\"b\"", '"', "'", "\\", '\\"', "\\'",
                                         "\\\\", "=", "a", "B_1", "x.y", "+At", "queue", "$(JOB)", "k=v",
                                         "k='a b'"]),
                        st.text(alphabet=" ab=\"'\\", max_size=4))


_ESCAPED = st.lists(st.sampled_from(["a", " ", '\\"', "\\\\", "\\x", "$(JOB)"]), max_size=4).map("".join)


_VARS_TEXT = st.lists(st.one_of(st.tuples(_NAME, _VALUE).map(lambda kv: f' {kv[0]}="{kv[1]}"'), _VARS_PIECE,
                                st.tuples(_NAME, _ESCAPED).map(lambda kv: f'{kv[0]} = "{kv[1]}" ')),
                      min_size=1, max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_VARS_TEXT, st.text(alphabet=' a_=+"\\\n\t\u00e9\u3000', max_size=30)))
def test_the_unrolled_vars_pattern_matches_what_the_alternation_matched(text: str) -> None:
    """The same matches, at every position, with the same groups: the same language, found the same way."""
    from sheaf.condor._dagman_settings import _VARS_RE

    for pos in range(len(text) + 1):
        old, new = _OLD_VARS_RE.match(text, pos), _VARS_RE.match(text, pos)
        assert (old and (old.span(), old.groups())) == (new and (new.span(), new.groups()))
    assert [m.span() for m in _OLD_VARS_RE.finditer(text)] == [m.span() for m in _VARS_RE.finditer(text)]


@settings(max_examples=300, deadline=None)
@given(_VARS_TEXT)
def test_vars_entries_read_as_dagman_reads_them(text: str) -> None:
    """The VARS reading gives the entries (or the refusal) DAGMan's key=value reader gives."""
    from sheaf.condor._dagman_settings import _vars_entries

    class Line:
        current = f"VARS n {text}"

        def error(self, message: str, rule: str, value: object) -> FormatError:
            return FormatError(message, rule=rule, value=value)

    words = Line.current.split()
    if len(words) < 3 or words[2].upper() in ("PREPEND", "APPEND"):
        return  # the mode word and an empty line are read before the loop, unchanged
    expected = _vars_reference(Line.current.split(None, 2)[2])
    try:
        assert _vars_entries(Line(), words) == ("", expected)  # type: ignore[arg-type]
    except FormatError:
        assert expected is None


def test_a_vars_line_with_junk_after_many_blanks_is_refused_in_linear_time(tmp_path: Path) -> None:
    """A bad entry after a long run of blanks: each entry is matched where the one before ended (a
    search from every later position took 1.4 s for 20,000 blanks, quadratic); timed against a good
    line of the same length read in the same test."""
    import time

    blanks = " " * 20_000

    def read(tail: str) -> float:
        (tmp_path / "x.dag").write_text(f'JOB n n.sub\nVARS n a="1"{blanks}{tail}\n')
        started = time.perf_counter()
        try:
            parse_dag(str(tmp_path / "x.dag"))
        except FormatError as exc:
            assert (exc.rule, exc.value, exc.line) == (_VARS_RULE, "x", 2)
        return time.perf_counter() - started

    good = min(read('b="2"') for _ in range(3))
    assert read("x") < 20 * good + 0.2


def _quoted(word: str, quote: str) -> str:
    return quote + word.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet=" \ta'\"\\/b.", min_size=1, max_size=8), st.sampled_from("\"'")),
                min_size=1, max_size=5))
def test_quoted_words_read_back_as_written(pieces: list[tuple[str, str]]) -> None:
    """Any words, each quoted with an escaped backslash and quote, read back as they were; the word
    DAGMan keeps holds its quotes."""
    line = " ".join(_quoted(word, quote) for word, quote in pieces)
    f = DagFile("x.dag", ".", "", Dag("x.dag", {}, {}, {}, {}, {}), ())
    words = split_words(f, line)
    assert [bare(w) for w in words] == [word for word, _ in pieces]
    assert [str(w)[0] + str(w)[-1] for w in words] == [quote * 2 for _, quote in pieces]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab.+/-_=", min_size=1, max_size=6), min_size=1, max_size=6),
       st.sampled_from([" ", "\t", "  \t "]))
def test_unquoted_words_split_at_blanks(words: list[str], gap: str) -> None:
    f = DagFile("x.dag", ".", "", Dag("x.dag", {}, {}, {}, {}, {}), ())
    assert split_words(f, gap.join(words)) == words
    assert split_words(f, gap.join([*words, "'q r'"]))[-1] == "'q r'"


@pytest.mark.parametrize("line", [
    "JOBSTATE_LOG {long}", "NODE_STATUS_FILE {long} 5", "DOT {long}", "SAVE_POINT_FILE A {long}",
    "SAVE_POINT_FILE A sub/{long}", "INCLUDE {long}", "CONFIG '{long}'", "SAVE_POINT_FILE A"])
def test_a_file_name_component_longer_than_a_file_name_is_refused_at_its_line(tmp_path: Path,
                                                                              line: str) -> None:
    """No file of such a name can be written or read (ENAMETOOLONG): refused as the DAG is read, with
    its line, rather than met by the run as a storage failure when it writes the file."""
    long = "x" * 256
    node = "N" * 250 if line == "SAVE_POINT_FILE A" else "A"  # the default name, <node>-<dag>.save
    text = f"SAVE_POINT_FILE {node}" if node != "A" else line.format(long=long)
    (tmp_path / "wf.dag").write_text(f"JOB {node} a.sub\n{text}\n")
    with pytest.raises(FormatError) as info:
        parse_dag(str(tmp_path / "wf.dag"))
    assert info.value.line == 2 and "at most 255 bytes" in (info.value.rule or ""), info.value
    (tmp_path / "wf.dag").write_text(f"JOB A a.sub\n{line.format(long='x' * 255)}\n")
    if "INCLUDE" not in line and "CONFIG" not in line:
        parse_dag(str(tmp_path / "wf.dag"))  # 255 bytes fit
