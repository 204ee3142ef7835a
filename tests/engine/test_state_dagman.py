"""The state machine against DAGMan's own rules: NOOP + POST, submit failures, cycles,
FINAL after a stop, the rescue DAG before FINAL, ABORT-DAG-ON RETURN, ready order and priorities.

Pure: events in, instructions out, no processes; ``validate_state()`` after every step.  The
DAGMan source each rule comes from is named in the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_machines import FakeClock, machine, of, submits, validate_every_machine
from sheaf.condor._dagman import Dag, NodeSpec, parse_dag
from sheaf.engine._state import (
    Cancel,
    DagState,
    Finish,
    Halted,
    Interrupted,
    JobExited,
    JobHeld,
    Limits,
    RunScript,
    ScriptExited,
    Submit,
    SubmitFailed,
    WriteRescue,
)
from sheaf.errors import FormatError

__all__ = ["validate_every_machine"]


def argv(step: object, node: str) -> tuple[str, ...]:
    return next(i.argv for i in of(step, RunScript) if i.node == node)  # type: ignore[attr-defined,arg-type]


# ---- defect 1: a NOOP node with a POST script ---------------------------------------------------

def test_noop_node_runs_its_post_script_with_return_zero(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub NOOP\nSCRIPT POST A post.sh $JOB $RETURN\n"
                          "JOB B b.sub\nPARENT A CHILD B\n")
    step = m.start()
    assert argv(step, "A") == ("post.sh", "A", "0") and submits(step) == []
    step = m.advance([ScriptExited("A", "POST", 0, 0)])
    assert submits(step) == ["B"]
    assert of(m.advance([JobExited("B", 0, 0)]), Finish) == [Finish(True, 0, 0)]


def test_noop_node_post_script_decides_and_retries(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub NOOP\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh $RETRY\nRETRY A 1\n")
    m.start()
    step = m.advance([ScriptExited("A", "PRE", 0, 0)])
    assert argv(step, "A") == ("post.sh", "0")
    step = m.advance([ScriptExited("A", "POST", 0, 1)])  # fails: the whole node is retried
    m.advance([ScriptExited("A", "PRE", 1, 0)])
    step = m.advance([])
    assert m.node_state("A") == "post"
    step = m.advance([ScriptExited("A", "POST", 1, 3)])
    assert m.node_state("A") == "failed" and of(step, Finish) == [Finish(False, 2, 1)]


# ---- defect 4: submit failures and cycles -------------------------------------------------------

def test_submit_failure_runs_post_with_minus_1001_which_may_rescue_the_node(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT POST A post.sh $RETURN\nRETRY A 2\n")
    assert submits(m.start()) == ["A"]
    step = m.advance([SubmitFailed("A", 0, "no such file a.sub")])
    assert argv(step, "A") == ("post.sh", "-1001")
    step = m.advance([ScriptExited("A", "POST", 0, 0)])
    assert m.node_state("A") == "done" and of(step, Finish) == [Finish(True, 0, 0)]


def test_submit_failure_short_circuits_retries_as_dagman_does(tmp_path: Path) -> None:
    # dag.cpp ProcessFailedSubmit: node->PoisonRetries() - the node is not retried
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 3\nJOB B b.sub\nSCRIPT POST B post.sh\nRETRY B 3\n")
    m.start()
    step = m.advance([SubmitFailed("A", 0, "no such file a.sub"), SubmitFailed("B", 0, "no such file b.sub")])
    assert m.node_state("A") == "failed" and m.node_reason("A") == "submit failed: no such file a.sub"
    step = m.advance([ScriptExited("B", "POST", 0, 1)])
    assert m.node_state("B") == "failed" and submits(step) == [] and m.retries == 0
    assert of(step, Finish) == [Finish(False, 2, 1)]


def test_a_later_attempt_may_submit_after_an_earlier_job_failure(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 1\n")
    m.start()
    assert submits(m.advance([JobExited("A", 0, 1)])) == ["A"]
    assert of(m.advance([JobExited("A", 1, 0)]), Finish) == [Finish(True, 0, 0)]


CYCLE = ("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB D d.sub\n"
         "PARENT A CHILD B\nPARENT B CHILD C\nPARENT C CHILD B\n")


def test_a_cycle_leaves_the_other_nodes_runnable_and_ends_with_dag_status_cycle(tmp_path: Path) -> None:
    m = machine(tmp_path, CYCLE)
    assert submits(m.start()) == ["A", "D"]
    step = m.advance([JobExited("A", 0, 0), JobExited("D", 0, 0)])
    assert of(step, WriteRescue) == [WriteRescue(("A", "D"), (), 0)]
    assert of(step, Finish) == [Finish(False, 5, 1)]  # dagman_main.cpp: DAG_STATUS_CYCLE, EXIT_ERROR
    assert m.node_state("B") == m.node_state("C") == "waiting"


def test_a_cycle_still_runs_final_which_sees_status_5(tmp_path: Path) -> None:
    m = machine(tmp_path, CYCLE + "FINAL F f.sub\nSCRIPT PRE F pre.sh $DAG_STATUS $FAILED_COUNT\n")
    m.start()
    step = m.advance([JobExited("A", 0, 0), JobExited("D", 0, 0)])
    assert of(step, WriteRescue) and argv(step, "F") == ("pre.sh", "5", "0")
    step = m.advance([ScriptExited("F", "PRE", 0, 0)])
    assert [(i.node, i.dag_status) for i in of(step, Submit)] == [("F", 5)]  # type: ignore[attr-defined]
    assert of(m.advance([JobExited("F", 0, 0)]), Finish) == [Finish(True, 5, 0)]


# ---- defect 5: FINAL ----------------------------------------------------------------------------

def test_final_runs_after_a_stop_and_decides(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nFINAL F f.sub\n")
    m.start()
    step = m.advance([Interrupted("engine received SIGTERM")])
    assert of(step, Cancel) == [Cancel("A", 0)] and of(step, WriteRescue)
    assert [(i.node, i.dag_status, i.failed_count) for i in of(step, Submit)] == [("F", 4, 1)]  # type: ignore[attr-defined]
    step = m.advance([JobExited("F", 0, 0)])
    assert of(step, Finish) == [Finish(True, 4, 0)] and not of(step, WriteRescue)  # written once
    assert m.node_state("B") == "waiting"


def test_a_second_stop_ends_the_final_node_too(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nFINAL F f.sub\n")
    m.start()
    m.advance([Interrupted("SIGINT")])
    step = m.advance([Interrupted("SIGINT")])
    assert of(step, Cancel) == [Cancel("F", 0)] and of(step, Finish) == [Finish(False, 4, 1)]


def test_rescue_is_written_before_final_even_when_final_succeeds(tmp_path: Path) -> None:
    # dagman_main.cpp main_shutdown_rescue: Rescue() first, then StartFinalNode()
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nFINAL F f.sub\n")
    m.start()
    step = m.advance([JobExited("A", 0, 0), JobExited("B", 0, 1)])
    kinds = [type(i).__name__ for i in step.instructions]
    assert kinds == ["WriteRescue", "Submit"] and of(step, WriteRescue) == [WriteRescue(("A",), (), 1)]
    step = m.advance([JobExited("F", 0, 0)])
    assert of(step, Finish) == [Finish(True, 2, 0)] and not of(step, WriteRescue)


def test_final_failing_after_success_writes_the_rescue_then(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nFINAL F f.sub\n")
    m.start()
    step = m.advance([JobExited("A", 0, 0)])
    assert not of(step, WriteRescue) and submits(step) == ["F"]
    step = m.advance([JobExited("F", 0, 1)])
    assert of(step, WriteRescue) == [WriteRescue(("A",), (), 1)] and of(step, Finish) == [Finish(False, 2, 1)]


def test_final_submission_carries_dag_status_and_failed_count(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nFINAL F f.sub\n")
    m.start()
    step = m.advance([JobExited("A", 0, 1), JobHeld("B", 0, "never matches")])
    sub = of(step, Submit)[0]
    assert (sub.node, sub.dag_status, sub.failed_count) == ("F", 2, 2)  # type: ignore[attr-defined]


def test_all_nodes_settings_skip_the_final_node(tmp_path: Path) -> None:
    text = ("JOB A a.sub\nFINAL F f.sub\nRETRY ALL_NODES 2\nSCRIPT PRE ALL_NODES p.sh\n"
            'VARS ALL_NODES x="1"\nPRIORITY ALL_NODES 5\nCATEGORY ALL_NODES c\n')
    dag = parse_dag(str(_write(tmp_path, text)))
    final, a = dag.nodes["F"], dag.nodes["A"]
    assert (a.retries, a.pre is not None, a.vars, a.priority, a.category) == (2, True, {"x": "1"}, 5, "c")
    assert (final.retries, final.pre, final.vars, final.priority, final.category) == (0, None, {}, 0, None)


@pytest.mark.parametrize("line", ["RETRY F 2", "PRIORITY F 3", "CATEGORY F c", "ABORT-DAG-ON F 1", "DONE F"])
def test_final_node_refuses_what_dagman_refuses(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path, f"JOB A a.sub\nFINAL F f.sub\n{line}\n")
    with pytest.raises(FormatError) as info:
        parse_dag(str(path))
    assert (info.value.line, info.value.value) == (3, "F") and "FINAL" in str(info.value)


def test_a_splice_cannot_have_a_final_node(tmp_path: Path) -> None:
    (tmp_path / "inner.dag").write_text("JOB X x.sub\nFINAL F f.sub\n")
    with pytest.raises(FormatError) as info:
        parse_dag(str(_write(tmp_path, "JOB A a.sub\nSPLICE S inner.dag\n")))
    assert info.value.path == str(tmp_path / "inner.dag") and info.value.line == 2


# ---- defect 6: the order of VARS commands --------------------------------------------------------

MANUAL_ALL_NODES = """\
JOB A node.sub
JOB B node.sub
JOB C node.sub

