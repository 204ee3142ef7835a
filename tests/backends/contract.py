"""The Backend contract: the test classes that every backend sheaf's engine drives (local, Slurm, Dask)
runs.  (``--backend htcondor`` hands the DAG to DAGMan: sheaf's engine does not run, so none of this
applies; the engine's own tests run its state machine against a scripted fake, ``engine_helpers``.)

``BackendContract``: a backend's test module subclasses it and implements ``make_backend(tmp_path,
slots)``, returning a backend that runs at most ``slots`` ordinary jobs at once and evaluates the
``periodic_*`` policy every 0.2 s (``PERIODIC_EXPR_INTERVAL``).  The tests use only
the protocol (``submit``, ``wait``, ``cancel``, ``idle``, ``running``, ``close``) and real processes
and files: nothing here knows how a backend works inside.

``RunContract``: the same through ``sheaf run DIR --backend NAME`` as a process (``run_args``,
``run_env``): ``kill -9`` of the engine mid-run and a resume -- per-task marker files show that no
task finished twice and none was lost -- and a job killed from outside, as its batch system would
kill it (``kill_from_outside``), is a failed attempt that the DAG's ``RETRY`` runs again.

Both carry ``overhead``: the seconds an attempt costs on the backend beyond a local process, added to
every time budget, so each system is held to its own floor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from sheaf.classad import ClassAd
from sheaf.engine import Backend, Event, Exited, Held, Launch
from sheaf.engine._backend import FileTransfer, Removed, Suspended

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def make_launch(tmp: Path, name: str, argv: list[str], *, attempt: int = 0, priority: int = 0,
                env: dict[str, str] | None = None, ad: str = "", stderr: str | None = None) -> Launch:
    job_ad = ClassAd.parse_old(f"DAGNodeRetry = {attempt}\nRequestCpus = 1\nRequestMemory = 64\n{ad}")
    return Launch(key=f"{name}#{attempt}", node=name, attempt=attempt, argv=tuple(argv),
                  env=dict(ENV if env is None else env), cwd=str(tmp), stdout=str(tmp / f"{name}.out"),
                  stderr=str(tmp / (stderr or f"{name}.err")), job_ad=job_ad, priority=priority)


def collect(backend: Backend, count: int, timeout: float = 30.0) -> dict[str, Event]:
    """Wait until ``count`` events arrived; each key must be reported once."""
    events: dict[str, Event] = {}
    deadline = time.monotonic() + timeout
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {len(events)} of {count} events: {sorted(events)}"
        for event in backend.wait(1.0):
            assert event.key not in events, f"{event.key} reported twice"
            events[event.key] = event
    return events


def exited(event: Event) -> Exited:
    assert isinstance(event, Exited), event
    return event


@contextlib.contextmanager
def unread_fifo(tmp: Path, last_resort: float, peer: int = os.O_RDONLY) -> Iterator[Path]:
    """A FIFO nobody reads (a job that opens it blocks before its execve; ``peer`` ``O_WRONLY``:
    nobody writes, for a job reading it); after ``last_resort`` seconds a peer comes anyway, so
    that a regression fails the test instead of hanging it."""
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    release = threading.Timer(last_resort, lambda: os.close(os.open(fifo, peer | os.O_NONBLOCK)))
    release.start()
    try:
        yield fifo
    finally:
        release.cancel()


def wait_for(predicate: object, timeout: float = 10.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


#: reads in.txt in its working directory, writes out.txt and extra.txt there, records where it ran,
#: and exits with the code given as its argument
TRANSFER_JOB = ("import json, os, sys; text = open('in.txt').read(); "
                "open('out.txt', 'w').write(text.upper()); open('extra.txt', 'w').write('x'); "
                "json.dump(os.getcwd(), open(os.environ['WHERE'], 'w')); "
                "sys.exit(int(sys.argv[1]))")


def transfer_launch(tmp: Path, name: str, transfer: FileTransfer, code: int = 0) -> Launch:
    """A launch of ``TRANSFER_JOB`` whose initialdir is ``tmp/iwd``, with ``transfer``."""
    iwd = tmp / "iwd"
    iwd.mkdir(exist_ok=True)
    launch = make_launch(tmp, name, [sys.executable, "-c", TRANSFER_JOB, str(code)],
                         env={**ENV, "WHERE": str(tmp / f"{name}.where")})
    return dataclasses.replace(launch, cwd=str(iwd), transfer=transfer)


class FileTransferContract:
    """HTCondor file transfer (``should_transfer_files = YES``), for the backends that claim it
    (``file_transfer = True``): mixed into ``BackendContract``."""

    file_transfer: bool
    timeout: float

    @pytest.fixture(autouse=True)
    def _claims_file_transfer(self) -> None:
        if not self.file_transfer:
            pytest.skip("this backend does not claim HTCondor file transfer")

    @pytest.fixture
    def source(self, tmp_path: Path) -> Path:
        path = tmp_path / "data" / "in.txt"
        path.parent.mkdir()
        path.write_text("hello")
        return path

    def test_file_transfer_inputs_in_outputs_back_remapped_sandbox_removed(
            self, backend: Backend, tmp_path: Path, source: Path) -> None:
        remapped = tmp_path / "iwd" / "made" / "renamed.txt"
        transfer = FileTransfer((str(source),), ("out.txt", "extra.txt"), (("extra.txt", str(remapped)),))
        backend.submit(transfer_launch(tmp_path, "a", transfer))
        assert exited(collect(backend, 1, self.timeout)["a#0"]).exit_code == 0
        ran_in = json.loads((tmp_path / "a.where").read_text())
        assert ran_in != str(tmp_path / "iwd") and not os.path.exists(ran_in)  # a sandbox, then removed
        assert sorted(os.listdir(tmp_path / "iwd")) == ["made", "out.txt"]  # not the input, remap honoured
        assert (tmp_path / "iwd" / "out.txt").read_text() == "HELLO" and remapped.read_text() == "x"

    def test_file_transfer_without_an_output_list_brings_every_new_file(
            self, backend: Backend, tmp_path: Path, source: Path) -> None:
        backend.submit(transfer_launch(tmp_path, "b", FileTransfer((str(source),), None)))
        assert exited(collect(backend, 1, self.timeout)["b#0"]).exit_code == 0
        assert sorted(os.listdir(tmp_path / "iwd")) == ["extra.txt", "out.txt"]  # not the unchanged input

    def test_file_transfer_a_missing_input_holds_the_job(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(transfer_launch(tmp_path, "c", FileTransfer((str(tmp_path / "nowhere"),), ())))
        event = collect(backend, 1, self.timeout)["c#0"]
        assert isinstance(event, Held) and "transfer input files failure" in event.reason
        assert not (tmp_path / "c.where").exists()  # it never ran

    def test_file_transfer_a_missing_output_after_success_holds_the_job(
            self, backend: Backend, tmp_path: Path, source: Path) -> None:
        backend.submit(transfer_launch(tmp_path, "d", FileTransfer((str(source),), ("out.txt", "never.txt"))))
        event = collect(backend, 1, self.timeout)["d#0"]
        assert isinstance(event, Held) and "never.txt" in event.reason

    def test_file_transfer_on_success_brings_nothing_back_after_a_failure(
            self, backend: Backend, tmp_path: Path, source: Path) -> None:
        transfer = FileTransfer((str(source),), ("out.txt", "never.txt"), on_success=True)
        backend.submit(transfer_launch(tmp_path, "e", transfer, code=3))
        assert exited(collect(backend, 1, self.timeout)["e#0"]).exit_code == 3  # the job's own status
        assert os.listdir(tmp_path / "iwd") == []


class BackendContract(FileTransferContract):
    """Behaviour every backend must show (see the module docstring).

    ``short_jobs`` is how many ``/bin/true`` the many-jobs test runs (a batch system, where a job
    takes a second to dispatch, runs fewer)."""

    short_jobs: int = 200

    #: seconds an attempt costs on this backend beyond a local process (a task round trip, a batch
    #: system's dispatch): added to the time budgets, so each system is held to its own floor
    overhead: float = 0.0

    #: whether the backend runs HTCondor file transfer (``Launch.transfer``) as the local pool does:
    #: then the file transfer tests below run against it
    file_transfer: bool = False

    def make_backend(self, tmp_path: Path, slots: int) -> Backend:
        raise NotImplementedError

    @property
    def timeout(self) -> float:
        return 30.0 + 10 * self.overhead

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[Backend]:
        made = self.make_backend(tmp_path, 2)
        yield made
        made.close()

    @pytest.fixture
    def single(self, tmp_path: Path) -> Iterator[Backend]:
        made = self.make_backend(tmp_path, 1)
        yield made
        made.close()

    def test_exit_codes_and_times_are_reported(self, backend: Backend, tmp_path: Path) -> None:
        before = time.time()
        for code in (0, 1, 7):
            backend.submit(make_launch(tmp_path, f"exit{code}", ["/bin/sh", "-c", f"exit {code}"]))
        events = collect(backend, 3, self.timeout)
        for code in (0, 1, 7):
            event = exited(events[f"exit{code}#0"])
            assert (event.exit_code, event.signal, event.reason) == (code, None, None)
            assert before <= event.started <= event.ended <= time.time()

    def test_a_signal_is_reported_as_a_signal(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "term", ["/bin/sh", "-c", "kill -TERM $$"]))
        event = exited(collect(backend, 1, self.timeout)["term#0"])
        assert (event.exit_code, event.signal) == (None, 15)

    def test_argv_is_exec_d_without_a_shell(self, backend: Backend, tmp_path: Path) -> None:
        text = "$HOME; echo injected `id` *"
        backend.submit(make_launch(tmp_path, "echo", ["/bin/echo", text]))
        assert exited(collect(backend, 1, self.timeout)["echo#0"]).exit_code == 0
        assert (tmp_path / "echo.out").read_text() == text + "\n"

    def test_environment_is_exactly_the_launch_environment(self, backend: Backend, tmp_path: Path) -> None:
        env = {"PATH": "/usr/bin:/bin", "ONLY": "this one", "EMPTY": ""}
        backend.submit(make_launch(tmp_path, "env", ["/usr/bin/env"], env=env))
        collect(backend, 1, self.timeout)
        lines = (tmp_path / "env.out").read_text().splitlines()
        assert sorted(lines) == sorted(f"{k}={v}" for k, v in env.items())

    def test_working_directory_and_output_files(self, backend: Backend, tmp_path: Path) -> None:
        work = tmp_path / "work dir"
        work.mkdir()
        (tmp_path / "pwd.out").write_text("old content that must vanish\n" * 10)
        launch = make_launch(tmp_path, "pwd", ["/bin/sh", "-c", "pwd; echo oops >&2"])
        backend.submit(Launch(**{**_fields(launch), "cwd": str(work)}))
        collect(backend, 1, self.timeout)
        assert (tmp_path / "pwd.out").read_text() == f"{work.resolve()}\n"
        assert (tmp_path / "pwd.err").read_text() == "oops\n"

    def test_a_job_inherits_only_stdin_stdout_stderr(self, backend: Backend, tmp_path: Path) -> None:
        keep = open(tmp_path / "engine-file", "w")  # noqa: SIM115 - an open descriptor of "the engine"
        try:
            backend.submit(make_launch(tmp_path, "fds", ["/bin/sh", "-c", "ls /proc/$$/fd"]))
            collect(backend, 1, self.timeout)
        finally:
            keep.close()
        assert sorted(int(fd) for fd in (tmp_path / "fds.out").read_text().split()) == [0, 1, 2]

    def test_stdout_and_stderr_may_share_a_file(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "both", ["/bin/sh", "-c", "echo out; echo err >&2; echo out2"],
                                   stderr="both.out"))
        collect(backend, 1, self.timeout)
        assert (tmp_path / "both.out").read_text() == "out\nerr\nout2\n"

    def test_a_missing_executable_is_held_with_a_reason(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "ghost", [str(tmp_path / "no-such-program")]))
        event = collect(backend, 1, self.timeout)["ghost#0"]
        assert isinstance(event, Held) and "no-such-program" in event.reason

    def test_wait_times_out_with_no_events(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "long", ["/bin/sleep", "30"]))
        start = time.monotonic()
        assert backend.wait(0.2) == []
        assert 0.15 <= time.monotonic() - start < 5 + self.overhead
        backend.cancel("long#0")

    def test_cancel_queued_and_running_reports_nothing(self, single: Backend, tmp_path: Path) -> None:
        single.submit(make_launch(tmp_path, "a", ["/bin/sh", "-c", "echo $$ > a.pid; exec sleep 30"]))
        single.submit(make_launch(tmp_path, "b", ["/bin/sleep", "30"]))
        wait_for(lambda: (tmp_path / "a.pid").exists() and (tmp_path / "a.pid").read_text().strip(),
                 10 + 10 * self.overhead)
        assert (single.running(), single.idle()) == (1, 1)
        single.cancel("b#0")
        assert single.idle() == 0
        pid = int((tmp_path / "a.pid").read_text())
        single.cancel("a#0")
        wait_for(lambda: not alive(pid), 10 + 10 * self.overhead)
        assert single.running() == 0
        assert single.wait(0.3) == []

    def test_cancel_drops_an_event_not_yet_taken(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "quick", ["/bin/true"]))
        time.sleep(0.3 + self.overhead)  # it has ended, its event is waiting
        backend.cancel("quick#0")
        assert backend.wait(0.2) == []

    def test_priority_first_then_submission_order(self, single: Backend, tmp_path: Path) -> None:
        log = tmp_path / "order.log"
        single.submit(make_launch(tmp_path, "first", ["/bin/sleep", "0.3"], priority=-100))
        for name, priority in [("low1", 0), ("high1", 5), ("low2", 0), ("high2", 5), ("top", 9)]:
            argv = ["/bin/sh", "-c", f"echo {name} >> {log}"]
            single.submit(make_launch(tmp_path, name, argv, priority=priority))
        collect(single, 6, self.timeout)
        assert log.read_text().split() == ["top", "high1", "high2", "low1", "low2"]

    def test_slots_bound_the_running_jobs(self, backend: Backend, tmp_path: Path) -> None:
        for i in range(5):
            backend.submit(make_launch(tmp_path, f"s{i}", ["/bin/sleep", "0.2"]))
        assert backend.running() + backend.idle() == 5
        assert backend.running() <= 2
        events = collect(backend, 5, self.timeout)
        spans = sorted((exited(e).started, exited(e).ended) for e in events.values())
        for i, (start, _) in enumerate(spans):
            overlapping = sum(1 for s, e in spans if s <= start < e)
            assert overlapping <= 2, (i, spans)

    def test_close_kills_the_whole_process_group(self, tmp_path: Path) -> None:
        backend = self.make_backend(tmp_path, 1)
        argv = ["/bin/sh", "-c", "sleep 60 & echo $! > child.pid; wait"]
        backend.submit(make_launch(tmp_path, "tree", argv))
        wait_for(lambda: (tmp_path / "child.pid").exists() and (tmp_path / "child.pid").read_text().strip(),
                 10 + 10 * self.overhead)
        child = int((tmp_path / "child.pid").read_text())
        assert alive(child)
        backend.close()
        wait_for(lambda: not alive(child), 10 + 10 * self.overhead)
        assert backend.running() == 0
        assert backend.wait(0.1) == []
        backend.close()  # closing twice is harmless

    def test_many_short_jobs_each_reported_once(self, backend: Backend, tmp_path: Path) -> None:
        for i in range(self.short_jobs):
            backend.submit(make_launch(tmp_path, f"t{i}", ["/bin/true"]))
        events = collect(backend, self.short_jobs, self.timeout + self.short_jobs * self.overhead)
        assert all(exited(e).exit_code == 0 for e in events.values())
        assert (backend.running(), backend.idle()) == (0, 0)
        assert backend.wait(0.05) == []

    def test_dollar_dollar_is_expanded_where_the_job_runs(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "cpus", ["/bin/echo", "cpus=$$(Cpus)"]))
        assert exited(collect(backend, 1, self.timeout)["cpus#0"]).exit_code == 0
        text = (tmp_path / "cpus.out").read_text().strip()
        assert text.startswith("cpus=") and int(text[5:]) >= 1

    def test_periodic_remove_stops_a_running_job(self, backend: Backend, tmp_path: Path) -> None:
        """``periodic_remove`` is evaluated as the schedd does (the backend's interval is 0.2 s here)."""
        ad = "PeriodicRemove = JobStatus == 2 && NumJobStarts >= 1"
        backend.submit(make_launch(tmp_path, "doomed", ["/bin/sleep", "60"], ad=ad))
        event = collect(backend, 1, self.timeout)["doomed#0"]
        assert isinstance(event, Removed) and "PeriodicRemove" in event.reason

    def test_the_exit_policy_requeues_and_holds_as_the_shadow_does(self, backend: Backend,
                                                                   tmp_path: Path) -> None:
        """``OnExitRemove`` false at exit runs the job again (``Requeued``); ``OnExitHold`` holds it,
        and its ``periodic_release`` runs it again; ``NumJobCompletions`` counts the runs."""
        count = 'n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$0.n"; [ $n -ge 2 ]'
        backend.submit(make_launch(tmp_path, "again", ["/bin/sh", "-c", count, str(tmp_path / "again")],
                                   ad="OnExitRemove = ExitCode =?= 0 || NumJobCompletions > 4"))
        hold = "OnExitHold = NumJobCompletions == 1\nPeriodicRelease = JobStatus == 5"
        backend.submit(make_launch(tmp_path, "held", ["/bin/sh", "-c", count, str(tmp_path / "held")],
                                   ad=hold))
        kinds: dict[str, list[str]] = {"again#0": [], "held#0": []}
        deadline = time.monotonic() + self.timeout
        while any(not seen or seen[-1] != "Exited" for seen in kinds.values()):
            assert time.monotonic() < deadline, kinds
            for event in backend.wait(1.0):
                kinds[event.key].append(type(event).__name__)
        assert kinds == {"again#0": ["Requeued", "Exited"], "held#0": ["Suspended", "Released", "Exited"]}
        assert (tmp_path / "again.n").read_text() == (tmp_path / "held.n").read_text() == "2\n"

    def test_a_duration_limit_holds_a_running_job_with_its_code(self, backend: Backend,
                                                                tmp_path: Path) -> None:
        """``allowed_execute_duration`` (``AllowedExecuteDuration``) holds a job that runs longer, hold
        code 47 and HTCondor's reason; a ``periodic_remove`` on that code then removes it."""
        ad = "AllowedExecuteDuration = 1\nPeriodicRemove = JobStatus == 5 && HoldReasonCode == 47"
        backend.submit(make_launch(tmp_path, "long", ["/bin/sleep", "60"], ad=ad))
        seen: list[Event] = []
        deadline = time.monotonic() + self.timeout
        while not seen or not isinstance(seen[-1], Removed):
            assert time.monotonic() < deadline, seen
            seen.extend(backend.wait(1.0))
        held, removed = seen
        assert isinstance(held, Suspended) and (held.code, held.subcode) == (47, 0)
        assert held.reason == "The job exceeded allowed execute duration of 00:01"
        assert "PeriodicRemove" in removed.reason

    def test_keys_are_unique_while_submitted(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "dup", ["/bin/sleep", "5"]))
        with pytest.raises(ValueError):
            backend.submit(make_launch(tmp_path, "dup", ["/bin/true"]))
        backend.cancel("dup#0")
        backend.submit(make_launch(tmp_path, "dup", ["/bin/true"]))
        assert exited(collect(backend, 1, self.timeout)["dup#0"]).exit_code == 0


    def test_memory_over_the_request_is_killed_with_a_memory_reason(self, backend: Backend,
                                                                     tmp_path: Path) -> None:
        hog = [sys.executable, "-c", "import time; b = bytearray(200 * 2**20); time.sleep(30)"]
        backend.submit(make_launch(tmp_path, "hog", hog, ad="RequestMemory = 64"))
        event = exited(collect(backend, 1, self.timeout)["hog#0"])
        assert event.signal == signal.SIGKILL and event.reason is not None and "memory usage" in event.reason


