"""The gridmanager's per-resource throttles as per-site submission limits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.grid._recipe import most_at_once, prepare, ran, sheaf

from sheaf.backends.grid._gridmanager import jobmanager_limit, submitted_limit

SEED = {"GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE": "200, foo.edu, 50, bar.com, 100"}


@pytest.mark.parametrize(("resource", "kind", "config", "limit"), [
    ("gk.foo.edu/jobmanager-pbs", "local", SEED, 50),
    ("bar.com:2119", "local", SEED, 100),
    ("baz.org", "local", SEED, 200),
    ("baz.org", "local", {}, 1000),                                           # the default
    ("baz.org", "pbs", {**SEED, "GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE_PBS": "300"}, 300),
    ("foo.edu", "pbs", {**SEED, "GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE_PBS": "300"}, 300),
    ("baz.org", "local", {"GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE": "0"}, 1000),
    # as the gridmanager reads it: the limit token "50" is tried as a name too, matches, and takes
    # "bar.com" as its limit: atoi gives 0, which means the default
    ("x50.org", "local", SEED, 1000),
])
def test_submitted_limit_reads_the_knob_as_the_gridmanager(resource: str, kind: str,
                                                            config: dict[str, str], limit: int) -> None:
    assert submitted_limit(config, resource, kind) == limit


def test_jobmanager_limit_default_and_value() -> None:
    assert jobmanager_limit({}) == 10
    assert jobmanager_limit({"GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE": "3"}) == 3


def test_limits_hold_in_a_run(tmp_path: Path) -> None:
    """One group DAG job at a time at the site (jobmanagers 1) and one node job (submitted 1),
    though the site has 4 slots and room for 3 groups."""
    run = prepare(tmp_path, "sites:\n  big: {max_queued: 6, backend: local, slots: 4}\n", tasks=6, size=2)
    (tmp_path / "pool.conf").write_text("GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE = 1\n"
                                        "GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE = 100, sheaf://big, 1\n")
    result = sheaf(tmp_path, "run", str(run), "--pool-config", "pool.conf", "--negotiation-interval", "0.1",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(ran(tmp_path)) == [f"ID{i:04d}" for i in range(6)]
    assert most_at_once(tmp_path) == 1
    at_site = 0
    for line in (run / "grid" / "negotiator.log").read_text().splitlines():
        at_site += 1 if re.search(r"matched group_\d+ to big-Site", line) else 0
        at_site -= 1 if "done at big-Site" in line else 0
        assert at_site <= 1
