"""``sheaf run DIR --backend slurm`` end to end on the private test cluster: a DAG runs, a job
``scancel``ed from outside is a failed attempt that retries, and ``kill -9`` of the engine mid-run
then ``sheaf run`` again adopts the jobs still in Slurm -- zero tasks run twice (per-task marker
files), zero lost."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.backends._records import read_record
from slurm_cluster import Cluster

SHEAF = str(Path(sys.executable).parent / "sheaf")

# Reads how long to sleep from the file "duration", leaves one line per run in marks/<node>, then
# sleeps: read first, so a test that shortens the duration once it sees the mark changes only later runs
TASK = """#!/bin/sh
duration=$(cat "$1/duration")
echo "$2" >> "$1/marks/$2"
sleep "$duration"
"""

SUB = """universe = vanilla
executable = {task}
arguments = "{dir} $(node)"
output = {dir}/out/$(node).out
error = {dir}/out/$(node).err
request_memory = 64
queue
"""


def _build(tmp: Path, dag: str, duration: str = "0") -> None:
    for sub in ("marks", "out"):
        (tmp / sub).mkdir()
    task = tmp / "task.sh"
    task.write_text(TASK)
    task.chmod(0o755)
    (tmp / "task.sub").write_text(SUB.format(task=task, dir=tmp))
    (tmp / "duration").write_text(duration + "\n")
    (tmp / "wf.dag").write_text(dag)


def _env(slurm: Cluster) -> dict[str, str]:
    return {**slurm.env, "SHEAF_SLURM_SQUEUE_INTERVAL": "1", "SHEAF_SLURM_VANISH_GRACE": "3"}


def _sheaf_run(tmp: Path, slurm: Cluster, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHEAF, "run", str(tmp), "--backend", "slurm"], env=_env(slurm), text=True,
                          capture_output=True, timeout=timeout, check=False)


def _jobs(nodes: list[str], edges: str = "") -> str:
    return "".join(f'JOB {n} task.sub\nVARS {n} node="{n}"\n' for n in nodes) + edges


def _marks(tmp: Path) -> dict[str, int]:
    return {p.name: len(p.read_text().split()) for p in (tmp / "marks").iterdir()}


def test_a_dag_runs_on_slurm(slurm: Cluster, tmp_path: Path) -> None:
    _build(tmp_path, _jobs(["a", "b", "c"], "PARENT a CHILD b c\n"))
    done = _sheaf_run(tmp_path, slurm)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _marks(tmp_path) == {"a": 1, "b": 1, "c": 1}
    assert slurm.queue() == [] or all("COMPLETED" in row for row in slurm.queue())


def test_local_universe_jobs_and_a_subdags_run_stay_on_the_submit_host(slurm: Cluster,
                                                                       tmp_path: Path) -> None:
    """As HTCondor's schedd runs local and scheduler universe jobs itself: a local universe job runs on
    the submit host, not in Slurm, and a SUBDAG's run too -- whose own vanilla jobs go to Slurm, the
    backend the run was given."""
    inner = tmp_path / "inner"
    inner.mkdir()
    where = tmp_path / "where.sh"
    where.write_text(f'#!/bin/sh\necho "$1" >> {tmp_path / "ran"}\n')
    where.chmod(0o755)
    for directory in (tmp_path, inner):
        (directory / "slurm.sub").write_text(f'executable = {where}\narguments = "$(JOB)"\nqueue\n')
        (directory / "host.sub").write_text(f'universe = local\nexecutable = {where}\narguments = "$(JOB)"\n'
                                            "queue\n")
    (inner / "inner.dag").write_text("JOB INNER slurm.sub\n")
    (tmp_path / "wf.dag").write_text("JOB A slurm.sub\nJOB L host.sub\n"
                                     "SUBDAG EXTERNAL S inner.dag DIR inner\nPARENT A L CHILD S\n")
    done = _sheaf_run(tmp_path, slurm)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted((tmp_path / "ran").read_text().split()) == ["A", "INNER", "L"]

    def sent_to_slurm(directory: Path) -> list[str]:  # the nodes whose jobs were Slurm jobs
        specs = (directory / "sheaf-slurm" / "specs").glob("*.json")
        return sorted(read_record(str(path))["node"] for path in specs)

    assert sent_to_slurm(tmp_path) == ["A"] and sent_to_slurm(inner) == ["INNER"]


def test_a_job_scancelled_from_outside_fails_and_retries(slurm: Cluster, tmp_path: Path) -> None:
    _build(tmp_path, _jobs(["victim"]) + "RETRY victim 1\n", duration="60")
    engine = subprocess.Popen([SHEAF, "run", str(tmp_path), "--backend", "slurm"], env=_env(slurm),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "marks" / "victim").exists():
            assert time.monotonic() < deadline and engine.poll() is None
            time.sleep(0.05)
        (tmp_path / "duration").write_text("0\n")  # the retry ends at once
        ids = [row.split()[0] for row in slurm.queue() if "RUNNING" in row]
        assert len(ids) == 1
        slurm.run("scancel", ids[0])
        out, _ = engine.communicate(timeout=120)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    assert engine.returncode == 0, out
    assert "1 retries" in out
    assert _marks(tmp_path) == {"victim": 2}


def _lines_of(path: Path, node: str) -> list[str]:
    text = path.read_text() if path.exists() else ""
    return [w[2] for w in (line.split() for line in text.splitlines()) if len(w) > 2 and w[1] == node]


def test_execute_is_written_when_the_slurm_job_starts(slurm: Cluster, tmp_path: Path) -> None:
    """The wrapper's start record is the job's EXECUTE: in jobstate.log while the job still runs."""
    _build(tmp_path, _jobs(["long"]) + "NODE_STATUS_FILE wf.status 1\nJOBSTATE_LOG jobstate.log\n"
                                       "", duration="6")
    engine = subprocess.Popen([SHEAF, "run", str(tmp_path), "--backend", "slurm"], env=_env(slurm),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "marks" / "long").exists():
            assert time.monotonic() < deadline and engine.poll() is None, "the job never started"
            time.sleep(0.05)
        deadline = time.monotonic() + 4  # the job sleeps 6 s more
        while "EXECUTE" not in _lines_of(tmp_path / "jobstate.log", "long"):
            assert time.monotonic() < deadline, _lines_of(tmp_path / "jobstate.log", "long")
            time.sleep(0.05)
        assert _lines_of(tmp_path / "jobstate.log", "long") == ["SUBMIT", "EXECUTE"]
        time.sleep(1.5)  # the node status file is rewritten every second
        assert "STATUS_SUBMITTED" in (tmp_path / "wf.status").read_text()
        assert 'StatusDetails = "not_idle"' in (tmp_path / "wf.status").read_text()
        assert engine.wait(60) == 0
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    assert _lines_of(tmp_path / "jobstate.log", "long") == ["SUBMIT", "EXECUTE", "JOB_TERMINATED",
                                                            "JOB_SUCCESS"]


def _kill_engine_mid_run(tmp: Path, slurm: Cluster) -> None:
    """Start ``sheaf run``, wait until two of the four jobs have started in Slurm, ``kill -9`` it."""
    engine = subprocess.Popen([SHEAF, "run", str(tmp), "--backend", "slurm"], env=_env(slurm),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(_marks(tmp)) < 2:
        assert time.monotonic() < deadline and engine.poll() is None, "the jobs never started"
        time.sleep(0.05)
    engine.send_signal(signal.SIGKILL)
    engine.wait()


def test_kill_9_of_the_engine_then_resume_adopts_its_jobs(slurm: Cluster, tmp_path: Path) -> None:
    _build(tmp_path, _jobs(["a", "b", "c", "d", "e"], "PARENT a b c d CHILD e\n"), duration="4")
    _kill_engine_mid_run(tmp_path, slurm)
    in_slurm = [row for row in slurm.queue() if "RUNNING" in row or "PENDING" in row]
    assert in_slurm, "the killed engine's jobs should still be in Slurm"
    done = _sheaf_run(tmp_path, slurm)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _marks(tmp_path) == dict.fromkeys("abcde", 1)  # none ran twice, none was lost
    assert "0 retries" in done.stdout


def test_an_interrupted_run_leaves_no_job_behind(slurm: Cluster, tmp_path: Path) -> None:
    _build(tmp_path, _jobs(["a", "b", "c"]), duration="60")
    engine = subprocess.Popen([SHEAF, "run", str(tmp_path), "--backend", "slurm"], env=_env(slurm),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_marks(tmp_path)) < 2:
        assert time.monotonic() < deadline and engine.poll() is None
        time.sleep(0.05)
    engine.send_signal(signal.SIGTERM)
    assert engine.wait(60) == 1
    deadline = time.monotonic() + 30
    while [row for row in slurm.queue() if "RUNNING" in row or "PENDING" in row]:
        assert time.monotonic() < deadline, slurm.queue()
        time.sleep(0.2)
    assert not os.path.exists(tmp_path / "marks" / "c") or _marks(tmp_path)["c"] == 1


# -- the per-site choice of a Pegasus site catalog ----------------------------------------------------

MARK = """#!/bin/sh
tr '\\0' ' ' < /proc/$PPID/cmdline > "$(dirname "$0")/where.$1"
"""

SITES = """pegasus: "5.0"
sites:
- {name: local, directories: []}
- name: condorpool
  directories: []
  profiles: {condor: {universe: vanilla}}
