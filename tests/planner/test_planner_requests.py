"""``sheaf plan`` refuses the request and priority profiles ``sheaf run`` would refuse."""

from __future__ import annotations

import pytest
from planner_builders import by_id, catalog, job, run, workflow

from sheaf.errors import PlanningError

HUGE = "1" * 400


@pytest.mark.parametrize(("namespace", "key", "value"), [
    ("condor", "request_memory", "1e400"),
    ("condor", "request_memory", HUGE),
    ("condor", "request_memory", "nan"),
    ("condor", "request_memory", "-1"),
    ("condor", "request_cpus", "inf"),
    ("condor", "request_disk", "1e400 TB"),
    ("condor", "request_gpus", 'real("nan")'),
    ("condor", "priority", "10 +"),
    ("condor", "priority", "1e400"),
    ("pegasus", "memory", "1e400"),
    ("pegasus", "diskspace", HUGE),
    ("pegasus", "cores", "-2"),
])
def test_bad_request_profiles_are_refused_naming_job_profile_and_value(namespace: str, key: str,
                                                                       value: str) -> None:
    wf = workflow([job("a", "keg"), job("b", "keg", profiles={namespace: {key: value}})])
    with pytest.raises(PlanningError) as caught:
        run(wf, catalog("keg"))
    error = caught.value
    assert "'b'" in error.message and key in error.message and error.value == value


@pytest.mark.parametrize(("key", "value"), [
    ("request_memory", "ifthenelse(DAGNodeRetry > 0, 1e400, 1)"),  # judged per attempt, by the pool
    ("request_memory", "2 GB"),
    ("request_disk", "1024"),
    ("priority", "-5"),
    ("priority", "ifthenelse(DAGNodeRetry > 0, 10, 0)"),
])
def test_good_and_per_attempt_request_profiles_plan(key: str, value: str) -> None:
    planned = by_id(run(workflow([job("a", "keg", profiles={"condor": {key: value}})]), catalog("keg")))
    assert planned["keg_a"].tasks[0].profiles["condor"][key] == value
