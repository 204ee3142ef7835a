"""DAG files as pegasus-plan writes them (and as people hand-edit them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheaf.condor import (
    _dagman,
    _dagman_records,
    _submit_lang,
    _submit_macros,
    _submit_queue,
    _submit_records,
    _submit_write,
)
from sheaf.condor._dagman import check_categories, parse_dag, parse_rescue
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
"""  # noqa: E501  (the DAG file as pegasus-plan writes it, verbatim)


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
    assert create.post is not None
    assert create.post.argv[-2:] == ("$RETURN", "create_dir_blackdiamond_0_local.out")
    stage = dag.nodes["stage_in_local_local_0"]
    assert stage.directory == str(tmp_path / "stage")
    assert stage.submit == str(tmp_path / "stage" / "stage_in_local_local_0.sub")
    assert (stage.retries, stage.unless_exit, stage.priority, stage.category) == (3, 42, 20, "stage-in")
    assert stage.vars["label"] == 'with "quotes" and spaces'
    pre = dag.nodes["preprocess_ID0000001"]
    assert pre.abort_on == (3, 1) and pre.pre is not None
    assert (pre.pre.defer_status, pre.pre.defer_time) == (4, 30.0)
    assert dag.nodes["noop_node"].noop and dag.nodes["already"].done and dag.final == "final_node"
    assert sorted(dag.parents["preprocess_ID0000001"]) == ["already", "noop_node", "stage_in_local_local_0"]
    assert dag.maxjobs == {"stage-in": 10, "cleanup": 4}
    assert dag.config == {"DAGMAN_MAX_JOBS_SUBMITTED": "5", "DAGMAN_MAX_PRE_SCRIPTS": "2"}
    assert dag.jobstate_log == str(tmp_path / "jobstate.log") and dag.node_status_file == (
        str(tmp_path / "blackdiamond.status"), 5.0)


def test_a_reader_of_the_shape_passes_over_vars(tmp_path: Path) -> None:
    """``read_vars=False`` gives the same nodes, edges and settings, with no node's VARS read -- not
    even a VARS line naming no node, which a full read refuses."""
    write(tmp_path, "DAGMAN_MAX_JOBS_SUBMITTED = 5\n", "blackdiamond-0.dag.config")
    path = str(write(tmp_path, PEGASUS_DAG + 'VARS nobody x="1"\n'))
    with pytest.raises(FormatError):
        parse_dag(path)
    shape = parse_dag(path, read_vars=False)
    full = parse_dag(str(write(tmp_path, PEGASUS_DAG, "full.dag")))
    assert not shape.vars_read and full.vars_read
    assert list(shape.nodes) == list(full.nodes) and shape.parents == full.parents
    assert shape.children == full.children and shape.maxjobs == full.maxjobs
    for name, spec in shape.nodes.items():
        assert spec.vars == {} and (spec.priority, spec.category, spec.retries, spec.noop) == (
            full.nodes[name].priority, full.nodes[name].category, full.nodes[name].retries,
            full.nodes[name].noop)


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
    text = "SUBDAG EXTERNAL sub inner.dag DIR d\nJOB A a.sub\nPARENT sub CHILD A\n"
    dag = parse_dag(str(write(tmp_path, text)))
    assert dag.nodes["sub"].subdag and dag.nodes["sub"].submit == str(tmp_path / "d" / "inner.dag")


