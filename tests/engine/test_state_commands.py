"""The state machine for DAG-file commands carried out as DAGMan carries them out: SAVE_POINT_FILE,
SCRIPT HOLD and held, released and removed jobs (the job policy of the local backend), WEAK edges,
TOLERANCE of a node's job list, PROVISIONER.

Pure: events in, instructions out, no processes; ``validate_state()`` after every step.
"""

from __future__ import annotations

from pathlib import Path

from engine_machines import machine, of, submits, validate_every_machine
from sheaf.engine._backend import Exited, Removed
from sheaf.engine._nodes import futile_nodes
from sheaf.engine._procs import JobList, ProcGroups, Tolerance
from sheaf.engine._state import (
    Cancel,
    Finish,
    JobExited,
    JobReleased,
    JobRemoved,
    JobSuspended,
    Limits,
    ProvisionerReady,
    RunScript,
    ScriptExited,
    WriteSavePoint,
)
from sheaf.engine.reports._rescue import RescueNode, rescue_text

__all__ = ["validate_every_machine"]


def test_save_point_is_written_when_the_node_first_starts_not_on_a_retry(tmp_path: Path) -> None:
    """dag.cpp ``StartNode``: ``if (!isRetry) WriteSavePoint(node)``, before its PRE script."""
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"
                          "SAVE_POINT_FILE B\nSAVE_POINT_FILE C c.save\nRETRY B 1\n")
    assert of(m.start(), WriteSavePoint) == []
    step = m.advance([JobExited("A", 0, 0)])
    assert of(step, WriteSavePoint) == [WriteSavePoint("B", ("A",), ())] and submits(step) == ["B"]
    step = m.advance([JobExited("B", 0, 1)])  # fails: the retry is no new start
    assert of(step, WriteSavePoint) == [] and submits(step) == ["B"]
    step = m.advance([JobExited("B", 1, 0)])
    assert of(step, WriteSavePoint) == [WriteSavePoint("C", ("A", "B"), ())]
    spec = m.dag.nodes
    assert spec["B"].save_point == str(tmp_path / "save_files" / "B-x.dag.save")
    assert spec["C"].save_point == str(tmp_path / "save_files" / "c.save")


def test_hold_runs_the_hold_script_and_the_node_waits_for_release(tmp_path: Path) -> None:
    """dag.cpp ``ProcessHeldEvent``: a held job stays in the queue; its HOLD script runs, what it
    returns is ignored; the node goes on when the job, released, ends."""
    m = machine(tmp_path, "JOB A a.sub\nSCRIPT HOLD A hold.sh $JOB $RETRY\n")
    m.start()
    step = m.advance([JobSuspended("A", 0, "policy", subcode=7)])
    assert of(step, RunScript) == [RunScript("A", "HOLD", 0, ("hold.sh", "A", "0"), str(tmp_path))]
    assert m.node_state("A") == "submitted"
    assert [(c.start, c.finish, c.info) for c in step.changes] == [  # journaled: JOB_HELD, with its codes
        ("submitted", "submitted", {"held": "policy", "proc": 0, "hold_code": 3, "hold_subcode": 7})]
    step = m.advance([ScriptExited("A", "HOLD", 0, 1)])  # ignored
    assert step.instructions == [] and m.node_state("A") == "submitted"
    step = m.advance([JobReleased("A", 0, reason="why")])
    assert [c.info for c in step.changes] == [{"released": True, "proc": 0, "release_reason": "why"}]
    assert step.instructions == []
    assert m.advance([JobReleased("A", 0)]).changes == []  # not on hold: nothing to release
    assert of(m.advance([JobExited("A", 0, 0)]), Finish) == [Finish(True, 0, 0)]


