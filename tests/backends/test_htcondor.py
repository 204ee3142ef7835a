"""``--backend htcondor``: the DAGMan job that ``htcondor2.Submit.from_dag`` makes for a real plan (with a
stand-in ``condor_dagman`` on PATH, as no pool can run here), the plan's own submit descriptions read by
``htcondor2.Submit``, the detection of a missing schedd (one message, exit 1, nothing written), and a
submission to a fake schedd.  ``htcondor_pool`` tests run where a schedd answers, and skip otherwise."""

from __future__ import annotations

import os

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")  # before htcondor2 is imported: no pool here

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

htcondor2 = pytest.importorskip("htcondor2")

from sheaf.backends.htcondor import HTCondorBackend, find_schedd, render_dag_submit, submit_dag  # noqa: E402
from sheaf.engine import parse_dag  # noqa: E402
from sheaf.engine._events import Submit  # noqa: E402
from sheaf.engine._nodejob import render_node  # noqa: E402
from sheaf.engine._submit import node_description, split_arguments  # noqa: E402
from sheaf.errors import EngineError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
BIN = Path(sys.executable).parent


def _sheaf(*args: str, cwd: Path = EXAMPLE,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}", **(env or {})}
    return subprocess.run([str(BIN / "sheaf"), *args], cwd=cwd, capture_output=True, text=True, env=base,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("htc")
    done = _sheaf("plan", "workflow.yml", "-d", str(base), "--relative-dir", "plan")
    assert done.returncode == 0, done.stderr
    return base / "plan"


@pytest.fixture
def dagman_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in ``condor_dagman``: from_dag only needs to find it (it never runs here)."""
    stand_in = tmp_path / "bin" / "condor_dagman"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in.parent}:{os.environ['PATH']}")
    return stand_in


def _schedd_or_reason() -> str | None:
    try:
        find_schedd()
    except EngineError as exc:
        return str(exc)
    return None


NO_POOL = _schedd_or_reason()


def test_from_dag_writes_the_dagman_job_beside_the_dag(plan: Path, dagman_on_path: Path) -> None:
    dag = str(plan / "blackdiamond.dag")
    submit = render_dag_submit(dag, {"maxjobs": 4})
    written = Path(dag + ".condor.sub").read_text()
    assert "universe    = scheduler" in written and f"executable  = {dagman_on_path}" in written
    # the description is what the file says, plus where DAGMan starts: the plan's directory
    assert submit["universe"] == "scheduler" and submit["executable"] == str(dagman_on_path)
    assert submit["initialdir"] == str(plan)
    arguments = submit["arguments"]
    for part in (f"-Dag {dag}", "-MaxJobs 4", "-AutoRescue 1", f"-Lockfile {dag}.lock"):
        assert part in arguments, arguments
    assert submit["log"] == f"{dag}.dagman.log"
    # and the file reads back through htcondor2 as the same job
    again = htcondor2.Submit(written)
    assert again["arguments"].replace(" ", "") == arguments.replace(" ", "")


def _htcondor_view(dag_dir: Path, text: str, node: str, dag_vars: dict[str, str]) -> dict[str, str]:
    """What HTCondor makes of one node's description: ``htcondor2.Submit`` with the node's VARS and
    DAGMan's ``$(JOB)``/``$(RETRY)`` set, its values expanded and its paths resolved as the schedd does."""
    submit = htcondor2.Submit(text)
    for name, value in dag_vars.items():
        submit[name] = value
    submit["JOB"], submit["RETRY"] = node, "0"
    iwd = os.path.join(dag_dir, submit.expand("initialdir") or ".")
    return {"executable": os.path.join(dag_dir, submit.expand("executable")),
            "arguments": submit.expand("arguments"), "initialdir": os.path.normpath(iwd),
            "output": os.path.normpath(os.path.join(iwd, submit.expand("output"))),
            "error": os.path.normpath(os.path.join(iwd, submit.expand("error"))),
            "universe": (submit.expand("universe") or "vanilla").lower()}


def test_the_plans_submit_descriptions_read_through_htcondor2(plan: Path) -> None:
    """Every node's description -- its own file, or a shared ``SUBMIT-DESCRIPTION`` block of the DAG
    with the node's VARS -- parses in HTCondor's own submit language, and expands to the executable,
    arguments, directory and files that sheaf's engine runs for the node (the first attempt).  (This
    test once read only ``*.sub`` at the plan's top, where only DAGMan's ``.condor.sub`` is.)"""
    dag = parse_dag(str(plan / "blackdiamond.dag"))
    checked = set()
    for name, spec in dag.nodes.items():
        if spec.noop or spec.subdag:
            continue
        if spec.description is not None:
            text = "".join(line + "\n" for _, line in dag.descriptions[spec.description].lines)
        else:
            text = Path(spec.submit).read_text()
        dag_vars = {k: v for k, v in spec.vars.items() if not k.startswith("+")}
        theirs = _htcondor_view(plan, text, name, dag_vars)
        job = render_node(node_description(spec, dag.descriptions), spec, Submit(name, 0, 1, 0), False, [])
        ours = {"executable": job.argv[0], "arguments": job.argv[1:], "initialdir": job.cwd,
                "output": job.stdout, "error": job.stderr, "universe": job.universe}
        theirs_argv = split_arguments(theirs.pop("arguments"))
        assert {**theirs, "arguments": theirs_argv} == {**ours, "arguments": list(ours["arguments"])}, name
        checked.add(spec.description or "file")
    assert len(checked) >= 3, checked  # shared blocks and files alike


def test_submit_hands_the_description_to_the_schedd(plan: Path, dagman_on_path: Path) -> None:
    class FakeSchedd:
        def __init__(self) -> None:
            self.got: list[Any] = []

        def submit(self, description: Any) -> Any:
            self.got.append(description)
            return type("Result", (), {"cluster": lambda self: 42})()

    schedd = FakeSchedd()
    done = HTCondorBackend(schedd).submit_dag(str(plan))
    assert done.cluster == 42 and done.dag == str(plan / "blackdiamond.dag")
    assert Path(done.submit_file).is_file()
    assert schedd.got[0]["initialdir"] == str(plan)


def test_a_missing_schedd_is_one_message(tmp_path: Path) -> None:
    if NO_POOL is None:
        pytest.skip("a schedd answers on this machine")
    with pytest.raises(EngineError, match="no HTCondor schedd is reachable"):
        find_schedd()


def test_cli_without_a_pool_exits_1_with_one_message(plan: Path, dagman_on_path: Path) -> None:
    if NO_POOL is None:
        pytest.skip("a schedd answers on this machine")
    before = sorted(p.name for p in plan.iterdir())
    done = _sheaf("run", str(plan), "--backend", "htcondor", env={"CONDOR_CONFIG": "/dev/null"})
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no HTCondor schedd is reachable" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in plan.iterdir()) == before  # nothing written


@pytest.mark.htcondor_pool
@pytest.mark.skipif(NO_POOL is not None, reason=str(NO_POOL))
def test_live_pool_runs_a_dag(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/sh\narguments = \"-c 'echo ran > a.txt'\"\n"
                                    "log = a.log\nqueue\n")
    (tmp_path / "one.dag").write_text("JOB a a.sub\n")
    done = submit_dag(str(tmp_path / "one.dag"))
    deadline = time.monotonic() + 600
    while not (tmp_path / "a.txt").exists():
        assert time.monotonic() < deadline, f"DAGMan job {done.cluster} did not run the node"
        time.sleep(2)
    assert (tmp_path / "a.txt").read_text() == "ran\n"


def test_without_condor_dagman_on_path_nothing_is_written(plan: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no condor_dagman anywhere
    sub = plan / "blackdiamond.dag.condor.sub"
    before = sub.read_text() if sub.exists() else None
    with pytest.raises(EngineError, match="condor_dagman is not on PATH"):
        render_dag_submit(str(plan / "blackdiamond.dag"))
    assert (sub.read_text() if sub.exists() else None) == before


@pytest.mark.parametrize(("post", "flag"), [(True, "-AlwaysRunPost"), (False, "-DontAlwaysRunPost")])
def test_the_run_commands_dagman_options_reach_condor_submit_dag(plan: Path, dagman_on_path: Path,
                                                                  post: bool, flag: str) -> None:
    """``sheaf run --backend htcondor --always-run-post --batch-name B --maxjobs 3``: what
    condor_submit_dag makes of ``-AlwaysRunPost -batch-name B -maxjobs 3``."""
    from sheaf.app import DagmanOptions, condor_submit_dag_options

    options = condor_submit_dag_options(DagmanOptions(maxjobs=3, always_run_post=post, batch_name="my batch"))
    assert options == {"MaxJobs": 3, "PostRun": post, "BatchName": "my batch"}
    submit = render_dag_submit(str(plan / "blackdiamond.dag"), options)
    arguments = submit["arguments"].split()
    assert flag in arguments and "-MaxJobs" in arguments and "-MaxIdle" not in arguments
    assert submit["My.JobBatchName"] == '"my batch"'
    assert "-UseDagDir" not in arguments
    own_dir = condor_submit_dag_options(DagmanOptions(usedagdir=True))
    assert own_dir == {"UseDagDir": True}
    assert "-UseDagDir" in render_dag_submit(str(plan / "blackdiamond.dag"), own_dir)["arguments"].split()
    rescue = condor_submit_dag_options(DagmanOptions(force=True, auto_rescue=False, rescue_from=2))
    assert rescue == {"Force": True, "AutoRescue": 0, "DoRescueFrom": 2}
    # (DoRescueFrom is left out here: htcondor2's from_dag brings the process down with it)
    words = render_dag_submit(str(plan / "blackdiamond.dag"), {"Force": True, "AutoRescue": 0})["arguments"]
    assert "-force" in words.split() and "-AutoRescue 0" in words