@pytest.mark.parametrize(("text", "line", "rule"), [
    ("JOB A a.sub\nRETRY A x\n", 2, "retry count is an integer"),
    ("JOB A a.sub\nJOB A b.sub\n", 2, "node names are unique"),
    ("JOB A a.sub\nPARENT A CHILD B\n", 2, "PARENT/CHILD name declared nodes or splices (not SERVICE nodes)"),
    ("JOB A a.sub\nFROB A\n", 2, "a DAGMan command (" + _dagman._KNOWN + ")"),
    ("JOB A a.sub\nVARS A key'quoted'=x\n", 2,
     "VARS node [PREPEND|APPEND] key=value ... (a value one word; quotes around it are dropped)"),
    ("JOB A a.sub\nPARENT A\n", 2, "[WEAK] PARENT p... CHILD c..."),
    ("JOB A a.sub\nSCRIPT MIDDLE A x.sh\n", 2, "SCRIPT type is PRE, POST or HOLD"),
    ("JOB A a.sub\nABORT-DAG-ON A 1 RETURN 300\n", 2, "RETURN value is 0..255"),
    ("# c\nJOB\n", 2, "JOB name submit-file|{ inline description } [DIR d] [NOOP] [DONE]"),
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
    retry = parse_rescue(str(write(tmp_path, "RETRY A 1 UNLESS-EXIT 4\nRETRY B 0\n", "wf.dag.rescue003")),
                         dag)
    assert retry.retries == {"A": 1, "B": 0} and retry.unless_exit == {"A": 4}


def test_a_rescue_dag_is_parsed_as_one_more_dag_file_of_the_dag(tmp_path: Path) -> None:
    """DAGMan parses a rescue DAG with its DAG parser after the DAG's own files: its VARS, PRIORITY,
    CATEGORY, MAXJOBS, SCRIPT ... lines apply as later lines of the DAG would, overriding what the DAG
    set; its DONE and RETRY lines are the rescue's record of where the run starts."""
    dag = parse_dag(str(write(tmp_path, "JOB A a\nJOB B b\nVARS A x=\"1\" y=\"kept\"\nPRIORITY A 1\n")))
    text = "DONE B\nVARS A x=\"2\"\nPRIORITY A 5\nRETRY A 2\nCATEGORY ALL_NODES c\nMAXJOBS c 3\n"
    rescue = parse_rescue(str(write(tmp_path, text, "wf.dag.rescue001")), dag)
    a, b = dag.nodes["A"], dag.nodes["B"]
    assert a.vars == {"x": "2", "y": "kept"} and a.priority == 5
    assert a.category == b.category == "c" and dag.maxjobs == {"c": 3}
    assert rescue.done == {"B"} and rescue.retries == {"A": 2}
    assert not b.done  # DONE stays the rescue's record: a recovery from the journal reads it as such


@pytest.mark.parametrize(("body", "line", "value", "message"), [
    ("DONE A\nVARS nosuch x=\"1\"\n", 2, "nosuch", "unknown node"),
    ("PRIORITY A 2\n\nPRIORITY nosuch 3\n", 3, "nosuch", "unknown node"),
    ("DONE nosuch\n", 1, "nosuch", "unknown node"),
    ("DONE A B\n", 1, "DONE A B", "bad DONE"),
    ("DONE ALL_NODES\n", 1, "ALL_NODES", "DONE does not take ALL_NODES"),
    ("DONE A\nRETRY A\n", 2, "RETRY A", "bad RETRY"),
    ("RETRY A 2 UNLESS 3\n", 1, "RETRY A 2 UNLESS 3", "bad RETRY"),
    ("RETRY A two\n", 1, "two", "retry count"),
])
def test_a_rescue_dag_line_naming_no_node_of_the_dag_or_malformed_is_refused(
        tmp_path: Path, body: str, line: int, value: str, message: str) -> None:
    dag = parse_dag(str(write(tmp_path, "JOB A a\n")))
    rescue = write(tmp_path, body, "wf.dag.rescue001")
    with pytest.raises(FormatError) as caught:
        parse_rescue(str(rescue), dag)
    assert (caught.value.path, caught.value.line, caught.value.value) == (str(rescue), line, value)
    assert message in str(caught.value)


def test_a_job_line_in_a_rescue_dag_is_refused_as_dagman_refuses_it(tmp_path: Path) -> None:
    """DAGMan's parse of the rescue DAG adds its nodes to the DAG's: a JOB line naming a node of the DAG
    is a node declared twice."""
    dag = parse_dag(str(write(tmp_path, "JOB A a\n")))
    rescue = write(tmp_path, "DONE A\nJOB A a\n", "wf.dag.rescue001")
    with pytest.raises(FormatError) as caught:
        parse_rescue(str(rescue), dag)
    assert (caught.value.path, caught.value.line, caught.value.value) == (str(rescue), 2, "A")
    assert "duplicate node name" in caught.value.message


@pytest.mark.parametrize(("line", "said"), [
    ("PARENT A CHILD B", "PARENT in a rescue DAG"), ("INCLUDE more.dag", "INCLUDE in a rescue DAG"),
    ("SPLICE S inner.dag", "SPLICE in a rescue DAG"), ("JOB C c", "a node declared in a rescue DAG"),
])
def test_a_rescue_dag_line_that_would_change_the_dags_shape_is_refused_by_name(tmp_path: Path, line: str,
                                                                              said: str) -> None:
    """sheaf reads a rescue DAG's settings of the DAG's nodes; new nodes and edges, which DAGMan would add
    after it has set the DAG up for the run, are refused by name at their line."""
    dag = parse_dag(str(write(tmp_path, "JOB A a\nJOB B b\n")))
    with pytest.raises(FormatError) as caught:
        parse_rescue(str(write(tmp_path, f"DONE A\n{line}\n", "wf.dag.rescue001")), dag)
    assert caught.value.line == 2 and said in caught.value.message


def test_a_rescue_dags_retry_all_nodes_and_config_lines(tmp_path: Path) -> None:
    """RETRY ALL_NODES in a rescue DAG is every node's (not the FINAL node's), as DAGMan's parser applies
    it once the splices are part of the DAG; CONFIG there is condor_submit_dag's, which reads it from the
    DAG files only: warned about, no effect."""
    write(tmp_path, "JOB X x\n", "inner.dag")
    dag = parse_dag(str(write(tmp_path, "JOB A a\nSPLICE S inner.dag\nFINAL F f\n")))
    rescue = parse_rescue(str(write(tmp_path, "RETRY ALL_NODES 2 UNLESS-EXIT 3\nCONFIG other.config\n",
                                    "wf.dag.rescue001")), dag)
    assert rescue.retries == {"A": 2, "S+X": 2} and rescue.unless_exit == {"A": 3, "S+X": 3}
    assert dag.config_path is None
    assert any("rescue001:2: CONFIG in a rescue DAG takes no effect" in w for w in dag.warnings)


# ---- hostile DAG files: one FormatError, never a traceback ----------------

def _refused(path: Path) -> FormatError:
    with pytest.raises(FormatError) as caught:
        parse_dag(str(path))
    return caught.value


@pytest.mark.parametrize("target", ["wf.dag", "inc.dag", "inner.dag", "wf.config"])
def test_a_file_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path, target: str) -> None:
    write(tmp_path, "CONFIG wf.config\nJOB A a.sub\nINCLUDE inc.dag\nSPLICE S inner.dag\n")
    write(tmp_path, "JOB B a.sub\n", "inc.dag")
    write(tmp_path, "JOB X a.sub\n", "inner.dag")
    write(tmp_path, "DAGMAN_MAX_JOBS_SUBMITTED = 2\n", "wf.config")
    path = tmp_path / target
    before = path.read_bytes()
    path.write_bytes(before + b"# caf\xe9\n")
    error = _refused(tmp_path / "wf.dag")
    assert error.path == str(path) and error.line == before.count(b"\n") + 1 and "UTF-8" in error.message


def test_a_rescue_dag_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, "JOB A a.sub\n")))
    rescue = tmp_path / "wf.dag.rescue001"
    rescue.write_bytes(b"DONE A\n\xff\n")
    with pytest.raises(FormatError) as caught:
        parse_rescue(str(rescue), dag)
    assert (caught.value.path, caught.value.line) == (str(rescue), 2)


@pytest.mark.parametrize("line", ["JOB B b\x00c.sub", "INCLUDE inc\x00.dag", "# a NUL \x00 in a comment"])
def test_a_nul_byte_is_refused(tmp_path: Path, line: str) -> None:
    error = _refused(write(tmp_path, f"JOB A a.sub\n{line}\n"))
    assert error.line == 2 and "NUL" in error.message


@pytest.mark.parametrize(("text", "rule"), [
    ("JOB A a.sub\nVARS A\n", "VARS"),
    ("JOB A a.sub\nVARS A   \n", "VARS"),
    ("JOB A a.sub\nDONE ALL_NODES\n", "ALL_NODES"),
    ("JOB A a.sub\nDONE\n", "DONE node"),
    ("JOB A a.sub\nDONE A A\n", "DONE node"),
])
def test_commands_missing_their_values_or_misusing_all_nodes(tmp_path: Path, text: str, rule: str) -> None:
    error = _refused(write(tmp_path, text))
    assert error.line == 2 and rule in (error.rule or "")


def test_done_all_nodes_is_refused_as_dagman_refuses_it(tmp_path: Path) -> None:
    error = _refused(write(tmp_path, "JOB A a.sub\nJOB B a.sub\nDONE ALL_NODES\n"))
    assert error.value == "ALL_NODES" and "not allowed" in (error.rule or "")


