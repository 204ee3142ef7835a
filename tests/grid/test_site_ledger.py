"""Where a group's nodes ran (``sheaf.backends.grid._rescue``'s site ledger), read back from real journals."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sheaf.backends.grid._rescue import node_sites, record_site, rescue_group
from sheaf.backends.local import LocalBackend
from sheaf.engine import DagmanOptions, run_workflow

DAG = """JOB a true.sub
JOB b true.sub
JOB c {second}.sub
PARENT a CHILD b
PARENT b CHILD c
"""
SUB = "universe = local\nexecutable = /bin/{0}\nqueue\n"


def _run(root: Path, dag: str, site: str) -> bool:
    record_site(str(root), dag, site)
    return run_workflow(str(root), backend=LocalBackend(), options=DagmanOptions((dag,)),
                        handle_signals=False).succeeded


def test_each_node_is_attributed_to_the_site_of_the_run_that_finished_it(tmp_path: Path) -> None:
    for name in ("true", "false"):
        (tmp_path / f"{name}.sub").write_text(SUB.format(name))
    (tmp_path / "g.gdag").write_text(DAG.format(second="false"))
    assert not _run(tmp_path, "g.gdag", "one")  # a and b done at one, c failed
    assert node_sites(str(tmp_path), "g.gdag") == {"a": "one", "b": "one"}
    # one is dead: c needs b's output (lost), b needs a's (lost): all run again
    name, keep, rerun = rescue_group(str(tmp_path), "g.gdag", "g.gdag", dead={"one"})
    assert (name, keep, rerun) == ("g.gdag.r1", set(), {"a", "b"})
    # one stalled, not dead: a and b stay done, their site carried into the rescue's ledger
    (tmp_path / "g.gdag.r1").unlink()
    name, keep, rerun = rescue_group(str(tmp_path), "g.gdag", "g.gdag")
    assert (name, keep, rerun) == ("g.gdag.r1", {"a", "b"}, set())
    (tmp_path / "false.sub").write_text(SUB.format("true"))
    assert _run(tmp_path, name, "two")
    assert node_sites(str(tmp_path), name) == {"a": "one", "b": "one", "c": "two"}
    ledger = tmp_path / ".sheaf" / "g.gdag.r1.sites"
    assert ledger.read_text().splitlines()[-1] == "run 1 two"
    assert os.path.getsize(tmp_path / ".sheaf" / "g.gdag.sites") > 0


STAGED = """JOB a true.sub
JOB so true.sub
JOB b false.sub
JOB cl true.sub
PARENT a CHILD so b
PARENT so b CHILD cl
"""


def test_delivered_outputs_stay_done_and_a_cleanup_needs_nothing(tmp_path: Path) -> None:
    """a's output is staged out (so) and read by b, which failed; cl cleans up after both.  With the
    site dead, only a runs again (b needs its output): so delivered already, cl needs nothing."""
    for name in ("true", "false"):
        (tmp_path / f"{name}.sub").write_text(SUB.format(name))
    (tmp_path / "g.gdag").write_text(STAGED)
    types = {"a": "compute", "so": "stage_out", "b": "compute", "cl": "cleanup"}
    jobs = [{"id": node, "type": kind} for node, kind in types.items()]
    (tmp_path / "plan.json").write_text(json.dumps({"jobs": jobs}))
    assert not _run(tmp_path, "g.gdag", "one")
    assert node_sites(str(tmp_path), "g.gdag") == {"a": "one", "so": "one"}
    name, keep, rerun = rescue_group(str(tmp_path), "g.gdag", "g.gdag", dead={"one"})
    assert (keep, rerun) == ({"so"}, {"a"})
    assert (tmp_path / name).read_text().endswith("DONE so\n")
