"""The Slurm backend beyond the contract: what it submits, what the batch system does to its jobs,
and its limits -- against the private test cluster (``tests/slurm_cluster.py``) where Slurm is needed."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheaf.backends._records import read_record, stem_of
from sheaf.backends.slurm import SlurmBackend
from sheaf.backends.slurm._ctl import RateLimit, classify
from sheaf.backends.slurm._render import launcher, multi_task, render
from sheaf.classad import ClassAd
from sheaf.engine import Event, Exited, Held, Launch
from slurm_cluster import Cluster

from .contract import collect, exited, make_launch, wait_for
from .test_slurm_contract import slurm_backend

# -- render: pure -----------------------------------------------------------------------------------


def _argv(ad: str, attempt: int = 0) -> list[str]:
    launch = make_launch(Path("/tmp"), "n", ["/bin/true"], attempt=attempt, ad=ad)
    return render(launch, stem="abc", run_id="RUN", script="/s/job.py", spec="/s/spec.json", log="/s/log")


def test_render_names_the_attempt_and_never_requeues() -> None:
    argv = _argv("")
    assert argv[:2] == ["sbatch", "--parsable"]
    assert "--job-name=sheaf-abc" in argv and "--no-requeue" in argv and "--export=ALL" in argv
    assert "--comment=sheaf run=RUN node=n attempt=0 key=n#0" in argv
    assert argv[-2:] == ["/s/job.py", "/s/spec.json"]


def test_render_resources_are_evaluated_per_attempt() -> None:
    grow = "RequestMemory = ifthenelse(DAGNodeRetry == 0, 100, 400)"
    assert "--mem=100" in _argv(grow, attempt=0)
    assert "--mem=400" in _argv(grow, attempt=1)


def test_render_pegasus_and_globus_profiles() -> None:
    argv = _argv('RequestCpus = 4\npegasus_nodes = 2\npegasus_ppn = 8\npegasus_queue = "short"\n'
                 'pegasus_project = "abc123"\nglobus_xcount = 16\nglobus_maxwalltime = 90\n'
                 'pegasus_runtime = 7200\nBatchExtraSubmitArgs = "--qos=debug --constraint=\'a b\'"')
    for option in ("--nodes=2", "--ntasks-per-node=8", "--partition=short",
                   "--account=abc123", "--ntasks=16", "--time=90", "--qos=debug", "--constraint=a b"):
        assert option in argv, option
    assert argv.index("--qos=debug") > argv.index("--time=90")  # the user's passthrough comes last
    assert not [a for a in argv if a.startswith("--cpus-per-task")]  # RequestCpus: all the tasks' CPUs
    assert "--cpus-per-task=4" in _argv("RequestCpus = 4")


def test_render_blahp_directives_codegen_writes() -> None:
    """HTCondor's BLAHP batch directives (what codegen writes from Pegasus's nodes/ppn/queue/project
    and globus xcount/hostcount) become real sbatch options; a PMC cluster asking for several tasks
    is started by mpiexec."""
    ad = ('HostNumber = 2\nSMPGranularity = 3\nNodeNumber = 6\nBatchQueue = "debug"\n'
          'BatchProject = "p1"\nBatchRuntime = 600\nRequestCpus = 6\nsheaf_launcher = "mpiexec"')
    argv = _argv(ad)
    for option in ("--nodes=2", "--ntasks-per-node=3", "--ntasks=6", "--partition=debug", "--account=p1",
                   "--time=10"):
        assert option in argv, option
    assert not [a for a in argv if a.startswith("--cpus-per-task")]
    assert launcher(ClassAd.parse_old(ad)) == "mpiexec" and multi_task(ClassAd.parse_old(ad))
    assert launcher(ClassAd.parse_old('NodeNumber = 1\nsheaf_launcher = "mpiexec"')) is None  # one task


def test_render_leaves_out_what_does_not_evaluate() -> None:
    argv = _argv("RequestCpus = undefined_thing\nMaxWallTime = -1")
    assert not [a for a in argv if a.startswith(("--cpus-per-task", "--time"))]


def test_classify_sbatch_refusals() -> None:
    assert classify(0, "") == "ok"
    failed = "sbatch: error: Batch job submission failed:"
    assert classify(1, f"{failed} Socket timed out on send/recv") == "transient"
    assert classify(1, "sbatch: error: QOSMaxSubmitJobPerUserLimit") == "limit"
    assert classify(1, f"{failed} Invalid partition name specified") == "error"


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=5.0), max_size=40))
def test_rate_limit_never_exceeds_burst_plus_rate(steps: list[float]) -> None:
    now = [0.0]
    limit = RateLimit(rate=2.0, burst=3, clock=lambda: now[0])
    granted = 0
    for step in steps:
        now[0] += step
        granted += sum(limit.try_acquire() for _ in range(10))
    assert granted <= 3 + 2.0 * now[0] + 1e-9


def test_rate_limit_validates_its_capacity() -> None:
    with pytest.raises(ValueError):
        RateLimit(rate=0)


# -- against the test cluster -----------------------------------------------------------------------


def test_memory_over_the_request_is_killed_with_a_memory_reason(slurm: Cluster, tmp_path: Path) -> None:
    hog = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)"
    with slurm_backend(slurm, tmp_path / "state") as backend:
        backend.submit(make_launch(tmp_path, "hog", ["/usr/bin/env", "python3", "-c", hog],
                                   ad="RequestMemory = 100"))
        event = exited(collect(backend, 1, 60)["hog#0"])
    assert event.signal == signal.SIGKILL and event.exit_code is None
    assert event.reason is not None and "exceeded request 100 MB" in event.reason


def test_scancel_from_outside_is_a_failed_attempt(slurm: Cluster, tmp_path: Path) -> None:
    with slurm_backend(slurm, tmp_path / "state") as backend:
        backend.submit(make_launch(tmp_path, "victim", ["/bin/sleep", "60"]))
        wait_for(lambda: backend.running() == 1, 30)
        job = read_record(backend.paths.job(backend._jobs["victim#0"].stem))
        assert job is not None
        slurm.run("scancel", str(job["job"]))
        event = exited(collect(backend, 1, 60)["victim#0"])
    assert event.exit_code != 0 and event.signal == signal.SIGTERM
    assert event.reason is not None and "stopped by Slurm" in event.reason


def test_a_job_gone_without_an_exit_record_fails(slurm: Cluster, tmp_path: Path) -> None:
    """The wrapper killed with -9 writes no exit record; squeue soon forgets the job (MinJobAge):
    after the grace the attempt is failed -- "gone" is never read as "succeeded"."""
    with slurm_backend(slurm, tmp_path / "state", squeue_interval=1.0, vanish_grace=2.0) as backend:
        backend.submit(make_launch(tmp_path, "lost", ["/bin/sh", "-c", "echo $$ > lost.pid; exec sleep 60"]))
        wait_for(lambda: (tmp_path / "lost.pid").exists() and (tmp_path / "lost.pid").read_text().strip(), 30)
        stem = backend._jobs["lost#0"].stem
        wait_for(lambda: backend.running() == 1, 30)
        start = read_record(backend.paths.seen(stem))
        assert start is not None
        os.kill(int(start["pid"]), signal.SIGKILL)
        os.killpg(int((tmp_path / "lost.pid").read_text()), signal.SIGKILL)
        event = exited(collect(backend, 1, 60)["lost#0"])
    assert event.exit_code is None and event.signal == signal.SIGKILL
    assert event.reason is not None and "without an exit record" in event.reason


def test_an_impossible_request_is_held_with_sbatch_s_message(slurm: Cluster, tmp_path: Path) -> None:
    with slurm_backend(slurm, tmp_path / "state") as backend:
        ad = 'pegasus_queue = "no-such-partition"'
        backend.submit(make_launch(tmp_path, "nowhere", ["/bin/true"], ad=ad))
        event = collect(backend, 1, 30)["nowhere#0"]
    assert isinstance(event, Held) and "partition" in event.reason.lower()


def test_a_qos_refusal_lowers_the_cap_and_requeues(slurm: Cluster, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    refuse = tmp_path / "refuse"
    refuse.write_text("")
    fake = bin_dir / "sbatch"
    fake.write_text(f"#!/bin/sh\nif [ -e {refuse} ]; then rm {refuse}; echo 'sbatch: error: Batch job "
                    "submission failed: Job violates accounting/QOS policy' >&2; exit 1; fi\n"
                    "exec /usr/bin/sbatch \"$@\"\n")
    fake.chmod(0o755)
    env = {**slurm.env, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    backend = SlurmBackend(str(tmp_path / "state"), max_queued=10, env=env, squeue_interval=2.0)
    with backend:
        backend.submit(make_launch(tmp_path, "a", ["/bin/true"]))
        assert backend.cap == 1 and backend.idle() == 1  # refused: back in the queue, the cap lowered
        time.sleep(0.6)  # the back-off
        events = collect(backend, 1, 60)
    assert isinstance(events["a#0"], Exited) and events["a#0"].exit_code == 0


def test_a_decaf_cluster_runs_srun_multi_prog_inside_one_allocation(slurm: Cluster, tmp_path: Path) -> None:
    """The optimization chapter's Decaf script hands a multi-prog configuration to ``srun``: one
    allocation of 2 tasks, each rank running its own line."""
    (tmp_path / "ranks.conf").write_text("0 /bin/sh -c 'echo rank0 $SLURM_JOB_ID'\n"
                                         "1 /bin/sh -c 'echo rank1 $SLURM_JOB_ID'\n")
    env = {"PATH": os.environ["PATH"]}
    argv = ["/bin/sh", "-c", "srun --multi-prog ranks.conf"]
    ad = 'BatchExtraSubmitArgs = "--ntasks=2"\nRequestCpus = 1'
    with slurm_backend(slurm, tmp_path / "state") as backend:
        backend.submit(make_launch(tmp_path, "decaf", argv, env=env, ad=ad))
        event = exited(collect(backend, 1, 60)["decaf#0"])
    assert event.exit_code == 0, (tmp_path / "decaf.err").read_text()
    lines = sorted((tmp_path / "decaf.out").read_text().split("\n"))[1:]
    job = read_record(backend.paths.job(stem_of(backend.run_id, "decaf#0")))
    assert job is not None
    assert lines == [f"rank0 {job['job']}", f"rank1 {job['job']}"]  # both ranks in the job's allocation


def test_a_single_task_job_gets_exactly_its_environment(slurm: Cluster, tmp_path: Path) -> None:
    with slurm_backend(slurm, tmp_path / "state") as backend:
        backend.submit(make_launch(tmp_path, "env", ["/usr/bin/env"], env={"ONLY": "1"}))
        collect(backend, 1, 60)
    assert (tmp_path / "env.out").read_text() == "ONLY=1\n"


def test_periodic_hold_then_release_runs_the_job_again(slurm: Cluster, tmp_path: Path) -> None:
    """Held by its policy in the first run, released at once, the job runs again and NumJobStarts
    counts on (so the hold does not fire a second time)."""
    ad = "PeriodicHold = NumJobStarts == 1 && JobStatus == 2\nPeriodicRelease = JobStatus == 5"
    argv = ["/bin/sh", "-c", "if [ -e once ]; then exit 0; fi; touch once; exec sleep 60"]
    with slurm_backend(slurm, tmp_path / "state", config={"PERIODIC_EXPR_INTERVAL": "0.2"}) as backend:
        backend.submit(make_launch(tmp_path, "held", argv, ad=ad))
        kinds: list[str] = []
        deadline = time.monotonic() + 90
        while not kinds or kinds[-1] != "Exited":
            assert time.monotonic() < deadline, kinds
            kinds += [type(e).__name__ for e in backend.wait(1.0)]
    assert kinds == ["Suspended", "Released", "Exited"]


def test_adopt_finds_a_job_by_name_and_cancels_the_run_s_strays(slurm: Cluster, tmp_path: Path) -> None:
    """A job submitted just before the engine died, its id never written: found by its name."""
    def launch(node: str) -> Launch:
        made = make_launch(tmp_path, node, ["/bin/sh", "-c", "sleep 2; echo done"])
        return replace(made, env={**made.env, "SHEAF_ATTEMPT": f"RUN/{node}/0"})

    dead = slurm_backend(slurm, tmp_path / "state")  # the killed engine's backend: never closed
    dead.submit(launch("kept"))
    dead.submit(launch("stray"))
    stray = dead._jobs["stray#0"].job
    os.unlink(dead.paths.job(stem_of("RUN", "kept#0")))
    with slurm_backend(slurm, tmp_path / "state") as backend:
        assert backend.adopt("RUN", [("kept", 0), ("never", 0)]) == {"kept#0"}
        assert backend.wait(3.0) == []  # not reported before the engine submits the key again
        backend.submit(launch("kept"))
        event = exited(collect(backend, 1, 60)["kept#0"])
    assert event.exit_code == 0 and (tmp_path / "kept.out").read_text() == "done\n"
    assert not [row for row in slurm.queue() if row.startswith(f"{stray} ") and "RUNNING" in row]


def test_a_key_cancelled_while_queued_and_submitted_again_runs_once(slurm: Cluster, tmp_path: Path) -> None:
    """The new launch runs, once -- not the cancelled one still lying in the queue."""
    with slurm_backend(slurm, tmp_path / "state", slots=1) as backend:
        backend.submit(make_launch(tmp_path, "first", ["/bin/sleep", "1"]))
        backend.submit(make_launch(tmp_path, "again", ["/bin/sh", "-c", "echo old >> again.log"]))
        backend.cancel("again#0")  # still in the backend's queue (the cap is 1)
        backend.submit(make_launch(tmp_path, "again", ["/bin/sh", "-c", "echo ran >> again.log"]))
        events = collect(backend, 2, 60)
        assert backend.wait(3.0) == []
    assert sorted(events) == ["again#0", "first#0"]
    assert backend.submitted_total == 2
    assert (tmp_path / "again.log").read_text() == "ran\n"


def test_an_exit_record_wakes_the_backend_before_its_poll_interval(slurm: Cluster, tmp_path: Path) -> None:
    """A record renamed into the inbox ends ``wait`` at once (inotify); the poll interval, here far
    longer than the job, is only the fallback for records written by other hosts."""
    with slurm_backend(slurm, tmp_path / "state", poll_interval=60.0) as backend:
        backend.submit(make_launch(tmp_path, "quick", ["/bin/true"]))
        start = time.monotonic()
        events: list[Event] = []
        while not any(isinstance(event, Exited) for event in events):
            events += backend.wait(90.0)  # sleeps up to the poll interval between reads of the inbox
        assert time.monotonic() - start < 30.0  # the job takes 1-2 s; a poll would have taken 60 s


def test_the_job_wrapper_starts_without_heavy_modules() -> None:
    """The wrapper's imports are paid by every Slurm job (wall time of its slot): none of typing,
    dataclasses, inspect, threading, queue or ctypes (25 ms of CPU a job together), nor the ClassAd
    library or the engine, for a plain job."""
    import subprocess
    import sys

    code = ("import sys; from sheaf.backends.slurm._job import main; "
            "print(' '.join(sorted(m for m in sys.modules if m in {'typing', 'dataclasses', 'inspect', "
            "'threading', 'queue', 'ctypes'} or m.startswith(('sheaf.classad', 'sheaf.engine')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []
