"""DAG files as pegasus-plan writes them (and as people hand-edit them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf.engine._dagfile import parse_dag, parse_rescue
from sheaf.errors import FormatError

PEGASUS_DAG = """\
######################################################################
# PEGASUS WMS GENERATED DAG FILE
# DAG blackdiamond
# Index = 0, Count = 1
######################################################################
CONFIG blackdiamond-0.dag.config
JOBSTATE_LOG jobstate.log
MAXJOBS stage-in 10
MAXJOBS cleanup 4

JOB create_dir_blackdiamond_0_local create_dir_blackdiamond_0_local.sub
SCRIPT POST create_dir_blackdiamond_0_local /usr/bin/pegasus-exitcode -r $RETURN create_dir_blackdiamond_0_local.out
RETRY create_dir_blackdiamond_0_local 3
VARS create_dir_blackdiamond_0_local +DAGNodeRetry="$(RETRY)"
PRE_SKIP create_dir_blackdiamond_0_local 1

JOB stage_in_local_local_0 stage_in_local_local_0.sub DIR stage
CATEGORY stage_in_local_local_0 stage-in
RETRY stage_in_local_local_0 3 UNLESS-EXIT 42
PRIORITY stage_in_local_local_0 20
VARS stage_in_local_local_0 +DAGNodeRetry="$(RETRY)" label="with \\"quotes\\" and spaces"

JOB preprocess_ID0000001 preprocess_ID0000001.sub
ABORT-DAG-ON preprocess_ID0000001 3 RETURN 1
SCRIPT DEFER 4 30 PRE preprocess_ID0000001 pre.sh $JOB $RETRY

JOB noop_node noop.sub NOOP
JOB already already.sub DONE
FINAL final_node final.sub

