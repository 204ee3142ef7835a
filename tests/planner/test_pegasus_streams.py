"""A job's stdin/stdout/stderr redirected to files, as Pegasus users write it (``Pegasus.api``'s
``set_stdin``/``set_stdout``/``set_stderr``, or hand-written YAML without ``uses``): the files are the
job's inputs and outputs, planned and run for real."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from Pegasus.api import (
    File,
    Job,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import plan_into, run

from sheaf.errors import PlanningError
from sheaf.formats import read_workflow
from sheaf.model._workflow import all_uses

#: echoes stdin to stdout with a prefix, and says something on stderr
ECHO = f"""#!{sys.executable}
import sys
data = sys.stdin.read()
sys.stdout.write("seen: " + data)
sys.stderr.write("done\\n")
"""


def _setup(tmp: Path) -> None:
    echo = tmp / "echo.py"
    echo.write_text(ECHO)
    echo.chmod(0o755)
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("echo", site="condorpool", pfn=str(echo))) \
        .write(str(tmp / "transformations.yml"))
    (tmp / "in.txt").write_text("hello\n")
    ReplicaCatalog().add_replica("local", "in.txt", str(tmp / "in.txt")).write(str(tmp / "replicas.yml"))


def _workflow(tmp: Path) -> Path:
    first = Job("echo", _id="first").set_stdin(File("in.txt")).set_stdout(File("mid.txt")) \
        .set_stderr(File("first.err"))
    second = Job("echo", _id="second").set_stdin(File("mid.txt")).set_stdout(File("out.txt"))
    Workflow("streams").add_jobs(first, second).write(str(tmp / "workflow.yml"))
    return tmp / "plan"


def test_streams_are_the_jobs_files_in_the_submit_description(tmp_path: Path) -> None:
    _setup(tmp_path)
    target = _workflow(tmp_path)
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    ids = [job.id for job in exec_wf.jobs]
    assert (ids.index("echo_first"), ids.index("echo_second")) in exec_wf.edges  # mid.txt links them
    work = target / "scratch" / "condorpool"
    sub = next((target / "jobs" / "000").glob("echo_first.sub")).read_text()
    assert f"input = {work}/in.txt\n" in sub
    assert f"output = {work}/mid.txt\n" in sub and f"error = {work}/first.err\n" in sub


def _ran(tmp: Path) -> Path:
    _setup(tmp)
    target = _workflow(tmp)
    plan_into(tmp, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    return target / "scratch" / "condorpool"


def test_stdout_and_stderr_run_redirected(tmp_path: Path) -> None:
    work = _ran(tmp_path)
    assert (work / "first.err").read_text() == "done\n"
    assert (work / "mid.txt").read_text().startswith("seen: ")
    assert (work / "out.txt").read_text().startswith("seen: ")


def test_stdin_runs_redirected(tmp_path: Path) -> None:
    assert (_ran(tmp_path) / "out.txt").read_text() == "seen: seen: hello\n"


def test_hand_written_streams_imply_uses(tmp_path: Path) -> None:
    (tmp_path / "wf.yml").write_text(
        "pegasus: '5.0'\nname: hand\njobs:\n"
        "- {type: job, name: echo, id: A, arguments: [], stdout: a.txt, uses: []}\n"
        "- {type: job, name: echo, id: B, arguments: [], stdin: a.txt, stderr: b.err, uses: []}\n"
        "jobDependencies: []\n")
    wf = read_workflow(tmp_path / "wf.yml")
    assert all(job.uses == () for job in wf.jobs.values())  # read as written (round trips hold)
    uses = {job.id: {(use.lfn, use.type) for use in all_uses(job)} for job in wf.jobs.values()}
    assert uses == {"A": {("a.txt", "output")}, "B": {("a.txt", "input"), ("b.err", "output")}}




@pytest.mark.parametrize("aggregator", ["seqexec", "mpiexec"])
def test_clustered_tasks_run_with_their_own_streams(tmp_path: Path, aggregator: str) -> None:
    _setup(tmp_path)
    jobs = [Job("echo", _id=f"j{i}").set_stdin(File("in.txt")).set_stdout(File(f"o{i}.txt"))
            .set_stderr(File(f"e{i}.err")).add_pegasus_profile(clusters_size=2, job_aggregator=aggregator)
            for i in range(2)]
    Workflow("clustered").add_jobs(*jobs).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"], clustering=["horizontal"])
    assert [(job.type, job.aggregator) for job in exec_wf.jobs if job.type == "cluster"] == [
        ("cluster", aggregator)]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    work = target / "scratch" / "condorpool"
    for i in range(2):  # each task's own files, not the cluster's streams
        assert (work / f"o{i}.txt").read_text() == "seen: hello\n"
        assert (work / f"e{i}.err").read_text() == "done\n"
    cluster_out = "".join(path.read_text() for path in (target / "jobs" / "000").glob("merge_*.out"))
    assert "seen:" not in cluster_out


@pytest.mark.parametrize("configuration", ["condorio", "nonsharedfs"])
def test_clustered_tasks_write_their_streams_in_the_jobs_sandbox(tmp_path: Path, configuration: str) -> None:
    """Under condorio and nonsharedfs a cluster runs its tasks in the job's own directory, from which
    its outputs are transferred: each task's stream files are written there, and delivered."""
    _setup(tmp_path)
    (tmp_path / "pegasus.properties").write_text(f"pegasus.data.configuration = {configuration}\n")
    jobs = [Job("echo", _id=f"j{i}").set_stdin(File("in.txt")).set_stdout(File(f"o{i}.txt"))
            .add_pegasus_profile(label="pair") for i in range(2)]
    Workflow("sandboxed").add_jobs(*jobs).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"], clustering=["label"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    for i in range(2):
        (found,) = target.parent.rglob(f"o{i}.txt")
        assert found.read_text() == "seen: hello\n"


