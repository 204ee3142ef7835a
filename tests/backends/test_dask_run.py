"""``sheaf run DIR --backend dask`` end to end: on a LocalCluster the run starts and closes, and on a real
``dask scheduler`` + ``dask worker`` pair started here as processes on 127.0.0.1.  The run contract
(``contract.RunContract``) on an owned LocalCluster: kill -9 of the engine mid-run and a resume (every
task's marker files show it finished exactly once), a worker killed under a running job (the batch
system's kill) is a failed attempt that the DAG's RETRY runs again.  On the pair, which outlives the
engine: the resume takes the result of a task that ended meanwhile and adopts one still running
(each started once), and a killed worker is a failed attempt too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask backend needs the distributed package")

from sheaf.backends._jobguard import guard

from .contract import RunContract, marker_dag, marks, parent_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blackdiamond"
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
       # a task whose worker died is a failed attempt for sheaf's RETRY, never re-run by the scheduler
       "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}


def _sheaf(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "sheaf"), *args], cwd=cwd, capture_output=True, text=True, env=ENV,
                          timeout=300, check=False)


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as stream:
        return subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=stream)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``dask scheduler`` and ``dask worker`` (2 threads, resources CPU=2 MEMORY=2048) as processes."""
    base = tmp_path_factory.mktemp("dask-pair")
    info, log = base / "scheduler.json", base / "log"
    procs = [_start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(info)], log)]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip():
            assert time.monotonic() < deadline and procs[0].poll() is None, log.read_text()
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        procs.append(_start([str(BIN / "dask"), "worker", address, "--nthreads", "2", "--nworkers", "1",
                             "--no-dashboard", "--memory-limit", "0", "--resources", "CPU=2 MEMORY=2048",
                             "--host", "127.0.0.1"], log))
        yield address, procs[1]
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _plan(tmp_path: Path) -> Path:
    done = _sheaf("plan", "workflow.yml", "-d", str(tmp_path), "--relative-dir", "plan", cwd=EXAMPLE)
    assert done.returncode == 0, done.stderr
    return tmp_path / "plan"