def test_max_job_holds_removes_the_job_as_it_goes_on_hold_that_many_times(tmp_path: Path) -> None:
    """DAGMAN_MAX_JOB_HOLDS (the manual: with 2, "as the job goes on hold for the second time, it
    will be removed"): the attempt ends as an aborted job (-1002); holds count over retries, and a
    second hold event for a proc already on hold is no new hold."""
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 1\nSCRIPT POST A post.sh $RETURN\n", Limits(max_job_holds=2))
    m.start()
    m.advance([JobSuspended("A", 0, "one")])
    assert m.advance([JobSuspended("A", 0, "one again")]).changes == []  # already on hold
    m.advance([JobReleased("A", 0)])
    step = m.advance([JobSuspended("A", 0, "two")])
    assert of(step, Cancel) == [Cancel("A", 0)]
    assert [i.argv for i in of(step, RunScript)] == [("post.sh", "-1002")]  # type: ignore[attr-defined]
    assert step.changes[-2].info == {"return": -1002, "reason": "removed: DAG Limit: Max number of held "
                                     "jobs was reached.", "removed": True}
    assert submits(m.advance([ScriptExited("A", "POST", 0, 1)])) == ["A"]  # retried
    step = m.advance([JobSuspended("A", 1, "three")])  # the third hold of the node: removed at once
    assert of(step, Cancel) == [Cancel("A", 1)]
    unlimited = machine(tmp_path, "JOB A a.sub\n", Limits(max_job_holds=0))
    unlimited.start()
    for _ in range(5):
        unlimited.advance([JobSuspended("A", 0, "again")])
        unlimited.advance([JobReleased("A", 0)])
    assert unlimited.node_state("A") == "submitted"


