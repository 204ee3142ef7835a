"""The state machine for DAG-file commands carried out as DAGMan carries them out: SAVE_POINT_FILE,
SCRIPT HOLD and held, released and removed jobs (the job policy of the local backend).

Pure: events in, instructions out, no processes; ``validate_state()`` after every step.
"""

from __future__ import annotations

from pathlib import Path

from machines import machine, of, submits, validate_every_machine

from sheaf.engine._state import (
    Finish,
    JobExited,
    JobRemoved,
    JobSuspended,
    RunScript,
    ScriptExited,
    WriteSavePoint,
)

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
    step = m.advance([JobSuspended("A", 0, "policy")])
    assert of(step, RunScript) == [RunScript("A", "HOLD", 0, ("hold.sh", "A", "0"), str(tmp_path))]
    assert m.node_state("A") == "submitted" and step.changes == []
    step = m.advance([ScriptExited("A", "HOLD", 0, 1)])  # ignored
    assert step.instructions == [] and m.node_state("A") == "submitted"
    assert of(m.advance([JobExited("A", 0, 0)]), Finish) == [Finish(True, 0, 0)]


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
