"""An input file with no replica anywhere -- not in --input-dir, not in the replica catalog, made by no
job -- fails planning, as Pegasus's stage-in generator fails it ("Can't determine a location to transfer
input file"), under every data configuration; an optional or checkpoint file without one is left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_inputs import catalogs, plan_dir, sheaf
from Pegasus.api import File, Job, ReplicaCatalog, Workflow


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    catalogs(work)
    return work


def _workflow(work: Path, *, optional: bool = False, checkpoint: bool = False, bypass: bool = False) -> None:
    fa, gone, out = File("f.a"), File("gone.txt"), File("out.txt")
    job = Job("tool", _id="reader").add_args("-i", fa, gone, "-o", out).add_inputs(fa).add_outputs(out)
    if checkpoint:
        job.add_checkpoint(gone)
    else:
        job.add_inputs(gone, bypass_staging=bypass)
    Workflow("w").add_jobs(job).write(str(work / "workflow.yml"))
    if optional:  # the API writes no optional flag: add it to the use as a hand-written workflow has it
        text = (work / "workflow.yml").read_text()
        (work / "workflow.yml").write_text(text.replace("  - lfn: gone.txt\n",
                                                        "  - lfn: gone.txt\n    optional: true\n"))


def _plan(work: Path, *extra: str) -> tuple[int, str]:
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool", *extra)
    return done.returncode, done.stderr


@pytest.mark.parametrize("config", ["sharedfs", "nonsharedfs", "condorio"])
def test_an_input_without_a_replica_fails_planning_under_every_configuration(work: Path, config: str) -> None:
    _workflow(work)
    code, err = _plan(work, "-D", f"pegasus.data.configuration={config}")
    assert code == 2 and "Traceback" not in err, err
    assert "gone.txt" in err and "'reader'" in err and "--input-dir" in err and "optional" in err
    line = next(n for n, text in enumerate((work / "workflow.yml").read_text().splitlines(), 1)
                if text.strip() == "id: reader")
    assert f"{work / 'workflow.yml'}:{line}:" in err  # the reading job's line
    assert not (work / "submit").exists()


def test_a_bypassed_input_without_a_replica_fails_planning_too(work: Path) -> None:
    _workflow(work, bypass=True)
    code, err = _plan(work, "-D", "pegasus.data.configuration=condorio")
    assert code == 2 and "gone.txt" in err, err


def test_a_replica_in_an_input_directory_or_the_catalog_is_enough(work: Path) -> None:
    _workflow(work)
    (work / "more").mkdir()
    (work / "more" / "gone.txt").write_text("here\n")
    plan_dir(sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                   "--input-dir", str(work / "more"), "--input-dir", str(work / "input")))
    ReplicaCatalog().add_replica("local", "f.a", str(work / "input" / "f.a")).add_replica(
        "local", "gone.txt", str(work / "more" / "gone.txt")).write(str(work / "replicas.yml"))
    plan_dir(sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit2"), "-s", "condorpool"))


@pytest.mark.parametrize("kind", ["optional", "checkpoint"])
def test_an_optional_or_checkpoint_file_without_a_replica_is_left_out(work: Path, kind: str) -> None:
    _workflow(work, optional=kind == "optional", checkpoint=kind == "checkpoint")
    code, err = _plan(work)
    assert code == 0, err
    assert "gone.txt" not in err