def test_held_procs_are_counted_per_proc(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\n")
    m.start()
    m.advance([JobSuspended("A", 0, "x", 1), JobSuspended("A", 0, "x", 3)])
    assert m.nodes["A"].held_procs == {1, 3}
    m.advance([JobReleased("A", 0, 3)])
    assert m.nodes["A"].held_procs == {1}
    m.advance([JobRemoved("A", 0, "periodic_remove")])  # a removed job gets no release event
    assert m.nodes["A"].held_procs == set()


def test_removed_job_is_an_aborted_attempt_that_retries(tmp_path: Path) -> None:
    """dag.cpp ``ProcessAbortEvent``: the node's value is DAG_ERROR_CONDOR_JOB_ABORTED (-1002)."""
    m = machine(tmp_path, "JOB A a.sub\nRETRY A 1\nSCRIPT POST A post.sh $RETURN\n")
    m.start()
    step = m.advance([JobRemoved("A", 0, "periodic_remove")])
    assert [i.argv for i in of(step, RunScript)] == [("post.sh", "-1002")]  # type: ignore[attr-defined]
    assert submits(m.advance([ScriptExited("A", "POST", 0, 1)])) == ["A"]  # the POST fails: retried
    m.advance([JobRemoved("A", 1, "periodic_remove")])
    step = m.advance([ScriptExited("A", "POST", 1, 1)])
    assert of(step, Finish) == [Finish(False, 2, 1)]
    assert "removed: periodic_remove" in (m.node_reason("A") or "")


# ---- WEAK dependencies ---------------------------------------------------------------------------

def test_weak_child_runs_after_its_parent_failed_but_not_transitively(tmp_path: Path) -> None:
    """dagman-introduction.rst "Weak Dependencies": B (weak child of A) runs although A failed; C
    (strong child of A) is futile, and so is D, C's weak child: C never ran."""
    m = machine(tmp_path, "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nJOB D d.sub\nJOB E e.sub\n"
                          "WEAK PARENT A CHILD B\nPARENT A CHILD C\nWEAK PARENT C CHILD D\n"
                          "PARENT B CHILD E\n")
    assert submits(m.start()) == ["A"]
    assert submits(m.advance([JobExited("A", 0, 1)])) == ["B"]
    assert submits(m.advance([JobExited("B", 0, 0)])) == ["E"]
    step = m.advance([JobExited("E", 0, 0)])
    assert of(step, Finish) == [Finish(False, 2, 1)]  # A still failed: the DAG failed
    assert [m.node_state(n) for n in "ABCDE"] == ["failed", "done", "waiting", "waiting", "done"]
    assert futile_nodes(m.dag, m.node_state) == {"C", "D"}


def test_weak_and_strong_parents_together_and_resume(tmp_path: Path) -> None:
    body = "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nWEAK PARENT A CHILD C\nPARENT B CHILD C\n"
    m = machine(tmp_path, body)
    assert submits(m.start()) == ["A", "B"]
    assert submits(m.advance([JobExited("A", 0, 3)])) == []  # C still waits for B
    assert submits(m.advance([JobExited("B", 0, 0)])) == ["C"]
    resumed = machine(tmp_path, body, failed=["A"], done=["B"])  # a resumed run: C is ready
    assert submits(resumed.start()) == ["C"]


def test_failed_node_with_only_weak_children_is_done_in_the_rescue_dag(tmp_path: Path) -> None:
    """dag.cpp ``WriteRescue``: ``AllChildrenWeak`` -> DONE, after DAGMan's comment line."""
    nodes = [RescueNode("A", False, True, weak_only=True), RescueNode("B", True),
             RescueNode("C", False, True)]
    text = rescue_text(["x.dag"], nodes, True, 0.0)
    assert "<ENDLIST>\n\n# Failed node with only weak child dependencies:\nDONE A\nDONE B\n# FAILED A" in text


# ---- TOLERANCE: the proc failures a node's job list tolerates (node.cpp ``CheckBatchFailed``) -----

def _exited(key: str, code: int) -> Exited:
    return Exited(key, code, None, None, 1.0, 2.0)


def test_tolerance_counts_failures_and_fail_fast_removes_the_rest() -> None:
    groups = ProcGroups()
    procs = [f"A#0.{i}" for i in range(4)]
    groups.start("A#0", procs, Tolerance(1))
    assert groups.finished(_exited(procs[0], 3)) == (None, [], None)  # one failure: tolerated
    ended, rest, job_list = groups.finished(_exited(procs[1], 5))  # two: the list failed, the rest removed
    assert ended == _exited("A#0", 3) and rest == procs[2:]
    assert job_list == JobList((3, 5, None, None), 3)  # the removed procs have no code


def test_tolerance_wait_lets_the_rest_run_and_within_tolerance_succeeds() -> None:
    groups = ProcGroups()
    procs = [f"B#0.{i}" for i in range(4)]
    groups.start("B#0", procs, Tolerance(25, percent=True, fail_fast=False))  # 25% of 4: one
    assert groups.finished(_exited(procs[0], 3)) == (None, [], None)
    assert groups.finished(_exited(procs[1], 4)) == (None, [], None)  # failed, but WAIT: no removal
    assert groups.finished(_exited(procs[2], 0)) == (None, [], None)
    # the list failed: the successes after it leave the first failure the return value
    assert groups.finished(_exited(procs[3], 0)) == (_exited("B#0", 3), [], JobList((3, 4, 0, 0), 3))
    groups.start("B#1", procs[:2], Tolerance(1))
    assert groups.finished(_exited(procs[0], 9)) == (None, [], None)
    # within tolerance: success, and a success after the tolerated failure returns 0
    assert groups.finished(_exited(procs[1], 0)) == (_exited("B#1", 0), [], JobList((9, 0), 0))


def test_a_tolerated_failure_after_the_last_success_is_the_return_value() -> None:
    """Dag::ProcessTerminatedEvent: the first failure sets the node's return value, a success while
    the list has not failed sets it back to 0; a removed proc returns -1002, a signal -signal."""
    groups = ProcGroups()
    procs = [f"C#0.{i}" for i in range(3)]
    groups.start("C#0", procs, Tolerance(1))
    groups.finished(_exited(procs[2], 0))
    groups.finished(_exited(procs[0], 0))
    ended, _, job_list = groups.finished(_exited(procs[1], 7))
    assert ended == _exited("C#0", 0) and job_list == JobList((0, 7, 0), 7)
    groups.start("C#1", procs[:2], Tolerance(2))
    groups.finished(Removed(procs[1], "periodic_remove"))
    _, _, job_list = groups.finished(Exited(procs[0], None, 9, None, 1.0, 2.0))
    assert job_list == JobList((-1, None), -1002)


# ---- PROVISIONER: every other node waits until its job runs (dag.cpp ``_provisioner_ready``) -------

def test_provisioner_runs_first_and_the_others_wait_until_it_runs(tmp_path: Path) -> None:
    m = machine(tmp_path, "JOB A a.sub\nPROVISIONER P p.sub\nJOB B b.sub\nPARENT A CHILD B\n")
    assert submits(m.start()) == ["P"]
    assert submits(m.advance([ProvisionerReady()])) == ["A"]
    assert submits(m.advance([JobExited("A", 0, 0)])) == ["B"]
    m.advance([JobExited("B", 0, 0)])
    assert of(m.advance([JobExited("P", 0, 0)]), Finish) == [Finish(True, 0, 0)]  # the DAG waits for P


def test_provisioner_done_before_seen_running_releases_the_others(tmp_path: Path) -> None:
    m = machine(tmp_path, "PROVISIONER P p.sub\nJOB A a.sub\n")
    assert submits(m.start()) == ["P"]
    assert submits(m.advance([JobExited("P", 0, 0)])) == ["A"]
    assert submits(machine(tmp_path, "PROVISIONER P p.sub\nJOB A a.sub\n", done=["P"]).start()) == ["A"]