#: resumes from its checkpoint file when there is one, else waits for SIGTERM and writes it
RESUMABLE = f"""#!{sys.executable}
import os, signal, sys, time
if os.path.exists("state.txt"):
    open("result.txt", "w").write("resumed from " + open("state.txt").read())
    sys.exit(0)
def term(*_):
    open("state.txt", "w").write("step 7")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
time.sleep(120)
"""


def test_checkpoint_time_signals_the_job_and_its_retry_resumes_from_the_checkpoint(tmp_path: Path) -> None:
    _setup(tmp_path)
    program = tmp_path / "resumable.py"
    program.write_text(RESUMABLE)
    program.chmod(0o755)
    TransformationCatalog().add_transformations(Transformation("work", site="condorpool", pfn=str(program))) \
        .write(str(tmp_path / "transformations.yml"))
    job = Job("work").add_checkpoint(File("state.txt")).add_outputs(File("result.txt")) \
        .add_pegasus_profile(checkpoint_time=0.02).add_dagman_profile(retry=2)  # SIGTERM after 1.2 s
    Workflow("ckpt").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    work = target / "scratch" / "condorpool"
    assert (work / "result.txt").read_text() == "resumed from step 7"
    assert "1 retries" in done.stdout, done.stdout


@pytest.mark.parametrize(("profiles", "rule"), [
    ({"checkpoint_time": 1, "max_walltime": 1.1}, "maxwalltime - checkpoint.time >= 10 s"),
    ({"checkpoint_time": "soon"}, "checkpoint.time is a positive number of minutes"),
])
def test_checkpoint_times_pegasus_refuses_are_refused(tmp_path: Path, profiles: dict[str, object],
                                                      rule: str) -> None:
    _setup(tmp_path)
    Workflow("bad").add_jobs(Job("echo", _id="J1").add_pegasus_profile(**profiles)) \
        .write(str(tmp_path / "workflow.yml"))
    with pytest.raises(PlanningError) as caught:
        plan_into(tmp_path, "workflow.yml", tmp_path / "plan", sites=["condorpool"])
    assert caught.value.rule is not None and rule in caught.value.rule and "J1" in str(caught.value)


def test_a_stdout_that_is_a_declared_output_comes_back_once_under_condorio(tmp_path: Path) -> None:
    """Under condorio a job whose stdout file is also one of its declared outputs: HTCondor brings the
    stream back to its ``output`` file, so the file is not in ``transfer_output_files`` too."""
    _setup(tmp_path)
    (tmp_path / "pegasus.properties").write_text("pegasus.data.configuration = condorio\n")
    target = _workflow(tmp_path)  # set_stdout declares the file an output of the job, as Pegasus.api does
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    text = "".join(path.read_text() for path in [*target.glob("*.dag"), *target.rglob("*.sub")])
    outputs = [line for line in text.splitlines() if line.strip().startswith("transfer_output_files")]
    assert outputs and not any("mid.txt" in line for line in outputs), outputs
    assert "mid.txt" in "".join(line for line in text.splitlines() if line.strip().startswith("output"))
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert next(target.rglob("out.txt")).read_text() == "seen: seen: hello\n"