PARENT create_dir_blackdiamond_0_local CHILD stage_in_local_local_0 noop_node
PARENT stage_in_local_local_0 noop_node CHILD preprocess_ID0000001
PARENT already CHILD preprocess_ID0000001
DOT blackdiamond.dot
NODE_STATUS_FILE blackdiamond.status 5
######################################################################
# End of DAG
######################################################################
"""


def write(tmp_path: Path, text: str, name: str = "wf.dag") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pegasus_generated_dag(tmp_path: Path) -> None:
    write(tmp_path, "DAGMAN_MAX_JOBS_SUBMITTED = 5\nDAGMAN_MAX_PRE_SCRIPTS=2\n", "blackdiamond-0.dag.config")
    dag = parse_dag(str(write(tmp_path, PEGASUS_DAG)))
    assert list(dag.nodes) == ["create_dir_blackdiamond_0_local", "stage_in_local_local_0",
                               "preprocess_ID0000001", "noop_node", "already", "final_node"]
    create = dag.nodes["create_dir_blackdiamond_0_local"]
    assert create.retries == 3 and create.pre_skip == 1 and create.vars == {"+DAGNodeRetry": "$(RETRY)"}
    assert create.post is not None and create.post.argv[-2:] == ("$RETURN", "create_dir_blackdiamond_0_local.out")
    stage = dag.nodes["stage_in_local_local_0"]
    assert stage.directory == str(tmp_path / "stage") and stage.submit == str(tmp_path / "stage" /
                                                                                  "stage_in_local_local_0.sub")
    assert (stage.retries, stage.unless_exit, stage.priority, stage.category) == (3, 42, 20, "stage-in")
    assert stage.vars["label"] == 'with "quotes" and spaces'
    pre = dag.nodes["preprocess_ID0000001"]
    assert pre.abort_on == (3, 1) and pre.pre is not None and (pre.pre.defer_status, pre.pre.defer_time) == (4, 30.0)
    assert dag.nodes["noop_node"].noop and dag.nodes["already"].done and dag.final == "final_node"
    assert sorted(dag.parents["preprocess_ID0000001"]) == ["already", "noop_node", "stage_in_local_local_0"]
    assert dag.maxjobs == {"stage-in": 10, "cleanup": 4}
    assert dag.config == {"DAGMAN_MAX_JOBS_SUBMITTED": "5", "DAGMAN_MAX_PRE_SCRIPTS": "2"}
    assert dag.jobstate_log == str(tmp_path / "jobstate.log") and dag.node_status_file == (
        str(tmp_path / "blackdiamond.status"), 5.0)


def test_all_nodes_defaults_and_own_settings_win(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, "RETRY ALL_NODES 2\nVARS ALL_NODES a=\"1\" b=\"2\"\nJOB A a.sub\n"
                                        "JOB B b.sub\nRETRY B 5\nVARS B b=\"own\"\nCATEGORY ALL_NODES c\n")))
    assert (dag.nodes["A"].retries, dag.nodes["B"].retries) == (2, 5)
    assert dag.nodes["B"].vars == {"a": "1", "b": "own"} and dag.nodes["A"].category == "c"


def test_splice_names_and_edges(tmp_path: Path) -> None:
    (tmp_path / "inner").mkdir()
    write(tmp_path / "inner", "JOB X x.sub\nJOB Y y.sub\nPARENT X CHILD Y\n", "inner.dag")
    dag = parse_dag(str(write(tmp_path, "JOB A a.sub\nJOB Z z.sub\nSPLICE S inner.dag DIR inner\n"
                                        "PARENT A CHILD S\nPARENT S CHILD Z\n")))
    assert set(dag.nodes) == {"A", "Z", "S+X", "S+Y"}
    assert dag.children["A"] == ["S+X"] and dag.parents["Z"] == ["S+Y"]
    assert dag.nodes["S+X"].submit == str(tmp_path / "inner" / "x.sub")


def test_subdag_external(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, "SUBDAG EXTERNAL sub inner.dag DIR d\nJOB A a.sub\nPARENT sub CHILD A\n")))
    assert dag.nodes["sub"].subdag and dag.nodes["sub"].submit == str(tmp_path / "d" / "inner.dag")


@pytest.mark.parametrize(("text", "line", "rule"), [
    ("JOB A a.sub\nRETRY A x\n", 2, "retry count is an integer"),
    ("JOB A a.sub\nJOB A b.sub\n", 2, "node names are unique"),
    ("JOB A a.sub\nPARENT A CHILD B\n", 2, "PARENT/CHILD name declared nodes or splices"),
    ("JOB A a.sub\nFROB A\n", 2, "a known DAGMan command"),
    ("JOB A a.sub\nVARS A key=unquoted\n", 2, 'VARS node key="value" ...'),
    ("JOB A a.sub\nPARENT A\n", 2, "PARENT p... CHILD c..."),
    ("JOB A a.sub\nSCRIPT MIDDLE A x.sh\n", 2, "SCRIPT type is PRE, POST or HOLD"),
    ("JOB A a.sub\nABORT-DAG-ON A 1 RETURN 300\n", 2, "RETURN value is 0..255"),
    ("# c\nJOB\n", 2, "JOB name file [DIR d] [NOOP] [DONE]"),
])
def test_bad_lines_name_path_line_and_rule(tmp_path: Path, text: str, line: int, rule: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(FormatError) as info:
        parse_dag(str(path))
    assert (info.value.path, info.value.line, info.value.rule) == (str(path), line, rule)


def test_cycle_is_kept_as_data_with_its_path(tmp_path: Path) -> None:
    # DAGMan runs what it can and reports the cycle at the end (DAG_STATUS_CYCLE): not a parse error
    dag = parse_dag(str(write(tmp_path, "JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD B\nPARENT B CHILD C\n"
                                        "PARENT C CHILD A\nJOB D d\n")))
    assert " -> ".join(dag.cycle) == "A -> B -> C -> A"
    assert parse_dag(str(write(tmp_path, "JOB A a\nJOB B b\nPARENT A CHILD B\n", "ok.dag"))).cycle == ()


def test_rescue_file(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, "JOB A a\nJOB B b\n")))
    rescue = parse_rescue(str(write(tmp_path, "# Rescue DAG\nDONE A\nRETRY B 2\n", "wf.dag.rescue001")), dag)
    assert rescue.done == {"A"} and rescue.retries == {"B": 2}
    with pytest.raises(FormatError):
        parse_rescue(str(write(tmp_path, "DONE nosuch\n", "wf.dag.rescue002")), dag)