SCRIPT PRE ALL_NODES my_script $JOB

VARS A name="alphaNode"

VARS ALL_NODES name="$(JOB)"

# This overrides the above VARS command for node B.
VARS B name="nodeB"

RETRY all_nodes 3

RETRY A 10
"""


def test_the_manuals_all_nodes_example(tmp_path: Path) -> None:
    # dagman-advance-functionality.rst, "ALL_NODES Option": the last command wins
    dag = parse_dag(str(_write(tmp_path, MANUAL_ALL_NODES)))
    got = {n: (s.retries, s.vars["name"], s.pre.argv if s.pre else None) for n, s in dag.nodes.items()}
    assert got == {"A": (10, "$(JOB)", ("my_script", "$JOB")), "B": (3, "nodeB", ("my_script", "$JOB")),
                   "C": (3, "$(JOB)", ("my_script", "$JOB"))}
    step = DagState(dag, Limits(), FakeClock()).start()
    assert [argv(step, n) for n in "ABC"] == [("my_script", n) for n in "ABC"]


def test_an_own_setting_before_all_nodes_is_overridden(tmp_path: Path) -> None:
    dag = parse_dag(str(_write(tmp_path, "JOB A a.sub\nRETRY A 10\nRETRY ALL_NODES 3\nSCRIPT POST A own.sh\n"
                                         "SCRIPT PRE ALL_NODES pre.sh\nSCRIPT POST ALL_NODES all.sh\n")))
    spec = dag.nodes["A"]
    assert spec.retries == 3 and spec.pre is not None and spec.post is not None
    assert spec.post.argv == ("all.sh",)


def test_vars_modes_are_kept_per_macro(tmp_path: Path) -> None:
    dag = parse_dag(str(_write(tmp_path, 'JOB A a.sub\nVARS A PREPEND var1="A"\nVARS A APPEND var2="B"\n'
                                         'VARS A var3="C"\n')))
    assert dag.nodes["A"].var_modes == {"var1": "PREPEND", "var2": "APPEND", "var3": ""}


# ---- defect 7: ABORT-DAG-ON RETURN ---------------------------------------------------------------

@pytest.mark.parametrize(("line", "value", "finish", "rescue"), [
    ("ABORT-DAG-ON A 3 RETURN 2", 3, Finish(False, 3, 2), True),
    ("ABORT-DAG-ON A 3 RETURN 0", 3, Finish(True, 0, 0), False),
    ("ABORT-DAG-ON A 3 RETURN 255", 3, Finish(False, 3, 255), True),
    ("ABORT-DAG-ON A 9", 9, Finish(False, 3, 9), True),
])
def test_abort_return_value_is_the_dags_exit(tmp_path: Path, line: str, value: int, finish: Finish,
                                            rescue: bool) -> None:
    m = machine(tmp_path, f"JOB A a.sub\nJOB B b.sub\n{line}\n")
    m.start()
    step = m.advance([JobExited("A", 0, value)])
    assert of(step, Finish) == [finish] and bool(of(step, WriteRescue)) == rescue


@pytest.mark.parametrize(("line", "final_exit", "succeeded", "exit_code"), [
    ("ABORT-DAG-ON A 3 RETURN 0", 1, False, 1),  # a failed FINAL fails the DAG, RETURN 0 or not
    ("ABORT-DAG-ON A 3 RETURN 5", 0, True, 0),  # a FINAL that succeeds makes the aborted DAG succeed
])
def test_the_final_nodes_outcome_overrides_abort_dag_on(tmp_path: Path, line: str, final_exit: int,
                                                        succeeded: bool, exit_code: int) -> None:
    """The manual: "The success or failure of the FINAL node determines the success or failure of the
    entire DAG. This includes any status specified by any ABORT-DAG-ON specification"."""
    m = machine(tmp_path, f"JOB A a.sub\nJOB B b.sub\nFINAL F f.sub\n{line}\n")
    m.start()
    assert submits(m.advance([JobExited("A", 0, 3)])) == ["F"]
    finish = of(m.advance([JobExited("F", 0, final_exit)]), Finish)
    assert [(f.succeeded, f.exit_code) for f in finish] == [(succeeded, exit_code)]