SHEAF = str(Path(sys.executable).parent / "sheaf")
MARKED_JOB = """#!/bin/sh
# marks its start, sleeps, marks its end: the markers count how often each task ran
echo x >> "$1.started"
sleep "$2"
echo x >> "$1.done"
"""
ONCE_JOB = """#!/bin/sh
# the first attempt waits to be killed from outside; the second succeeds
[ -e first ] && exit 0
touch first
echo $$ > job.pid
exec sleep 120
"""


def marker_dag(work: Path, count: int, seconds: float, retry: int = 0,
               lengths: Mapping[int, float] | None = None) -> Path:
    """t1 t2 -> t3..tN: each task writes NAME.started and NAME.done (and sleeps ``seconds``, or its
    ``lengths`` entry); ``k.dag``."""
    job = work / "job.sh"
    job.write_text(MARKED_JOB)
    job.chmod(0o755)
    lines = []
    for i in range(1, count + 1):
        length = (lengths or {}).get(i, seconds)
        (work / f"t{i}.sub").write_text(f"executable = {job}\narguments = t{i} {length}\n"
                                        f"output = t{i}.out\nerror = t{i}.err\nlog = k.log\n"
                                        "request_memory = 64\nqueue\n")
        lines.append(f"JOB t{i} t{i}.sub" + (f"\nRETRY t{i} {retry}" if retry else ""))
    lines.append("PARENT t1 t2 CHILD " + " ".join(f"t{i}" for i in range(3, count + 1)))
    (work / "k.dag").write_text("\n".join(lines) + "\n")
    return work