@pytest.mark.parametrize(("files", "cycle"), [
    ({"wf.dag": "JOB A a.sub\nINCLUDE wf.dag\n"}, "wf.dag -> "),
    ({"wf.dag": "INCLUDE b.dag\n", "b.dag": "INCLUDE c.dag\n", "c.dag": "INCLUDE b.dag\n"}, "b.dag -> "),
    ({"wf.dag": "SPLICE S wf.dag\n"}, "wf.dag -> "),
    ({"wf.dag": "SPLICE S b.dag\n", "b.dag": "INCLUDE wf.dag\n"}, "wf.dag -> "),
])
def test_include_and_splice_cycles_are_refused_with_the_cycle(tmp_path: Path, files: dict[str, str],
                                                               cycle: str) -> None:
    for name, text in files.items():
        write(tmp_path, text, name)
    error = _refused(tmp_path / "wf.dag")
    assert "cycle" in (error.rule or "") and cycle in str(error.value)


@pytest.mark.parametrize(("text", "keyword"), [
    ("JOB A a.sub\nSPLICE S nope.dag\n", "SPLICE"), ("JOB A a.sub\nINCLUDE nope.inc\n", "INCLUDE"),
    ("JOB A a.sub\nSPLICE S sub DIR .\n", "SPLICE"),
])
def test_a_splice_or_include_that_cannot_be_read_is_refused_at_its_line(tmp_path: Path, text: str,
                                                                         keyword: str) -> None:
    (tmp_path / "sub").mkdir()
    error = _refused(write(tmp_path, text))
    assert (error.path, error.line) == (str(tmp_path / "wf.dag"), 2)
    assert keyword in str(error) and str(error.value).startswith(str(tmp_path))


def test_deep_distinct_includes_are_bounded(tmp_path: Path) -> None:
    for i in range(200):
        write(tmp_path, f"INCLUDE d{i + 1}.dag\n", f"d{i}.dag")
    write(tmp_path, "JOB A a.sub\n", "d200.dag")
    assert "nest" in (_refused(tmp_path / "d0.dag").rule or "")


BIG = "1" * 400


@pytest.mark.parametrize("line", [
    f"RETRY A {BIG}", f"RETRY A 2 UNLESS-EXIT {BIG}", f"PRIORITY A {BIG}", f"PRIORITY A -{BIG}",
    f"PRE_SKIP A {BIG}", f"ABORT-DAG-ON A {BIG}", f"MAXJOBS cat {BIG}", f"SCRIPT DEFER 1 {BIG} PRE A x",
    f"SCRIPT DEFER {BIG} 1 PRE A x", f"NODE_STATUS_FILE st {BIG}", "PRIORITY A 2147483648",
    "RETRY A 9" + "9" * 5000, "RETRY A ٣",  # (1_000 is 1, as C's stoi reads it: test_dagman_lexing)
])
def test_every_integer_of_the_grammar_is_bounded(tmp_path: Path, line: str) -> None:
    error = _refused(write(tmp_path, f"JOB A a.sub\n{line}\n"))
    assert error.line == 2 and ("range" in error.message or "integer" in error.message)


