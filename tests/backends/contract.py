"""The Backend contract: one test class that every backend (local, HTCondor, Slurm, Dask) runs.

A backend's test module subclasses ``BackendContract`` and implements ``make_backend(tmp_path,
slots)``, returning a backend that runs at most ``slots`` ordinary jobs at once.  The tests use only
the protocol (``submit``, ``wait``, ``cancel``, ``idle``, ``running``, ``close``) and real processes
and files: nothing here knows how a backend works inside.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sheaf.classad import ClassAd
from sheaf.engine import Backend, Event, Exited, Held, Launch

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


class BackendContract:
    """Behaviour every backend must show (see the module docstring)."""

    #: seconds an attempt costs on this backend beyond a local process (a task round trip, a batch
    #: system's dispatch): added to the time budgets, so each system is held to its own floor
    overhead: float = 0.0

    def make_backend(self, tmp_path: Path, slots: int) -> Backend:
        raise NotImplementedError

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
        events = collect(backend, 3)
        for code in (0, 1, 7):
            event = exited(events[f"exit{code}#0"])
            assert (event.exit_code, event.signal, event.reason) == (code, None, None)
            assert before <= event.started <= event.ended <= time.time()

    def test_a_signal_is_reported_as_a_signal(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "term", ["/bin/sh", "-c", "kill -TERM $$"]))
        event = exited(collect(backend, 1)["term#0"])
        assert (event.exit_code, event.signal) == (None, 15)

    def test_argv_is_exec_d_without_a_shell(self, backend: Backend, tmp_path: Path) -> None:
        text = "$HOME; echo injected `id` *"
        backend.submit(make_launch(tmp_path, "echo", ["/bin/echo", text]))
        assert exited(collect(backend, 1)["echo#0"]).exit_code == 0
        assert (tmp_path / "echo.out").read_text() == text + "\n"

    def test_environment_is_exactly_the_launch_environment(self, backend: Backend, tmp_path: Path) -> None:
        env = {"PATH": "/usr/bin:/bin", "ONLY": "this one", "EMPTY": ""}
        backend.submit(make_launch(tmp_path, "env", ["/usr/bin/env"], env=env))
        collect(backend, 1)
        lines = (tmp_path / "env.out").read_text().splitlines()
        assert sorted(lines) == sorted(f"{k}={v}" for k, v in env.items())

    def test_working_directory_and_output_files(self, backend: Backend, tmp_path: Path) -> None:
        work = tmp_path / "work dir"
        work.mkdir()
        (tmp_path / "pwd.out").write_text("old content that must vanish\n" * 10)
        launch = make_launch(tmp_path, "pwd", ["/bin/sh", "-c", "pwd; echo oops >&2"])
        backend.submit(Launch(**{**_fields(launch), "cwd": str(work)}))
        collect(backend, 1)
        assert (tmp_path / "pwd.out").read_text() == f"{work.resolve()}\n"
        assert (tmp_path / "pwd.err").read_text() == "oops\n"

    def test_a_job_inherits_only_stdin_stdout_stderr(self, backend: Backend, tmp_path: Path) -> None:
        keep = open(tmp_path / "engine-file", "w")  # noqa: SIM115 - an open descriptor of "the engine"
        try:
            backend.submit(make_launch(tmp_path, "fds", ["/bin/sh", "-c", "ls /proc/$$/fd"]))
            collect(backend, 1)
        finally:
            keep.close()
        assert sorted(int(fd) for fd in (tmp_path / "fds.out").read_text().split()) == [0, 1, 2]

    def test_stdout_and_stderr_may_share_a_file(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "both", ["/bin/sh", "-c", "echo out; echo err >&2; echo out2"],
                                   stderr="both.out"))
        collect(backend, 1)
        assert (tmp_path / "both.out").read_text() == "out\nerr\nout2\n"

    def test_a_missing_executable_is_held_with_a_reason(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "ghost", [str(tmp_path / "no-such-program")]))
        event = collect(backend, 1)["ghost#0"]
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
        wait_for(lambda: (tmp_path / "a.pid").exists() and (tmp_path / "a.pid").read_text().strip())
        assert (single.running(), single.idle()) == (1, 1)
        single.cancel("b#0")
        assert single.idle() == 0
        pid = int((tmp_path / "a.pid").read_text())
        single.cancel("a#0")
        wait_for(lambda: not alive(pid))
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
        collect(single, 6)
        assert log.read_text().split() == ["top", "high1", "high2", "low1", "low2"]

    def test_slots_bound_the_running_jobs(self, backend: Backend, tmp_path: Path) -> None:
        for i in range(5):
            backend.submit(make_launch(tmp_path, f"s{i}", ["/bin/sleep", "0.2"]))
        assert backend.running() + backend.idle() == 5
        assert backend.running() <= 2
        events = collect(backend, 5)
        spans = sorted((exited(e).started, exited(e).ended) for e in events.values())
        for i, (start, _) in enumerate(spans):
            overlapping = sum(1 for s, e in spans if s <= start < e)
            assert overlapping <= 2, (i, spans)

    def test_close_kills_the_whole_process_group(self, tmp_path: Path) -> None:
        backend = self.make_backend(tmp_path, 1)
        argv = ["/bin/sh", "-c", "sleep 60 & echo $! > child.pid; wait"]
        backend.submit(make_launch(tmp_path, "tree", argv))
        wait_for(lambda: (tmp_path / "child.pid").exists() and (tmp_path / "child.pid").read_text().strip())
        child = int((tmp_path / "child.pid").read_text())
        assert alive(child)
        backend.close()
        wait_for(lambda: not alive(child))
        assert backend.running() == 0
        assert backend.wait(0.1) == []
        backend.close()  # closing twice is harmless

    def test_many_short_jobs_each_reported_once(self, backend: Backend, tmp_path: Path) -> None:
        for i in range(200):
            backend.submit(make_launch(tmp_path, f"t{i}", ["/bin/true"]))
        events = collect(backend, 200)
        assert all(exited(e).exit_code == 0 for e in events.values())
        assert (backend.running(), backend.idle()) == (0, 0)
        assert backend.wait(0.05) == []

    def test_keys_are_unique_while_submitted(self, backend: Backend, tmp_path: Path) -> None:
        backend.submit(make_launch(tmp_path, "dup", ["/bin/sleep", "5"]))
        with pytest.raises(ValueError):
            backend.submit(make_launch(tmp_path, "dup", ["/bin/true"]))
        backend.cancel("dup#0")
        backend.submit(make_launch(tmp_path, "dup", ["/bin/true"]))
        assert exited(collect(backend, 1)["dup#0"]).exit_code == 0


def _fields(launch: Launch) -> dict[str, object]:
    return {name: getattr(launch, name) for name in Launch.__dataclass_fields__}


__all__ = ["BackendContract", "alive", "collect", "exited", "make_launch", "wait_for"]
