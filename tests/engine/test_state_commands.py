"""The state machine for DAG-file commands carried out as DAGMan carries them out: SAVE_POINT_FILE.

Pure: events in, instructions out, no processes; ``validate_state()`` after every step.
"""

from __future__ import annotations

from pathlib import Path

from machines import machine, of, submits, validate_every_machine

from sheaf.engine._state import JobExited, WriteSavePoint

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