def test_a_halted_dag_lets_jobs_and_post_scripts_finish_then_runs_final_with_status_halted(
        tmp_path: Path) -> None:
    """The manual's halt: "no PRE scripts are run and no new node jobs are submitted. Running node
    jobs will continue undisturbed, POST scripts will run"; then DAGMan writes a rescue DAG and
    exits, FINAL running with DAG_STATUS_HALTED (6)."""
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB D d.sub\nSCRIPT POST A post.sh\n"
                          "SCRIPT PRE D pre.sh\nPARENT A CHILD C\nPARENT B CHILD D\n"
                          "FINAL F f.sub\nSCRIPT PRE F final.sh $DAG_STATUS\n")
    assert sorted(submits(m.start())) == ["A", "B"]
    assert m.advance([Halted()]).instructions == []
    step = m.advance([JobExited("A", 0, 0)])
    assert [(i.node, i.kind) for i in of(step, RunScript)] == [("A", "POST")]  # POST scripts still run
    step = m.advance([ScriptExited("A", "POST", 0, 0)])
    assert submits(step) == [] and m.node_state("C") == "waiting"  # ready, but nothing is submitted
    step = m.advance([JobExited("B", 0, 0)])  # nothing in flight: rescue DAG, then FINAL
    assert of(step, RunScript)[0].argv == ("final.sh", "6") and of(step, WriteRescue)  # type: ignore[attr-defined]
    assert m.node_state("D") == "waiting"  # its PRE script never started
    finish = of(m.advance([ScriptExited("F", "PRE", 0, 1)]), Finish)
    assert [(f.succeeded, f.exit_code, f.dag_status) for f in finish] == [(False, 1, 6)]