def parent_of(pid: int) -> int:
    """The parent process of ``pid`` (field 4 of ``/proc/<pid>/stat``)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def marks(work: Path, suffix: str) -> dict[str, int]:
    """How often each task wrote its ``suffix`` marker (``.started``, ``.done``)."""
    return {p.name[:-len(suffix)]: len(p.read_text().split()) for p in work.glob(f"*{suffix}")}


class RunContract:
    """``sheaf run --backend NAME`` as a process (see the module docstring)."""

    overhead: float = 0.0

    def run_args(self) -> list[str]:
        """``sheaf run DIR`` and then these: the backend and its options."""
        raise NotImplementedError

    def run_env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{Path(SHEAF).parent}:{os.environ.get('PATH', '')}"}

    def kill_from_outside(self, pid: int) -> None:
        """Kill the running job whose process is ``pid`` as the batch system would (here: SIGKILL to
        its process group, as an operator's ``kill`` on the machine)."""
        os.killpg(pid, signal.SIGKILL)

    def start_run(self, work: Path) -> subprocess.Popen[str]:
        return subprocess.Popen([SHEAF, "run", str(work), *self.run_args()], env=self.run_env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

    def run(self, work: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SHEAF, "run", str(work), *self.run_args()], env=self.run_env(), text=True,
                              capture_output=True, timeout=300 + 20 * self.overhead, check=False)

    def test_kill_minus_9_of_the_engine_then_resume_finishes_each_task_once(self, tmp_path: Path) -> None:
        """The engine dies while t3..t6 run or wait, and stays dead longer than a task lasts; the resume
        finishes every task exactly once (an attempt killed with the engine may start again; none
        finishes twice, none is lost)."""
        work = marker_dag(tmp_path, 6, 2.0 + self.overhead)
        engine = self.start_run(work)
        deadline = time.monotonic() + 120 + 20 * self.overhead
        while len(marks(work, ".started")) < 4:  # t1 t2 done, two children running
            assert time.monotonic() < deadline and engine.poll() is None, engine.communicate()[0]
            time.sleep(0.05)
        time.sleep(0.5)  # past their first steps (records written, guards told)
        os.kill(engine.pid, signal.SIGKILL)
        engine.communicate()
        time.sleep(3.0 + self.overhead)  # longer than a task: one left running would have finished now
        done = self.run(work)
        assert done.returncode == 0, done.stdout + done.stderr
        assert marks(work, ".done") == {f"t{i}": 1 for i in range(1, 7)}, (marks(work, ".done"), done.stdout)
        assert all(count <= 2 for count in marks(work, ".started").values()), marks(work, ".started")

    def test_a_job_killed_from_outside_is_a_failed_attempt_that_retries(self, tmp_path: Path) -> None:
        job = tmp_path / "once.sh"
        job.write_text(ONCE_JOB)
        job.chmod(0o755)
        (tmp_path / "a.sub").write_text(f"executable = {job}\noutput = a.out\nerror = a.err\nlog = a.log\n"
                                        "request_memory = 64\nqueue\n")
        (tmp_path / "one.dag").write_text("JOB a a.sub\nRETRY a 1\n")
        engine = self.start_run(tmp_path)
        pid_file = tmp_path / "job.pid"
        deadline = time.monotonic() + 120 + 20 * self.overhead
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline and engine.poll() is None
            time.sleep(0.05)
        time.sleep(0.5)  # the backend has seen it start
        self.kill_from_outside(int(pid_file.read_text()))
        out, _ = engine.communicate(timeout=180 + 20 * self.overhead)
        assert engine.returncode == 0, out
        assert "workflow succeeded: 1 of 1 nodes done, 0 failed, 1 retries" in out


def _fields(launch: Launch) -> dict[str, object]:
    return {name: getattr(launch, name) for name in Launch.__dataclass_fields__}


__all__ = ["BackendContract", "RunContract", "alive", "collect", "exited", "make_launch", "marker_dag",
           "marks", "parent_of", "wait_for"]
