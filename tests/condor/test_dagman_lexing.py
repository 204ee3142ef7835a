"""The DAG file as DAGMan's current parser reads it (the DAGMan manual; HTCondor's DAG parser): lines
continued past blank and comment lines, VARS entries, NODE_STATUS_FILE options in any order, integers
read as C's ``stoi`` reads them, commands a splice does not carry out, and where an error is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf.condor._dagman import Dag, parse_dag
from sheaf.errors import FormatError


def dag_of(directory: Path, text: str) -> Dag:
    """``text`` written as ``wf.dag`` in ``directory``, parsed."""
    (directory / "wf.dag").write_text(text)
    return parse_dag(str(directory / "wf.dag"))


def refusal(directory: Path, text: str) -> FormatError:
    """The error of the DAG file ``text`` (which must be refused)."""
    with pytest.raises(FormatError) as caught:
        dag_of(directory, text)
    return caught.value


# ---- continued lines -------------------------------------------------------------------------

@pytest.mark.parametrize("between", ["\n", "\n\n   \n", "# a comment\n", "// a comment\n\n"])
def test_blank_and_comment_lines_inside_a_continuation_are_passed_over(tmp_path: Path, between: str) -> None:
    dag = dag_of(tmp_path, f"JOB A \\\n{between}  e0.sub\nJOB B b.sub\n")
    assert sorted(dag.nodes) == ["A", "B"]
    assert dag.nodes["A"].submit == str(tmp_path / "e0.sub")


def test_a_continued_command_is_reported_at_its_last_line(tmp_path: Path) -> None:
    error = refusal(tmp_path, "JOB A a.sub\nRETRY A \\\n\n  x\n")
    assert (error.line, error.rule) == (4, "retry count is an integer")


def test_a_continued_quoted_value_keeps_its_blanks(tmp_path: Path) -> None:
    # the line is joined as written: the blank before the backslash, then one blank, then the next line
    dag = dag_of(tmp_path, 'JOB A a.sub\nVARS A x="a \\\n   b"\n')
    assert dag.nodes["A"].vars["x"] == "a  b"


# ---- VARS ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("entries", "expected"), [
    ('my-var="v"', {"my-var": "v"}),  # a key is any word without blanks, quotes or "="
    ('1x="1" $y=2', {"1x": "1", "$y": "2"}),
    ('x=a"b"', {"x": 'a"b"'}),  # a word not starting with a quote keeps its quotes
    ('x=a"b c"d', {"x": 'a"b c"d'}),  # ... and its quoted blanks
    ('x="a"b', {"x": 'a"'}),  # a word starting with one loses its first and last characters
    ('x="a b"c y=2', {"x": 'a b"', "y": "2"}),
    ("x='it''s'", {"x": "it''s"}),
    ('x="a\\"b" y=\'c\\\\\'', {"x": 'a"b', "y": "c\\"}),  # escapes in quoted runs
    ('x=a\\b y="a"\\b', {"x": "a\\b", "y": 'a"\\'}),  # a backslash outside quotes is a character
    ('x = "a" y= b z =c=d', {"x": "a", "y": "b", "z": "c=d"}),
    ('+a=1 My.b=2 x=""', {"+a": "1", "My.b": "2", "x": ""}),
])
def test_vars_entries_as_dagmans_parser_reads_them(tmp_path: Path, entries: str,
                                                   expected: dict[str, str]) -> None:
    spec = dag_of(tmp_path, f"JOB A a.sub\nVARS A {entries}\n").nodes["A"]
    assert {k: v for k, v in spec.vars.items() if k != "+DAGNodeRetry"} == expected


@pytest.mark.parametrize(("entries", "reason"), [
    ('x"=1', "quotation mark"), ('x "=1', "no '='"), ("=1", "misses its key"),
    ("x=1 y", "no '=' and no value"),
    ("x =", "has no value"), ("x==1", "second '='"), ("x= =1", "second '='"), ('x="a', "quote is not closed"),
    ("+=1", "no letter or digit"), ("My.=1", "no letter or digit"),
])
def test_what_dagman_refuses_in_vars_is_refused_with_its_line(tmp_path: Path, entries: str,
                                                               reason: str) -> None:
    error = refusal(tmp_path, f"JOB A a.sub\nVARS A {entries}\n")
    assert error.line == 2 and reason in error.message and error.path == str(tmp_path / "wf.dag")


@pytest.mark.parametrize("entries", ["queue=1", "x=1 QUEUEx=2"])
def test_vars_names_starting_with_queue_stay_refused(tmp_path: Path, entries: str) -> None:
    error = refusal(tmp_path, f"JOB A a.sub\nVARS A {entries}\n")
    assert (error.line, error.rule) == (2, "VARS names do not begin with 'queue'")


# ---- NODE_STATUS_FILE ----------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "secs", "always"), [
    ("", 60.0, False), ("30", 30.0, False), ("ALWAYS-UPDATE", 60.0, True),
    ("ALWAYS-UPDATE 30", 30.0, True),
    ("30 always_update", 30.0, True), ("30 40", 40.0, False), ("5 ALWAYS-UPDATE 7", 7.0, True),
])
def test_node_status_file_options_in_any_order(tmp_path: Path, options: str, secs: float,
                                               always: bool) -> None:
    dag = dag_of(tmp_path, f"JOB A a.sub\nNODE_STATUS_FILE st.txt {options}\n")
    assert dag.node_status_file == (str(tmp_path / "st.txt"), secs) and dag.node_status_always is always


@pytest.mark.parametrize("options", ["30 bogus", "bogus", "ALWAYS-UPDATE x"])
def test_node_status_file_refuses_a_word_that_is_no_option(tmp_path: Path, options: str) -> None:
    error = refusal(tmp_path, f"JOB A a.sub\nNODE_STATUS_FILE st.txt {options}\n")
    assert error.line == 2 and error.value == options.rsplit(maxsplit=1)[-1]


# ---- commands a splice does not carry out ----------------------------------------------------------

_SPLICE_IGNORES = ("NODE_STATUS_FILE inner.status 5 ALWAYS-UPDATE\nJOBSTATE_LOG inner.jobstate\n"
                   "DOT inner.dot UPDATE\n")


def test_status_jobstate_and_dot_in_a_splice_are_ignored_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "inner.dag").write_text("JOB X x.sub\n" + _SPLICE_IGNORES)
    (tmp_path / "deeper.dag").write_text("JOB Y y.sub\nINCLUDE deeper.inc\n")
    (tmp_path / "deeper.inc").write_text(_SPLICE_IGNORES)
    dag = dag_of(tmp_path, "JOB A a.sub\nSPLICE S inner.dag\nSPLICE T deeper.dag\n")
    assert (dag.node_status_file, dag.jobstate_log, dag.dot) == (None, None, None)
    assert not dag.node_status_always
    for path, first in ((tmp_path / "inner.dag", 2), (tmp_path / "deeper.inc", 1)):
        for line, keyword in enumerate(("NODE_STATUS_FILE", "JOBSTATE_LOG", "DOT"), first):
            where = f"{path}:{line}: {keyword} in a splice"
            assert any(w.startswith(where) for w in dag.warnings), dag.warnings


def test_the_top_dags_own_and_its_includes_take_effect_after_a_splices(tmp_path: Path) -> None:
    (tmp_path / "inner.dag").write_text("JOB X x.sub\n" + _SPLICE_IGNORES)
    (tmp_path / "top.inc").write_text("NODE_STATUS_FILE top.status 7\nJOBSTATE_LOG top.jobstate\n"
                                      "DOT top.dot\n")
    dag = dag_of(tmp_path, "SPLICE S inner.dag\nJOB A a.sub\nINCLUDE top.inc\n")
    assert dag.node_status_file == (str(tmp_path / "top.status"), 7.0) and not dag.node_status_always
    assert (dag.jobstate_log, dag.dot) == (str(tmp_path / "top.jobstate"), str(tmp_path / "top.dot"))
    assert not dag.dot_options.update


# ---- integers, read as C's stoi reads them -------------------------------------------------------

def test_a_number_followed_by_other_text_is_the_number_with_a_warning(tmp_path: Path) -> None:
    dag = dag_of(tmp_path, "JOB A a.sub\nPRIORITY A 1.5\nRETRY A 2x UNLESS-EXIT 3e\nPRE_SKIP A +4y\n"
                           "ABORT-DAG-ON A 5.0 RETURN 6z\nCATEGORY A c\nMAXJOBS c 7q\nTOLERANCE A 8x%\n"
                           "SCRIPT DEFER 9a 10b PRE A pre.sh\n")
    spec = dag.nodes["A"]
    assert (spec.priority, spec.retries, spec.unless_exit, spec.pre_skip) == (1, 2, 3, 4)
    assert (spec.abort_on, dag.maxjobs["c"], spec.tolerance) == ((5, 6), 7, (8, True, ""))
    assert spec.pre is not None and (spec.pre.defer_status, spec.pre.defer_time) == (9, 10.0)
    for line, ignored in ((2, ".5"), (3, "x"), (3, "e"), (4, "y"), (5, ".0"), (5, "z"), (7, "q"), (8, "x"),
                          (9, "a"), (9, "b")):
        assert any(w.startswith(f"{tmp_path / 'wf.dag'}:{line}: ") and f"'{ignored}'" in w
                   for w in dag.warnings), (line, ignored, dag.warnings)


@pytest.mark.parametrize(("line", "rule"), [
    ("PRIORITY A x1", "priority is an integer"),
    ("PRIORITY A 2147483648", "priority is -2147483648 to 2147483647"),
    ("PRIORITY A -99999999999999999999x", "priority is -2147483648 to 2147483647"),
    ("RETRY A -1x", "retry count is 0 to 2147483647"),
    ("MAXJOBS c -2", "MAXJOBS value is 0 to 2147483647"),
    ("ABORT-DAG-ON A 1 RETURN 256x", "RETURN value is 0..255"),
    ("PRE_SKIP A 300", "PRE_SKIP exit code is 0 to 255"),
])
def test_numbers_dagman_refuses_stay_refused(tmp_path: Path, line: str, rule: str) -> None:
    error = refusal(tmp_path, f"JOB A a.sub\n{line}\n")
    assert (error.line, error.rule) == (2, rule)


def test_leading_zeros_and_a_negative_defer_time_are_taken(tmp_path: Path) -> None:
    dag = dag_of(tmp_path, "JOB A a.sub\nPRIORITY A -0000000000000000000000007\n"
                           "SCRIPT DEFER 1 -5 POST A p.sh\n")
    spec = dag.nodes["A"]
    assert spec.priority == -7 and spec.post is not None and spec.post.defer_time == 0.0


# ---- where an error is reported ----------------------------------------------------------------

@pytest.mark.parametrize("keyword", ["PIN_IN", "PIN_OUT"])
def test_a_pin_naming_an_unknown_node_is_refused_at_its_own_line(tmp_path: Path, keyword: str) -> None:
    (tmp_path / "s.dag").write_text(f"JOB X x.sub\nPIN_IN X 1\n\n{keyword} Y 2\nINCLUDE s.inc\n")
    (tmp_path / "s.inc").write_text("# pins\nPIN_OUT X 1\n")
    error = refusal(tmp_path, "SPLICE S s.dag\n")
    assert (error.path, error.line, error.value) == (str(tmp_path / "s.dag"), 4, "Y")
    (tmp_path / "s.dag").write_text("JOB X x.sub\nPIN_IN X 1\nINCLUDE s.inc\n")
    (tmp_path / "s.inc").write_text(f"# pins\n{keyword} Z 1\n")
    error = refusal(tmp_path, "SPLICE S s.dag\n")
    assert (error.path, error.line, error.value) == (str(tmp_path / "s.inc"), 2, "Z")


# ---- inline descriptions: what DAGMan passes over ------------------------------------------------

def test_text_after_an_inline_opening_is_ignored_with_a_warning(tmp_path: Path) -> None:
    dag = dag_of(tmp_path, "JOB A {  NOOP\nexecutable = /bin/true\n} DONE\n"
                           "JOB B {x executable = /bin/false\nexecutable = /bin/true\n}\n")
    a, b = dag.nodes["A"], dag.nodes["B"]
    assert (a.noop, a.done, b.noop) == (False, True, False)  # options count after the closing } only
    body = {n: dag.descriptions[s.description].lines for n, s in (("A", a), ("B", b)) if s.description}
    assert body == {"A": ((2, "executable = /bin/true"),), "B": ((5, "executable = /bin/true"),)}
    dag_file = tmp_path / "wf.dag"
    assert any(w.startswith(f"{dag_file}:1: ") and "'NOOP'" in w for w in dag.warnings), dag.warnings
    assert any(w.startswith(f"{dag_file}:4: ") and "'x executable = /bin/false'" in w
               for w in dag.warnings), dag.warnings


def test_text_after_a_submit_descriptions_closing_is_ignored_with_a_warning(tmp_path: Path) -> None:
    dag = dag_of(tmp_path, "SUBMIT-DESCRIPTION D {\nexecutable = /bin/true\n} extra words\nJOB A D\n")
    assert dag.nodes["A"].description == "D"
    assert dag.descriptions["D"].lines == ((2, "executable = /bin/true"),)
    assert any(w.startswith(f"{tmp_path / 'wf.dag'}:3: ") and "'extra words'" in w
               for w in dag.warnings), dag.warnings