def test_integers_at_the_bounds_are_read(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, "JOB A a.sub\nPRIORITY A -2147483648\nRETRY A 2147483647\n"
                                        "NODE_STATUS_FILE st ALWAYS-UPDATE\n")))
    assert (dag.nodes["A"].priority, dag.nodes["A"].retries) == (-(1 << 31), (1 << 31) - 1)
    assert dag.node_status_file == (str(tmp_path / "st"), 60.0)


def test_the_split_modules_keep_their_names_importable_from_the_old_paths() -> None:
    records = set(_dagman.__all__) & set(_dagman_records.__all__)
    assert {"Dag", "NodeSpec", "Script", "InlineDescription"} <= records
    assert all(getattr(_dagman, name) is getattr(_dagman_records, name) for name in records)
    assert _submit_lang.Macros is _submit_macros.Macros and _submit_lang.Queue is _submit_records.Queue
    assert _submit_lang.queue_items is _submit_queue.queue_items
    assert _submit_lang.quote_arguments is _submit_write.quote_arguments
    assert all(hasattr(_submit_lang, name) for name in _submit_lang.__all__)


def test_save_point_file_may_name_a_node_declared_later(tmp_path: Path) -> None:
    """DAGMan reads SAVE_POINT_FILE in its second pass, as it does RETRY and VARS: the node it names may
    be declared further down the file."""
    dag = parse_dag(str(write(tmp_path, "SAVE_POINT_FILE B\nSAVE_POINT_FILE C sub/c.save\nJOB A a.sub\n"
                                        "JOB B b.sub\nJOB C c.sub\nPARENT A CHILD B C\n")))
    assert dag.nodes["B"].save_point == str(tmp_path / "save_files" / "B-wf.dag.save")
    assert dag.nodes["C"].save_point == str(tmp_path / "sub" / "c.save")
    with pytest.raises(FormatError, match="unknown node"):
        parse_dag(str(write(tmp_path, "SAVE_POINT_FILE Z\nJOB A a.sub\n", "bad.dag")))


def test_a_vars_macro_defined_twice_is_warned_about_and_the_last_wins(tmp_path: Path) -> None:
    dag = parse_dag(str(write(tmp_path, 'JOB A a.sub\nVARS A m="foo" n="x"\nVARS A m="bar"\n')))
    assert dag.nodes["A"].vars["m"] == "bar" and dag.nodes["A"].vars["n"] == "x"
    assert dag.warnings == [f"{tmp_path / 'wf.dag'}:3: VARS macro m of node A is defined more than once"]


def test_one_parent_child_line_lists_its_nodes_in_declaration_order(tmp_path: Path) -> None:
    """DAGMan sorts the parents and the children of one PARENT line by node id, the order nodes are
    declared (a splice's nodes where its SPLICE line is, an INCLUDE file's after the including file's
    own declarations); several lines add their edges in line order."""
    (tmp_path / "s.dag").write_text("JOB S1 x.sub\nJOB S2 x.sub\n")
    (tmp_path / "inc.dag").write_text("JOB I x.sub\n")
    (tmp_path / "wf.dag").write_text(
        "INCLUDE inc.dag\nJOB A x.sub\nJOB C1 x.sub\nSPLICE SP s.dag\nJOB C3 x.sub\nJOB C2 x.sub\n"
        "JOB P2 x.sub\nJOB P1 x.sub\nJOB D x.sub\n"
        "PARENT A CHILD C3 I C2 SP C1 C3\nPARENT P1 P2 CHILD D\nPARENT I CHILD D\nPARENT A CHILD D\n")
    dag = parse_dag(str(tmp_path / "wf.dag"))
    assert dag.children["A"] == ["C1", "SP+S1", "SP+S2", "C3", "C2", "I", "D"]
    assert dag.parents["D"] == ["P2", "P1", "I", "A"]


