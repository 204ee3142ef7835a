"""The pure state machine: feed events, compare instructions and journal changes - no processes.

Every machine a test builds is checked with ``validate_state()`` after each of its steps and once
more when the test ends (the autouse fixture below).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_machines import machine, of, submits, validate_every_machine
from sheaf.engine._state import (
    Cancel,
    Defer,
    DeferElapsed,
    Finish,
    Interrupted,
    InvalidTransition,
    JobExited,
    JobHeld,
    KillScript,
    Limits,
    RunScript,
    ScriptExited,
    Submit,
    WriteRescue,
)

__all__ = ["validate_every_machine"]  # the autouse fixture, imported to be collected


DIAMOND = """
JOB A a.sub
JOB B b.sub
JOB C c.sub
JOB D d.sub
PARENT A CHILD B C
PARENT B C CHILD D
"""


def test_diamond_runs_in_dependency_order_and_finishes(tmp_path: Path) -> None:
    m = machine(tmp_path, DIAMOND)
    assert submits(m.start()) == ["A"]
    assert sorted(submits(m.advance([JobExited("A", 0, 0)]))) == ["B", "C"]
    assert submits(m.advance([JobExited("B", 0, 0)])) == []
    step = m.advance([JobExited("C", 0, 0)])
    assert submits(step) == ["D"]
    step = m.advance([JobExited("D", 0, 0)])
    assert of(step, Finish) == [Finish(True, 0, 0)]
    assert not of(step, WriteRescue)


def test_every_change_is_reported_for_the_journal(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\n")
    step = m.start()
    assert [(c.node, c.start, c.finish) for c in step.changes] == [("A", "waiting", "ready"),
                                                                    ("A", "ready", "submitted")]
    step = m.advance([JobExited("A", 0, 0, started=1.0, ended=3.5)])
    assert [(c.start, c.finish, c.info["return"]) for c in step.changes] == [("submitted", "done", 0)]
    assert m.job_time == 2.5


def test_retry_until_success_and_attempt_numbers(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 2\n")
    assert [(i.node, i.attempt) for i in of(m.start(), Submit)] == [("A", 0)]
    assert [(i.node, i.attempt) for i in of(m.advance([JobExited("A", 0, 1)]), Submit)] == [("A", 1)]
    assert [(i.node, i.attempt) for i in of(m.advance([JobExited("A", 1, 1)]), Submit)] == [("A", 2)]
    step = m.advance([JobExited("A", 2, 0)])
    assert of(step, Finish) == [Finish(True, 0, 0)]
    assert m.retries == 2


def test_retries_exhausted_fail_the_node_and_write_a_rescue(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nRETRY A 1\nPARENT A CHILD B\n")
    m.start()
    m.advance([JobExited("A", 0, 3), JobExited("C", 0, 0)])
    step = m.advance([JobExited("A", 1, 3)])
    rescue = of(step, WriteRescue)
    assert rescue == [WriteRescue(("C",), (("A", 0),), 1)]
    assert of(step, Finish) == [Finish(False, 2, 1)]
    assert m.node_state("B") == "waiting"
    assert m.node_reason("A") == "exit code 3"


def test_unless_exit_stops_retries(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 5 UNLESS-EXIT 42\n")
    m.start()
    step = m.advance([JobExited("A", 0, 42)])
    assert submits(step) == []
    assert m.node_state("A") == "failed"


def test_signal_and_held_give_negative_return_values_to_post(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT POST A post.sh $JOB $RETURN $RETRY $MAX_RETRIES $JOBID\n"
                          "RETRY A 1\n")
    m.start()
    step = m.advance([JobExited("A", 0, None, signal=9)])
    post = of(step, RunScript)[0]
    assert post.argv[1:] == ("A", "-9", "0", "1", "1.0")  # type: ignore[attr-defined]
    step = m.advance([ScriptExited("A", "POST", 0, 1)])
    assert [i.attempt for i in of(step, Submit)] == [1]  # type: ignore[attr-defined]
    step = m.advance([JobHeld("A", 1, "no slot could ever match")])
    assert of(step, RunScript)[0].argv[2] == "-1001"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("job", "post", "node"), [(0, 0, "done"), (0, 1, "failed"), (1, 0, "done"),
                                                   (1, 1, "failed")])
def test_post_script_decides(tmp_path: Path, job: int, post: int, node: str) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT POST A post.sh\n")
    m.start()
    m.advance([JobExited("A", 0, job)])
    m.advance([ScriptExited("A", "POST", 0, post)])
    assert m.node_state("A") == node


def test_pre_failure_skips_job_and_post(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT PRE A pre.sh $JOB\nSCRIPT POST A post.sh\n")
    step = m.start()
    assert [(i.kind, i.argv[1]) for i in of(step, RunScript)] == [("PRE", "A")]  # type: ignore[attr-defined]
    step = m.advance([ScriptExited("A", "PRE", 0, 2)])
    assert submits(step) == [] and not of(step, RunScript)
    assert m.node_state("A") == "failed" and m.node_reason("A") == "PRE script exited with 2"


def test_pre_failure_runs_post_with_always_run_post(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT PRE A pre.sh\n"
                          "SCRIPT POST A post.sh $RETURN $PRE_SCRIPT_RETURN\n",
                Limits(always_run_post=True))
    m.start()
    step = m.advance([ScriptExited("A", "PRE", 0, 2)])
    assert of(step, RunScript)[0].argv[1:] == ("-1004", "2")  # type: ignore[attr-defined]
    m.advance([ScriptExited("A", "POST", 0, 0)])
    assert m.node_state("A") == "done"


def test_pre_skip_marks_done_without_job(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nSCRIPT PRE A pre.sh\nPRE_SKIP A 7\nPARENT A CHILD B\n")
    m.start()
    step = m.advance([ScriptExited("A", "PRE", 0, 7)])
    assert submits(step) == ["B"]


def test_pre_retry_reruns_the_pre_script(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT PRE A pre.sh $RETRY\nRETRY A 1\n")
    m.start()
    step = m.advance([ScriptExited("A", "PRE", 0, 1)])
    assert [i.argv for i in of(step, RunScript)] == [("pre.sh", "1")]  # type: ignore[attr-defined]


def test_defer_reruns_the_script_later_without_holding_maxpre(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nSCRIPT DEFER 4 30 PRE A pre.sh\nSCRIPT PRE B pre.sh\n",
                Limits(maxpre=1))
    step = m.start()
    assert [i.node for i in of(step, RunScript)] == ["A"]  # type: ignore[attr-defined]
    step = m.advance([ScriptExited("A", "PRE", 0, 4)])
    assert of(step, Defer) == [Defer("A", "PRE", 0, 30.0)]
    assert [i.node for i in of(step, RunScript)] == ["B"]  # type: ignore[attr-defined]
    m.advance([ScriptExited("B", "PRE", 0, 0)])
    step = m.advance([DeferElapsed("A", "PRE", 0)])
    assert [i.node for i in of(step, RunScript)] == ["A"]  # type: ignore[attr-defined]


def test_priority_orders_ready_nodes(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPRIORITY C 10\nPRIORITY B 5\n",
                Limits(maxjobs=1))
    assert submits(m.start()) == ["C"]
    assert submits(m.advance([JobExited("C", 0, 0)])) == ["B"]
    assert submits(m.advance([JobExited("B", 0, 0)])) == ["A"]


def test_maxjobs_and_category_throttles(tmp_path: Path) -> None:
    body = "".join(f"JOB T{i} t.sub\nCATEGORY T{i} transfer\n" for i in range(4))
    body += "JOB X x.sub\nJOB Y y.sub\nMAXJOBS transfer 1\n"
    m = machine(tmp_path, body, Limits(maxjobs=2))
    step = m.start()
    assert submits(step) == ["T0", "X"]
    stats = {s.name: s for s in m.throttle_statistics()}
    assert stats["maxjobs"].borrowed == 2 and stats["category transfer"].borrowed == 1
    assert submits(m.advance([JobExited("X", 0, 0)])) == ["Y"]
    assert submits(m.advance([JobExited("T0", 0, 0)])) == ["T1"]


def test_a_category_with_maxjobs_0_submits_none_of_its_nodes(tmp_path: Path) -> None:
    """DAGMan defers a node whose category's running count is not below its MAXJOBS value, so a
    category throttled to 0 never submits -- a NOOP node of it neither -- and the DAG waits, with
    nothing in flight, until it is stopped."""
    body = "JOB A a.sub\nJOB B b.sub\nJOB N n.sub NOOP\nJOB C c.sub\nCATEGORY A held\nCATEGORY N held\n"
    body += "MAXJOBS held 0\nPARENT A CHILD C\n"
    m = machine(tmp_path, body)
    assert submits(m.start()) == ["B"]
    step = m.advance([JobExited("B", 0, 0)])
    assert submits(step) == [] and not of(step, Finish)
    assert (m.node_state("A"), m.node_state("N"), m.node_state("C")) == ("ready", "ready", "waiting")
    step = m.advance([Interrupted("SIGTERM")])
    assert [f.exit_code for f in of(step, Finish)] == [2]  # type: ignore[attr-defined]


def test_maxidle_uses_the_backend_idle_count(tmp_path: Path) -> None:
    body = "".join(f"JOB N{i} n.sub\n" for i in range(10))
    m = machine(tmp_path, body, Limits(maxidle=3))
    assert len(submits(m.start(idle=0))) == 3
    assert len(submits(m.advance([], idle=3))) == 0
    assert len(submits(m.advance([JobExited("N0", 0, 0)], idle=1))) == 2


def test_maxpost_throttles_post_scripts(tmp_path: Path) -> None:
    body = "".join(f"JOB N{i} n.sub\nSCRIPT POST N{i} post.sh\n" for i in range(3))
    m = machine(tmp_path, body, Limits(maxpost=1))
    m.start()
    step = m.advance([JobExited(f"N{i}", 0, 0) for i in range(3)])
    assert len(of(step, RunScript)) == 1
    step = m.advance([ScriptExited("N0", "POST", 0, 0)])
    assert [i.node for i in of(step, RunScript)] == ["N1"]  # type: ignore[attr-defined]


def test_abort_dag_on_cancels_in_flight_and_overrides_retry(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nSCRIPT PRE C pre.sh\nRETRY A 3\n"
                          "ABORT-DAG-ON A 10 RETURN 7\nFINAL F f.sub\n")
    m.start()
    m.advance([ScriptExited("C", "PRE", 0, 0)])
    step = m.advance([JobExited("A", 0, 10)])
    assert of(step, Cancel) == [Cancel("B", 0), Cancel("C", 0)]
    assert submits(step) == ["F"]  # the FINAL node still runs
    step = m.advance([JobExited("B", 0, 0), JobExited("F", 0, 0)])  # a late report is ignored
    assert of(step, Finish) == [Finish(True, 3, 0)]  # the FINAL node's success overrides the abort


def test_abort_without_final_exits_with_the_return_value(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nABORT-DAG-ON A 10 RETURN 7\nABORT-DAG-ON B 3\n")
    m.start()
    step = m.advance([JobExited("A", 0, 10)])
    assert of(step, Finish) == [Finish(False, 3, 7)] and of(step, WriteRescue)
    m = machine(tmp_path, "JOB A a.sub\nABORT-DAG-ON A 3 RETURN 0\n")
    m.start()
    step = m.advance([JobExited("A", 0, 3)])
    # RETURN 0: DAGMan sets DAG_STATUS_OK (CheckForDagAbort) and writes no rescue DAG
    assert of(step, Finish) == [Finish(True, 0, 0)] and not of(step, WriteRescue)


def test_final_node_decides_and_sees_dag_status(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nFINAL F f.sub\nSCRIPT PRE F pre.sh $DAG_STATUS $FAILED_COUNT\n")
    m.start()
    step = m.advance([JobExited("A", 0, 1)])
    assert of(step, RunScript)[0].argv[1:] == ("2", "1")  # type: ignore[attr-defined]
    m.advance([ScriptExited("F", "PRE", 0, 0)])
    step = m.advance([JobExited("F", 0, 0)])
    assert of(step, Finish) == [Finish(True, 2, 0)]


def test_noop_and_done_nodes_take_no_job(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub NOOP\nJOB B b.sub DONE\nJOB C c.sub\nPARENT A B CHILD C\n")
    assert submits(m.start()) == ["C"]


def test_interrupt_cancels_kills_scripts_and_rescues(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nSCRIPT PRE B pre.sh\n")
    m.start()
    step = m.advance([Interrupted("SIGTERM")])
    assert of(step, Cancel) == [Cancel("A", 0)] and of(step, KillScript) == [KillScript("B", "PRE")]
    assert of(step, WriteRescue) and of(step, Finish) == [Finish(False, 4, 2)]  # EXIT_ABORT


def test_recovered_state_never_reruns_done_nodes(tmp_path: Path) -> None:
    m = machine(tmp_path, DIAMOND, done={"A", "B"}, attempts={"C": 1}, next_cluster=50)
    step = m.start()
    assert [(i.node, i.attempt, i.cluster) for i in of(step, Submit)] == [("C", 1, 50)]  # type: ignore[attr-defined]


def test_impossible_transition_raises_with_history(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\n")
    m.start()
    m.advance([JobExited("A", 0, 0)])
    with pytest.raises(InvalidTransition) as info:
        m.transition(m.nodes["A"], "submitted")
    assert "done -> submitted" in str(info.value) and "ready->submitted #0 (cluster 1)" in str(info.value)
    assert "submitted->done #0 (return 0)" in str(info.value)
    assert [(h.start, h.finish) for h in info.value.history] == [("waiting", "ready"), ("ready", "submitted"),
                                                                 ("submitted", "done")]


def test_an_unexpected_event_is_an_impossible_transition(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT POST A p.sh\n")
    m.start()
    with pytest.raises(InvalidTransition):
        m.advance([ScriptExited("A", "POST", 0, 0)])


def test_a_finished_machine_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    """No reference cycle through the machine's parts (its queues, its ending): a large DAG's nodes
    go when the run lets go of the machine, not at some later full collection."""
    import gc
    import weakref

    from sheaf.condor import parse_dag
    from sheaf.engine._state import DagState

    (tmp_path / "x.dag").write_text("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nFINAL F f.sub\n")
    m = DagState(parse_dag(str(tmp_path / "x.dag")), Limits(), lambda: 0.0)
    step = m.start()
    m.advance([JobExited(i.node, i.attempt, 1) for i in step.instructions if isinstance(i, Submit)])
    gone = weakref.ref(m)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del m
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