- name: cluster
  directories: []
  profiles:
    pegasus: {style: glite}
    condor: {grid_resource: "batch slurm"}
"""

TRANSFORMATIONS = """pegasus: "5.0"
transformations:
- name: mark
  sites: [{{name: cluster, pfn: {mark}, type: installed}}]
- name: mark2
  sites: [{{name: condorpool, pfn: {mark}, type: installed}}]
"""

WORKFLOW = """pegasus: "5.0"
name: mix
jobs:
- {type: job, name: mark, id: ID1, arguments: [slurm], uses: []}
- {type: job, name: mark2, id: ID2, arguments: [local], uses: []}
jobDependencies: []
"""


def test_a_glite_slurm_site_runs_on_slurm_and_the_others_locally(slurm: Cluster, tmp_path: Path) -> None:
    mark = tmp_path / "mark.sh"
    mark.write_text(MARK)
    mark.chmod(0o755)
    (tmp_path / "sites.yml").write_text(SITES)
    (tmp_path / "transformations.yml").write_text(TRANSFORMATIONS.format(mark=mark))
    (tmp_path / "workflow.yml").write_text(WORKFLOW)
    argv = [SHEAF, "plan", "workflow.yml", "--relative-dir", "run", "--sites", "cluster,condorpool"]
    plan = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert plan.returncode == 0, plan.stderr
    done = subprocess.run([SHEAF, "run", str(tmp_path / "run")], env=_env(slurm), capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "slurm_script" in (tmp_path / "where.slurm").read_text()  # its parent: the Slurm job wrapper
    assert "slurm_script" not in (tmp_path / "where.local").read_text()
    specs = list((tmp_path / "run" / "sheaf-slurm" / "specs").iterdir())
    assert len(specs) == 1


# -- a PMC cluster across one Slurm allocation ---------------------------------------------------------

#: a task: records the Slurm job and the MPI rank it ran under, and its own argument
PMC_TASK = f"""#!{sys.executable}
import os, sys
keys = ("SLURM_JOB_ID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
with open(os.path.join(os.path.dirname(sys.argv[0]), "ran." + sys.argv[1]), "w") as out:
    out.write(" ".join(os.environ.get(key, "-") for key in keys) + "\\n")
"""


def _pmc_inputs(tmp: Path, tasks: int) -> None:
    from Pegasus.api import Job, Site, SiteCatalog, Transformation, TransformationCatalog, Workflow

    task = tmp / "task.py"
    task.write_text(PMC_TASK)
    task.chmod(0o755)
    site = Site("cluster").add_pegasus_profile(style="glite", nodes=1, ppn=2) \
        .add_condor_profile(grid_resource="batch slurm") \
        .add_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",  # the tests run as root
                 PATH=os.environ["PATH"])  # where mpiexec finds srun, to start its ranks in the allocation
    SiteCatalog().add_sites(Site("local"), site).write(str(tmp / "sites.yml"))
    TransformationCatalog().add_transformations(Transformation("task", site="cluster", pfn=str(task))) \
        .write(str(tmp / "transformations.yml"))
    jobs = [Job("task", _id=f"t{i}").add_args(f"t{i}").add_pegasus_profile(clusters_size=tasks,
                                                                          job_aggregator="mpiexec")
            for i in range(tasks)]
    Workflow("pmc").add_jobs(*jobs).write(str(tmp / "workflow.yml"))


def test_a_pmc_cluster_runs_under_mpiexec_in_one_allocation(slurm: Cluster, tmp_path: Path) -> None:
    """Pegasus's nodes/ppn on a PMC cluster: codegen writes the batch directives, the Slurm backend asks
    for one job of nodes x ppn tasks and starts PMC with mpiexec inside it: master and worker are MPI
    ranks of that job, and every task ran there."""
    if shutil.which("mpiexec") is None or importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpiexec or mpi4py is not installed (run scripts/system-deps.sh)")
    _pmc_inputs(tmp_path, 4)
    argv = [SHEAF, "plan", "workflow.yml", "--relative-dir", "run", "--sites", "cluster", "--cluster",
            "horizontal"]
    plan = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert plan.returncode == 0, plan.stderr
    sub = next((tmp_path / "run").glob("*.dag")).read_text()  # the clusters' shared description
    for line in ("+HostNumber = 1", "+SMPGranularity = 2", "+NodeNumber = 2", '+sheaf_launcher = "mpiexec"'):
        assert line in sub.splitlines(), (line, sub)
    done = subprocess.run([SHEAF, "run", str(tmp_path / "run")], env=_env(slurm), capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {path.name: path.read_text().split() for path in tmp_path.glob("ran.*")}
    assert sorted(ran) == [f"ran.t{i}" for i in range(4)]  # every task's output
    jobs = {words[0] for words in ran.values()}
    assert len(jobs) == 1 and "-" not in jobs  # one Slurm job ...
    assert {tuple(words[1:]) for words in ran.values()} == {("2", "1", "2")}  # ... of 2 tasks: rank 1 worked
    specs = [read_record(str(path)) for path in (tmp_path / "run" / "sheaf-slurm" / "specs").iterdir()]
    assert [spec["launcher"] for spec in specs if spec] == [["mpiexec"]]
