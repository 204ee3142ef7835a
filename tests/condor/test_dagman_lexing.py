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