def test_categories_are_checked_as_dagman_checks_its_throttles(tmp_path: Path) -> None:
    """Dag::CheckThrottleCats: a MAXJOBS category without nodes and a category without MAXJOBS are
    warnings fatal from DAGMAN_USE_STRICT 2 (so is a category a later CATEGORY emptied); a second
    MAXJOBS value in one file is fatal from 3; MAXJOBS c 0 (DAGMan then submits none of c's nodes)
    is warned about, naming the category and its nodes."""
    dag = parse_dag(str(write(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nCATEGORY A held\n"
                                        "CATEGORY B loose\nCATEGORY C old\nCATEGORY C held\nMAXJOBS held 2\n"
                                        "MAXJOBS held 0\nMAXJOBS empty 3\n")))
    check_categories(dag)
    wf = tmp_path / "wf.dag"
    assert dag.warnings == [
        f"{wf}:7: new CATEGORY held for node C overrides old value old",
        f"{wf}:9: new MAXJOBS value 0 for category held overrides old value 2",
        (f"{wf}:9: MAXJOBS held 0: DAGMan submits no node of category held (A, C); they and the nodes "
         "after them wait until the DAG is stopped (sheaf remove) or halted, as DAGMan waits"),
        f"{wf}:10: category empty has no assigned nodes, so the MAXJOBS value (3) will have no effect",
        f"{wf}:5: category loose has no MAXJOBS value set",
        f"{wf}:6: category old has no assigned nodes",
        f"{wf}:6: category old has no MAXJOBS value set"]
    assert [(level, line) for level, _path, line, _message in dag.strict_warnings] == [
        (3, 7), (3, 9), (2, 10), (2, 5), (2, 6), (2, 6)]


def test_connect_and_parent_lines_take_effect_in_line_order(tmp_path: Path) -> None:
    """DAGMan processes PARENT/CHILD and CONNECT lines in file order (its second pass): a PARENT line
    naming the input splice before its CONNECT gives the splice's unpinned initial node a parent, so
    CONNECT's check for a node left without parents passes (after it, the CONNECT fails); a child's
    parents are listed in the order their lines come ($(DAG_PARENT_NAMES)); a CONNECT joins pin 1
    before pin 2, whichever PIN line comes first."""
    (tmp_path / "out.inc").write_text("JOB O2 x.sub\nJOB O1 x.sub\nPIN_OUT O2 2\nPIN_OUT O1 1\n")
    (tmp_path / "in.inc").write_text("JOB I x.sub\nJOB U x.sub\nPIN_IN I 1\nPIN_IN I 2\n")
    dag = parse_dag(str(write(tmp_path, "JOB X x.sub\nSPLICE S1 out.inc\nSPLICE S2 in.inc\n"
                                        "PARENT X CHILD S2\nCONNECT S1 S2\n")))
    assert dag.parents["S2+I"] == ["X", "S1+O1", "S1+O2"] and dag.parents["S2+U"] == ["X"]
    (tmp_path / "pinned.inc").write_text("JOB I x.sub\nPIN_IN I 1\nPIN_IN I 2\n")
    dag = parse_dag(str(write(tmp_path, "JOB X x.sub\nSPLICE S1 out.inc\nSPLICE S2 pinned.inc\n"
                                        "CONNECT S1 S2\nPARENT X CHILD S2\n", "later.dag")))
    assert dag.parents["S2+I"] == ["S1+O1", "S1+O2", "X"]
    with pytest.raises(FormatError, match="no parent once connected") as info:
        parse_dag(str(write(tmp_path, "JOB X x.sub\nSPLICE S1 out.inc\nSPLICE S2 in.inc\n"
                                      "CONNECT S1 S2\nPARENT X CHILD S2\n", "after.dag")))
    assert info.value.line == 4