# ---- defect 10: order and priority ---------------------------------------------------------------

BREADTH = "JOB A a.sub\nJOB B b.sub\nJOB E e.sub\nJOB C c.sub\nPARENT A CHILD B C\nPARENT B CHILD E\n"


def _order(m: DagState) -> list[str]:
    order = submits(m.start())
    while m.finished is None:
        ran = order[-1]
        order += submits(m.advance([JobExited(ran, 0, 0)]))
    return order


def test_equal_priorities_run_breadth_first_in_the_order_nodes_became_ready(tmp_path: Path) -> None:
    # dag_priority_q.h: append() - first ready, first submitted (E is declared before C, ready after it)
    assert _order(machine(tmp_path, BREADTH, Limits(maxjobs=1))) == ["A", "B", "C", "E"]


def test_depth_first_submits_the_newest_ready_node_first(tmp_path: Path) -> None:
    assert _order(machine(tmp_path, BREADTH, Limits(maxjobs=1, depth_first=True))) == ["A", "C", "B", "E"]


def test_priority_beats_readiness_order(tmp_path: Path) -> None:
    assert _order(machine(tmp_path, BREADTH + "PRIORITY E 1\n", Limits(maxjobs=1))) == ["A", "B", "E", "C"]


def test_retry_node_first_puts_a_retried_node_ahead(tmp_path: Path) -> None:
    body = "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nRETRY A 1\n"
    m = machine(tmp_path, body, Limits(maxjobs=1, retry_node_first=True))
    assert submits(m.start()) == ["A"]
    assert submits(m.advance([JobExited("A", 0, 1)])) == ["A"]
    m2 = machine(tmp_path, body, Limits(maxjobs=1))
    m2.start()
    assert submits(m2.advance([JobExited("A", 0, 1)])) == ["B"]