def test_blackdiamond_on_an_owned_local_cluster(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    done = _sheaf("run", str(plan), "--backend", "dask")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workflow succeeded: 13 of 13 nodes done" in done.stdout  # with the cleanup job
    assert (plan / "scratch" / "condorpool" / "f.d").is_file()


def test_blackdiamond_on_a_scheduler_and_worker_pair(tmp_path: Path, pair: tuple[str, object]) -> None:
    plan = _plan(tmp_path)
    done = _sheaf("run", str(plan), "--backend", "dask", "--scheduler", pair[0])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workflow succeeded: 13 of 13 nodes done" in done.stdout  # with the cleanup job


def test_an_unreachable_scheduler_is_one_message(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    done = _sheaf("run", str(plan), "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in done.stderr


class TestDaskRunContract(RunContract):
    """The run contract on a LocalCluster the run owns (killed with the engine: its attempts that had
    not finished run again); killed from outside = the worker process under the job is SIGKILLed (its
    nanny starts another): the attempt fails and RETRY runs it on the new worker."""

    overhead = 0.05

    def run_args(self) -> list[str]:
        return ["--backend", "dask"]

    def run_env(self) -> dict[str, str]:
        return dict(ENV)

    def kill_from_outside(self, pid: int) -> None:
        os.kill(parent_of(pid), signal.SIGKILL)  # the worker process runs the job


def _kill_engine_when(work: Path, argv: list[str], started: int) -> None:
    """Start ``sheaf run`` and kill -9 it once ``started`` tasks have begun."""
    engine = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 120
    while len(marks(work, ".started")) < started:
        assert time.monotonic() < deadline and engine.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the tasks are past their first steps (records, the guard told)
    os.kill(engine.pid, signal.SIGKILL)
    engine.wait()


def test_kill_minus_9_then_resume_on_a_running_scheduler_adopts_and_takes_results(
        tmp_path: Path, pair: tuple[str, object]) -> None:
    """The scheduler outlives the engine: t3 finishes while no engine runs (its exit record is the
    result: not run again), t4 is still running at the resume (adopted: not run again); t5 and t6 never
    reached Dask and run once.  Every task started once and finished once."""
    work = marker_dag(tmp_path, 6, 0.2, lengths={3: 1.0, 4: 6.0})
    argv = [str(BIN / "sheaf"), "run", str(work), "--backend", "dask", "--scheduler", pair[0]]
    _kill_engine_when(work, argv, 4)  # t1 t2, then t3 and t4 on the worker's 2 CPUs
    deadline = time.monotonic() + 30
    while "t3" not in marks(work, ".done"):  # t3 ends while no engine runs
        assert time.monotonic() < deadline, "t3 did not finish after the engine died"
        time.sleep(0.05)
    assert "t4" not in marks(work, ".done"), "t4 still runs at the resume"
    done = _sheaf("run", str(work), "--backend", "dask", "--scheduler", pair[0])
    assert done.returncode == 0, done.stdout + done.stderr
    every = {f"t{i}": 1 for i in range(1, 7)}
    assert (marks(work, ".started"), marks(work, ".done")) == (every, every)


def _worker_processes(nanny: int) -> list[int]:
    """The worker processes a ``dask worker`` nanny started (its children running Python's spawn)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == nanny and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


def test_a_worker_killed_under_a_job_is_a_failed_attempt_that_retries(
        tmp_path: Path, pair: tuple[str, subprocess.Popen[bytes]]) -> None:
    """SIGKILL to the worker process (its nanny restarts it): the attempt fails, RETRY runs it again."""
    (tmp_path / "once.sh").write_text("#!/bin/sh\n[ -e first ] && exit 0\ntouch first\necho $$ > job.pid\n"
                                      "exec sleep 60\n")
    (tmp_path / "once.sh").chmod(0o755)
    (tmp_path / "a.sub").write_text(f"executable = {tmp_path}/once.sh\noutput = a.out\nerror = a.err\n"
                                    "log = a.log\nqueue\n")
    (tmp_path / "one.dag").write_text("JOB a a.sub\nRETRY a 1\n")
    engine = subprocess.Popen([str(BIN / "sheaf"), "run", str(tmp_path), "--backend", "dask", "--scheduler",
                               pair[0]], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "job.pid").exists() or not (tmp_path / "job.pid").read_text().strip():
        assert time.monotonic() < deadline and engine.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the worker has told its guard about the job
    job = int((tmp_path / "job.pid").read_text())
    for pid in _worker_processes(pair[1].pid):
        os.kill(pid, signal.SIGKILL)
    out, _ = engine.communicate(timeout=180)
    assert engine.returncode == 0, out
    assert "workflow succeeded: 1 of 1 nodes done, 0 failed, 1 retries" in out
    deadline = time.monotonic() + 10
    while Path(f"/proc/{job}").exists() and "Z" not in Path(f"/proc/{job}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the killed worker's job is still running"
        time.sleep(0.05)


def test_guard_follows_start_and_end_lines() -> None:
    assert guard(["+10\n", "+11\n", "-10\n", "junk\n", "+\n", "-99\n"]) == {11}


def test_a_task_still_queued_in_dask_never_runs_after_cancel_or_close(
        tmp_path: Path, pair: tuple[str, object]) -> None:
    """Tasks on a scheduler sheaf does not own outlive their client (for a resumed engine to adopt):
    one cancelled, or left queued at ``close``, must still never run.  Another client's two jobs fill
    the pair's worker, so this backend's tasks wait in Dask's queue."""
    from contextlib import closing

    from sheaf.backends.dask import DaskBackend

    from .contract import collect, make_launch, wait_for

    with closing(DaskBackend(pair[0])) as other:
        for name in ("busy1", "busy2"):
            other.submit(make_launch(tmp_path, name, ["/bin/sh", "-c", f"touch {name}.on; sleep 3"]))
        wait_for(lambda: (tmp_path / "busy1.on").exists() and (tmp_path / "busy2.on").exists(), 60)
        mine = DaskBackend(pair[0], state_dir=str(tmp_path / "state"))
        for name in ("cancelled", "closed"):
            mine.submit(make_launch(tmp_path, name, ["/bin/touch", f"{tmp_path}/{name}.ran"]))
        time.sleep(0.5)  # both handed to Dask, which holds them: no room on the worker
        mine.cancel("cancelled#0")
        mine.close()
        collect(other, 2, 60)
    time.sleep(2.0)  # the worker is free: a task left queued would run now
    assert not list(tmp_path.glob("*.ran"))


def test_close_stops_the_attempts_it_adopted(tmp_path: Path, pair: tuple[str, object]) -> None:
    """A resumed backend adopts the killed engine's two running tasks, then closes (the resumed run
    was stopped): their jobs are stopped too, none finishes."""
    from sheaf.backends.dask import DaskBackend
    from sheaf.engine._journal import replay

    work = marker_dag(tmp_path, 4, 0.2, lengths={3: 6.0, 4: 6.0})
    _kill_engine_when(work, [str(BIN / "sheaf"), "run", str(work), "--backend", "dask", "--scheduler",
                             pair[0]], 4)
    run_id = replay(str(work / ".sheaf" / "k.dag.journal")).run_id
    backend = DaskBackend(pair[0], state_dir=str(work / "sheaf-dask"))
    assert backend.adopt(run_id, [("t3", 0), ("t4", 0)]) == {"t3#0", "t4#0"}
    assert backend.running() == 2
    backend.close()
    time.sleep(7.0)  # longer than the tasks: had they gone on, they would have finished
    assert "t3" not in marks(work, ".done") and "t4" not in marks(work, ".done")
