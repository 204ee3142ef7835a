"""sheaf-mpi-cluster over both transports (local processes, and MPI ranks under OpenMPI's mpiexec):
dependencies, resources, priorities, retries, rescue, worker loss, task stdio, bad input.

Every task is a real process that records what it did in files; the assertions count those side
effects, never durations."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sheaf.jobtools import _pmc_transport

PMC = str(Path(sys.executable).parent / "sheaf-mpi-cluster")
PY = sys.executable
MPIEXEC = shutil.which("mpiexec")


def _have_mpi4py() -> bool:
    return subprocess.run([PY, "-c", "import mpi4py"], check=False, capture_output=True).returncode == 0


MPI_MISSING = (None if MPIEXEC and _have_mpi4py() else
               "mpiexec or mpi4py is not installed (run scripts/system-deps.sh)")

TASK = r'''
import os, sys, time
name, logdir = sys.argv[1], sys.argv[2]
opts = sys.argv[3:]
def log(line):
    fd = os.open(os.path.join(logdir, "events"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (line + "\n").encode()); os.close(fd)
attempts = os.path.join(logdir, "attempts." + name)
with open(attempts, "a") as f: f.write("x")
attempt = len(open(attempts).read())
log("start " + name)
print("out " + name + " " + os.environ["PMC_TASK"] + " rank=" + os.environ["PMC_RANK"], flush=True)
print("err " + name, file=sys.stderr, flush=True)
if "--concurrency" in opts:
    marker = os.path.join(logdir, "running." + name); open(marker, "w").close()
    log("concurrent %d" % sum(1 for f in os.listdir(logdir) if f.startswith("running.")))
    time.sleep(0.2); os.unlink(marker)
if "--fail-until" in opts and attempt < int(opts[opts.index("--fail-until") + 1]):
    log("fail " + name); sys.exit(3)
if "--need" in opts and not os.path.exists(opts[opts.index("--need") + 1]):
    log("fail " + name); sys.exit(4)
if "--victim" in opts and attempt == 1:
    open(os.path.join(logdir, "victim.pid"), "w").write(str(os.getpid()))
    with open(os.path.join(logdir, "victim.tmp"), "w") as f: f.write(str(os.getppid()))
    os.rename(os.path.join(logdir, "victim.tmp"), os.path.join(logdir, "victim"))
    time.sleep(120)
if "--forward" in opts:
    os.write(int(os.environ["PIPEVAR"]), ("piped " + name + "\n").encode())
    open(os.path.join(logdir, "src." + name), "w").write("filed " + name + "\n")
log("end " + name)
'''


def _events(logdir: Path) -> list[str]:
    path = logdir / "events"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(params=["local", pytest.param("mpi", marks=[
    pytest.mark.mpi, pytest.mark.skipif(MPI_MISSING is not None, reason=MPI_MISSING or "")])])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# Tests of master-side logic run over the local transport only (keeps CI time down).
master_only = pytest.mark.parametrize("transport", ["local"])


class PmcRun:
    def __init__(self, tmp: Path, transport: str) -> None:
        self.tmp, self.transport = tmp, transport
        self.logdir = tmp / "log"
        self.logdir.mkdir()
        (tmp / "task.py").write_text(TASK)
        self.dag = tmp / "wf.dag"

    def task(self, name: str, *opts: str, pmc: str = "") -> str:
        return f"TASK {name} {pmc} {PY} {self.tmp / 'task.py'} {name} {self.logdir} {' '.join(opts)}"

    def command(self, *opts: str, workers: int = 2, recovery: bool = False) -> list[str]:
        if self.transport == "local":
            return [PMC, "--transport", "local", "--workers", str(workers), *opts, str(self.dag)]
        assert MPIEXEC is not None
        # OpenMPI kills the whole job when a rank dies, unless --enable-recovery; but with it,
        # mpiexec always exits 0, so only the worker-loss test uses it (and reads the summary).
        keep = ["--enable-recovery"] if recovery else []
        return [MPIEXEC, "--oversubscribe", *keep, "-n", str(workers + 1), PMC, *opts, str(self.dag)]

    def run(self, lines: list[str], *opts: str, workers: int = 2) -> subprocess.CompletedProcess[str]:
        self.dag.write_text("\n".join(lines) + "\n")
        return subprocess.run(self.command(*opts, workers=workers), check=False, cwd=self.tmp,
                              capture_output=True, text=True, timeout=120, env=_env())

    def events(self) -> list[str]:
        return _events(self.logdir)


def _env() -> dict[str, str]:
    return {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1"}


SUMMARY = re.compile(r'^\[cluster-summary stat="(ok|failed)", tasks=(\d+), submitted=(\d+), '
                     r'succeeded=(\d+), failed=(\d+), extra=0, start="[^"]+", duration=\d+\.\d{3}, '
                     r'pid=\d+, app="[^"]+", runtime=\d+\.\d{3}, slots=(\d+), cpus=(\d+)\]$', re.MULTILINE)
TASK_RECORD = re.compile(r'^\[cluster-task (?:id=(\S+), )?name=(\S+), start="[^"]+", duration=\d+\.\d{3}, '
                         r'status=(\d+), app="[^"]+", hostname="[^"]+", slot=(\d+), cpus=(\d+), '
                         r'memory=(\d+)\]$', re.MULTILINE)


def _summary(out: str) -> tuple[str, ...]:
    found = SUMMARY.findall(out)
    assert len(found) == 1, out
    return tuple(found[0])


class TestPmc:
    def test_diamond_follows_edges_and_returns_all_output(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        res = r.run(["# diamond", "#@ 1 diamond::pre ID0000001", r.task("A"), r.task("B"), r.task("C"),
                     r.task("D"), "EDGE A B", "EDGE A C", "EDGE B D", "EDGE C D"])
        assert res.returncode == 0, res.stderr
        starts = [e.split()[1] for e in r.events() if e.startswith("start")]
        assert starts[0] == "A" and starts[-1] == "D" and sorted(starts) == ["A", "B", "C", "D"]
        ends = [e.split()[1] for e in r.events() if e.startswith("end")]
        assert ends.index("B") < starts.index("D") and ends.index("C") < starts.index("D")
        for name in "ABCD":  # every task's stdout and stderr come back in ours
            assert re.search(rf"^out {name} {name} rank=[12]$", res.stdout, re.MULTILINE)
            assert f"err {name}\n" in res.stderr
        records = {m[1]: m for m in TASK_RECORD.findall(res.stdout)}
        assert set(records) == set("ABCD") and records["A"][0] == "1" and records["B"][0] == ""
        assert _summary(res.stdout)[:5] == ("ok", "4", "4", "4", "0")
        assert sorted((tmp_path / "wf.dag.rescue").read_text().split()) == sorted(
            ["DONE"] * 4 + list("ABCD"))
        assert not list(tmp_path.glob("wf.dag.out.*"))  # merged, then removed

    def test_memory_and_cpus_limit_what_runs_together(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        lines = [r.task(f"M{i}", "--concurrency", pmc="-m 60") for i in range(2)]
        res = r.run(lines, "--host-memory", "100")
        assert res.returncode == 0, res.stderr
        assert {e for e in r.events() if e.startswith("concurrent")} == {"concurrent 1"}
        (tmp_path / "c").mkdir()
        r2 = PmcRun(tmp_path / "c", transport)
        res = r2.run([r2.task(f"C{i}", "--concurrency", pmc="-c 2") for i in range(2)], "--host-cpus", "3")
        assert res.returncode == 0, res.stderr
        assert {e for e in r2.events() if e.startswith("concurrent")} == {"concurrent 1"}
        if transport == "local":  # the check is the master's, whatever the transport
            res = r2.run([r2.task("huge", pmc="-m 101")], "--host-memory", "100", "--no-rescue")
            assert res.returncode == 1 and "no host is capable of running task huge" in res.stderr

    @master_only
    def test_priority_orders_ready_tasks(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        res = r.run([r.task("low", pmc="-p -5"), r.task("mid"), r.task("high", pmc="-p 10")], workers=1)
        assert res.returncode == 0, res.stderr
        assert [e.split()[1] for e in r.events() if e.startswith("start")] == ["high", "mid", "low"]

    def test_retries_then_rescue_skips_finished_tasks(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        fixed = tmp_path / "fixed"
        lines = [r.task("A"), r.task("flaky", "--fail-until", "3", pmc="-t 3"),
                 r.task("broken", "--need", str(fixed)), r.task("child"), r.task("side"),
                 "EDGE A flaky", "EDGE A broken", "EDGE broken child"]
        res = r.run(lines, "--tries", "2")
        assert res.returncode == 1
        assert _summary(res.stdout)[:5] == ("failed", "5", "7", "3", "4")  # flaky 3 tries, broken 2
        assert (r.logdir / "attempts.flaky").read_text() == "xxx"
        assert (r.logdir / "attempts.broken").read_text() == "xx"
        assert not (r.logdir / "attempts.child").exists()  # below a failed task nothing runs
        assert "DONE broken" not in (tmp_path / "wf.dag.rescue").read_text()
        fixed.touch()
        res = r.run(lines, "--tries", "2")
        assert res.returncode == 0, res.stderr
        for name in ("A", "flaky", "side"):  # journaled done: never run again
            assert len((r.logdir / f"attempts.{name}").read_text()) == (3 if name == "flaky" else 1)
        assert (r.logdir / "attempts.broken").read_text() == "xxx"
        assert (r.logdir / "attempts.child").read_text() == "x"
        assert _summary(res.stdout)[:5] == ("ok", "5", "2", "2", "0")
        if transport == "local":  # --skip-rescue is the master's alone
            res = r.run(lines, "--tries", "2", "--skip-rescue")
            assert res.returncode == 0 and (r.logdir / "attempts.child").read_text() == "xx"

    def test_killed_worker_task_reruns_elsewhere(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        r.dag.write_text("\n".join([r.task("first"), r.task("doomed", "--victim"), r.task("after"),
                                    "EDGE first doomed", "EDGE doomed after"]) + "\n")
        proc = subprocess.Popen(r.command("--worker-timeout", "30", recovery=True), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        victim = r.logdir / "victim"
        deadline = time.time() + 60
        while not victim.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.kill(int(victim.read_text()), signal.SIGKILL)  # the worker running "doomed", mid-task
        out, err = proc.communicate(timeout=90)
        assert "worker" in err and "lost" in err
        assert _summary(out)[:5] == ("ok", "3", "4", "3", "0"), err
        assert proc.returncode == 0 or transport == "mpi", err  # mpiexec may report the dead rank
        events = r.events()
        assert events.count("start doomed") == 2 and events.count("end doomed") == 1
        assert events.count("end after") == 1 and events.index("end doomed") < events.index("start after")
        assert "DONE doomed" in (tmp_path / "wf.dag.rescue").read_text()

    @master_only
    def test_per_task_stdio_jobstate_and_forwarding(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        fwd = f"-f PIPEVAR={tmp_path / 'piped.txt'} -F {r.logdir / 'src.T'}={tmp_path / 'filed.txt'}"
        res = r.run([r.task("T", "--forward", pmc=fwd), r.task("U", "--fail-until", "2", pmc="-t 2")],
                    "--per-task-stdio", "--jobstate-log")
        assert res.returncode == 0, res.stderr
        assert (tmp_path / "piped.txt").read_text() == "piped T\n"
        assert (tmp_path / "filed.txt").read_text() == "filed T\n"
        assert not (r.logdir / "src.T").exists()
        assert (tmp_path / "U.out.000").read_text().startswith("out U U")
        assert (tmp_path / "U.err.001").read_text() == "err U\n"
        assert "[cluster-task name=U" in (tmp_path / "U.out.001").read_text()
        jobstate = (tmp_path / "jobstate.log").read_text()
        assert re.search(r"^\d+\.\d{6} INTERNAL \*\*\* PMC_STARTED \*\*\*$", jobstate, re.MULTILINE)
        assert re.search(r"^\d+\.\d{6} U JOB_FAILURE 768 - - \d+$", jobstate, re.MULTILINE)
        assert re.search(r"^\d+\.\d{6} T JOB_SUCCESS 0 - - \d+$", jobstate, re.MULTILINE)
        assert jobstate.rstrip().endswith("PMC_FINISHED 0 ***")


    @master_only
    def test_missing_executable_is_a_failed_task(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        res = r.run(["TASK ghost -t 2 no-such-program-here --flag", r.task("other")])
        assert res.returncode == 1
        assert res.stderr.count("Unable to exec command no-such-program-here for task ghost") == 2
        records = [m for m in TASK_RECORD.findall(res.stdout) if m[1] == "ghost"]
        assert [m[2] for m in records] == ["256", "256"]
        assert _summary(res.stdout)[:5] == ("failed", "2", "3", "1", "2")

    def test_wall_time_aborts_and_kills_running_tasks(self, tmp_path: Path, transport: str) -> None:
        r = PmcRun(tmp_path, transport)
        res = r.run([r.task("slow", "--victim"), r.task("next"), "EDGE slow next"], "--max-wall-time", "0.02")
        assert res.returncode == 1
        assert "wall time exceeded" in res.stderr
        assert _summary(res.stdout)[:5] == ("failed", "2", "1", "0", "1")
        assert r.events() == ["start slow"]  # killed mid-task; nothing after it started


@pytest.mark.mpi
def test_polling_naps_stay_short_while_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Master and workers wait for messages with ``poll_until``: naps that grew to 10 ms ran PMC over
    MPI at 0.18x its local transport (``benchmarks/pmc_transport.py`` measures both; now ~1x).  The naps
    start at 50 us and never exceed 1 ms, however long the wait."""
    naps: list[float] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(_pmc_transport.time, "sleep", sleep)
    monkeypatch.setattr(_pmc_transport.time, "monotonic", lambda: now[0])
    assert not _pmc_transport.poll_until(lambda: False, 0.5)
    assert naps[0] <= 0.0001 and max(naps) <= 0.001 and len(naps) > 400
    calls = iter([False] * 30 + [True])
    naps.clear()
    assert _pmc_transport.poll_until(lambda: next(calls), 5.0) and len(naps) == 30