def test_effective_priority_adds_the_dags_priority(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nPRIORITY A 10\n", Limits(dag_priority=100))
    assert [(i.node, i.priority) for i in of(m.start(), Submit)] == [("A", 110), ("B", 100)]  # type: ignore[attr-defined]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 4)), min_size=1, max_size=12),
       st.booleans(), st.integers(1, 3))
def test_any_dag_keeps_its_invariants_and_order_rules(spec: list[tuple[int, int]], depth_first: bool,
                                                     maxjobs: int) -> None:
    """Random DAGs (node i's parent is an earlier node): each submission has the highest effective
    priority among the nodes ready at that moment, and the machine's invariants hold throughout."""
    dag = Dag("x.dag", {}, {}, {}, {}, {})
    for i, (prio, parent) in enumerate(spec):
        name = f"n{i}"
        dag.nodes[name] = NodeSpec(name, "x.sub", ".", i + 1, "x.dag", priority=prio)
        dag.children[name], dag.parents[name] = [], []
        if i and parent < i:
            dag.parents[name].append(f"n{parent}")
            dag.children[f"n{parent}"].append(name)
    m = DagState(dag, Limits(maxjobs=maxjobs, depth_first=depth_first), FakeClock())
    step = m.start()
    running: list[str] = []
    while m.finished is None:
        m.validate_state()
        for sub in of(step, Submit):
            ready = [n.prio for n in m.nodes.values() if n.state == "ready"]
            assert all(p <= sub.priority for p in ready)  # type: ignore[attr-defined]
            running.append(sub.node)  # type: ignore[attr-defined]
        step = m.advance([JobExited(running.pop(0), 0, 0)])
    assert of(step, Finish) == [Finish(True, 0, 0)]


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "x.dag"
    path.write_text(body)
    return path
