"""Workflow-level profiles (Pegasus 5 top-level ``profiles``) reach every job, below the job's own."""

from __future__ import annotations

from planner_builders import by_id, catalog, job, run, workflow


def test_workflow_profiles_apply_to_jobs_below_their_own_profiles() -> None:
    wf = workflow([job("a", "keg", profiles={"env": {"X": "job"}}), job("b", "keg")])
    wf.profiles = {"env": {"X": "wf", "Y": "wf"}}
    planned = by_id(run(wf, catalog("keg"), properties={"env.Y": "props", "env.Z": "props"}))
    a = planned["keg_a"].tasks[0].profiles["env"]
    b = planned["keg_b"].tasks[0].profiles["env"]
    assert a == {"X": "job", "Y": "wf", "Z": "props"}
    assert b == {"X": "wf", "Y": "wf", "Z": "props"}