@pytest.mark.skipif(MPI_MISSING is not None, reason=MPI_MISSING or "")
def test_many_short_tasks_run_over_mpi(tmp_path: Path) -> None:
    """300 short tasks over MPI: every one runs and is summarised (the transport keeps up)."""
    r = PmcRun(tmp_path, "mpi")
    res = r.run([f"TASK t{i} /bin/true" for i in range(300)])
    assert res.returncode == 0, res.stderr
    assert _summary(res.stdout)[3] == "300", res.stdout


def test_sigterm_aborts_and_a_second_run_of_a_locked_dag_is_refused(tmp_path: Path) -> None:
    r = PmcRun(tmp_path, "local")
    r.dag.write_text(r.task("slow", "--victim") + "\n")
    proc = subprocess.Popen(r.command(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 60
    while not (r.logdir / "victim").exists() and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(r.command(), check=False, cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert second.returncode == 1 and "already locked" in second.stderr
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "caught signal 15" in err
    assert _summary(out)[0] == "failed" and r.events() == ["start slow"]
    assert "DONE" not in (tmp_path / "wf.dag.rescue").read_text()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has finished
    except FileNotFoundError:
        return False


def test_a_killed_master_leaves_no_task_behind(tmp_path: Path) -> None:
    r = PmcRun(tmp_path, "local")
    r.dag.write_text(r.task("slow", "--victim") + "\n")
    proc = subprocess.Popen(r.command(), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not (r.logdir / "victim").exists() and time.time() < deadline:
        time.sleep(0.05)
    task = int((r.logdir / "victim.pid").read_text())
    assert _alive(task)
    proc.kill()  # SIGKILL: no clean-up code runs in the master
    proc.wait(timeout=30)
    deadline = time.time() + 30  # its workers see end of file and exit; the task dies with them
    while _alive(task) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(task)


@pytest.mark.parametrize(("lines", "args", "needle"), [
    (["TASK A /bin/true", "EDGE A B"], [], "wf.dag:2: EDGE names an unknown task"),
    (["TASK A -m much /bin/true"], [], "wf.dag:1: invalid value for -m/--request-memory"),
    (["TASK A /bin/true"], ["--frobnicate"], "unrecognized argument: --frobnicate"),
    (["TASK A /bin/true"], ["--tries", "0"], "--tries takes an integer >= 1"),
    (["TASK A /bin/true"], ["--host-script", "x"], "not supported"),
])
def test_bad_input_exits_2_with_location(tmp_path: Path, lines: list[str], args: list[str],
                                         needle: str) -> None:
    (tmp_path / "wf.dag").write_text("\n".join(lines) + "\n")
    res = subprocess.run([PMC, "--transport", "local", *args, "wf.dag"], check=False, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert needle in res.stderr and "Traceback" not in res.stderr


def test_rescue_file_naming_an_unknown_task_is_refused(tmp_path: Path) -> None:
    (tmp_path / "wf.dag").write_text("TASK A /bin/true\n")
    (tmp_path / "wf.dag.rescue").write_text("DONE A\nDONE Z\n")
    res = subprocess.run([PMC, "--transport", "local", "wf.dag"], check=False, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "wf.dag.rescue:2: rescue log names an unknown task" in res.stderr
