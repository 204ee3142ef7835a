"""What only the local backend does: memory enforcement, CPU affinity, partitionable slots, the local
universe, never-runnable jobs, and concurrency limits shared by concurrent runs -- all for real."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sheaf.backends import MachineLimits, Pool
from sheaf.backends.local import LocalBackend, _spawner
from sheaf.engine import Held, Launch

from .contract import collect, exited, make_launch, unread_fifo

RETRY_MEMORY = "ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"
# Touches ~1.5 GB (every page written), then holds it a moment, as a memory-hungry step would.
HUNGRY = "import time; block = b'x' * (1536 * 2**20); time.sleep(1.0); print(len(block) >> 20)"


def backend_for(tmp_path: Path, config: str) -> LocalBackend:
    pool = Pool(config)
    return LocalBackend(pool, limits=MachineLimits(pool.config, path=tmp_path / "limits.sqlite"))


def test_seed_recipe_memory_is_enforced_then_raised_on_retry(tmp_path: Path) -> None:
    with backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 8192\n") as local:
        argv = [sys.executable, "-c", HUNGRY]
        ad = f"RequestMemory = {RETRY_MEMORY}"
        local.submit(make_launch(tmp_path, "hungry", argv, attempt=0, ad=ad, env=dict(os.environ)))
        first = exited(collect(local, 1)["hungry#0"])
        assert (first.exit_code, first.signal) == (None, 9)
        assert first.reason is not None and "exceeded request 1024 MB" in first.reason
        assert (tmp_path / "hungry.out").read_text() == ""  # stopped before it could finish
        local.submit(make_launch(tmp_path, "hungry", argv, attempt=1, ad=ad, env=dict(os.environ)))
        retry = exited(collect(local, 1)["hungry#1"])
        assert (retry.exit_code, retry.signal, retry.reason) == (0, None, None)
        assert (tmp_path / "hungry.out").read_text() == "1536\n"


def test_memory_of_the_whole_process_tree_counts(tmp_path: Path) -> None:
    with backend_for(tmp_path, "NUM_CPUS = 1\nMEMORY = 4096\n") as local:
        child = "import time; block = b'x' * (300 * 2**20); time.sleep(3)"
        script = (f"import subprocess, sys; [subprocess.Popen([sys.executable, '-c', {child!r}]) "
                  "for _ in range(2)]; import time; time.sleep(5)")
        local.submit(make_launch(tmp_path, "tree", [sys.executable, "-c", script],
                                 ad="RequestMemory = 400", env=dict(os.environ)))
        event = exited(collect(local, 1)["tree#0"])
        assert event.signal == 9 and event.reason and "exceeded request 400 MB" in event.reason


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_cpu_affinity_pins_the_job_and_its_children(tmp_path: Path) -> None:
    first, second = sorted(os.sched_getaffinity(0))[:2]
    config = (f"NUM_CPUS = 2\nENFORCE_CPU_AFFINITY = True\n"
              f"SLOT1_CPU_AFFINITY = {second}\nSLOT2_CPU_AFFINITY = {first}\n")
    with backend_for(tmp_path, config) as local:
        show = ["/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"]  # grep is sh's child
        local.submit(make_launch(tmp_path, "one", show, ad="Requirements = TARGET.SlotID == 1"))
        local.submit(make_launch(tmp_path, "two", show, ad="Requirements = TARGET.SlotID == 2"))
        collect(local, 2)
    assert (tmp_path / "one.out").read_text().split()[-1] == str(second)
    assert (tmp_path / "two.out").read_text().split()[-1] == str(first)
    assert os.sched_getaffinity(0) >= {first, second}  # the engine's own thread is restored


def test_without_enforcement_jobs_are_not_pinned(tmp_path: Path) -> None:
    with backend_for(tmp_path, "NUM_CPUS = 1\n") as local:
        argv = ["/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
        local.submit(make_launch(tmp_path, "free", argv))
        collect(local, 1)
    mine = subprocess.run(["grep", "Cpus_allowed_list", "/proc/self/status"], capture_output=True, text=True,
                          check=True)
    assert (tmp_path / "free.out").read_text().split()[-1] == mine.stdout.split()[-1]


def test_partitionable_slot_runs_dynamic_slots_side_by_side(tmp_path: Path) -> None:
    config = ("NUM_CPUS = 2\nMEMORY = 2048\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
              "NUM_SLOTS_TYPE_1 = 1\n")
    with backend_for(tmp_path, config) as local:
        for name in ("a", "b", "c"):
            local.submit(make_launch(tmp_path, name, ["/bin/sleep", "0.3"], ad="RequestMemory = 1000"))
        assert (local.running(), local.idle()) == (2, 1)
        assert local.pool.statistics()["dynamic_slots"] == 2
        events = {key: exited(e) for key, e in collect(local, 3).items()}
        assert {events["a#0"].slot, events["b#0"].slot} == {"slot1_1@" + local.pool.machine.hostname,
                                                            "slot1_2@" + local.pool.machine.hostname}
        assert events["c#0"].started >= min(events["a#0"].ended, events["b#0"].ended) - 0.05
        assert local.pool.statistics()["free_memory"] == 2048


def test_a_job_too_big_for_the_machine_is_held_not_queued_forever(tmp_path: Path) -> None:
    with backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 2048\n") as local:
        local.submit(make_launch(tmp_path, "big", ["/bin/true"], ad="RequestMemory = 100000"))
        local.submit(make_launch(tmp_path, "bad", ["/bin/true"], ad="RequestMemory = \"much\""))
        events = collect(local, 2)
    assert isinstance(events["big#0"], Held) and "100000 MB" in events["big#0"].reason
    assert isinstance(events["bad#0"], Held) and "RequestMemory" in events["bad#0"].reason


def test_a_concurrency_limit_no_run_can_ever_grant_holds_the_job_at_once(tmp_path: Path) -> None:
    """A weight above the limit's maximum (``a:1e999`` is infinite) can never be granted, even with
    nothing held: the job is held with the reason, as one no slot can match, instead of waiting."""
    with backend_for(tmp_path, "NUM_CPUS = 2\nSMALL_LIMIT = 3\n") as local:
        local.submit(make_launch(tmp_path, "inf", ["/bin/true"], ad='ConcurrencyLimits = "a:1e999"'))
        local.submit(make_launch(tmp_path, "four", ["/bin/true"], ad='ConcurrencyLimits = "small:4"'))
        local.submit(make_launch(tmp_path, "three", ["/bin/true"], ad='ConcurrencyLimits = "small:3"'))
        events = collect(local, 3)
    assert isinstance(events["inf#0"], Held), events
    assert "concurrency limit a asks for inf, more than its limit 2308032" in events["inf#0"].reason
    assert isinstance(events["four#0"], Held) and "limit small asks for 4" in events["four#0"].reason
    assert exited(events["three#0"]).exit_code == 0


def test_local_universe_runs_beside_the_slots_under_start_local_universe(tmp_path: Path) -> None:
    config = "NUM_CPUS = 1\nSTART_LOCAL_UNIVERSE = TotalLocalJobsRunning < 2\nNEVER_GRANTED_LIMIT = 0\n"
    with backend_for(tmp_path, config) as local:
        local.submit(make_launch(tmp_path, "vanilla", ["/bin/sleep", "0.3"]))
        for name in ("l1", "l2", "l3"):
            local.submit(make_launch(tmp_path, name, ["/bin/sleep", "0.3"],
                                     ad='JobUniverse = 12\nConcurrencyLimits = "never_granted"'))
        assert (local.running(), local.idle()) == (3, 1)
        events = collect(local, 4)
    assert exited(events["l1#0"]).slot == "local"
    assert all(exited(e).exit_code == 0 for e in events.values())


HOLDER = textwrap.dedent("""
    import os, sys, time
    from sheaf.backends.local import LocalBackend
    from sheaf.classad import ClassAd
    from sheaf.backends import MachineLimits, Pool
    from sheaf.engine import Launch
    store, log, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    pool = Pool("NUM_CPUS = 4\\nMEMORY = 1024\\nPEGASUS_TRANSFER.STAGEIN_LIMIT = 2\\n")
    local = LocalBackend(pool, limits=MachineLimits(pool.config, path=store))
    ad = ClassAd.parse_old('ConcurrencyLimits = "pegasus_transfer.stagein"\\nRequestMemory = 16')
    script = f"echo start $(date +%s.%N) >> {log}; sleep 0.15; echo end $(date +%s.%N) >> {log}"
    for i in range(6):
        local.submit(Launch(f"{tag}{i}#0", f"{tag}{i}", 0, ("/bin/sh", "-c", script),
                            {"PATH": "/usr/bin:/bin"}, os.getcwd(), os.devnull, os.devnull, ad))
    done = 0
    while done < 6:
        done += len(local.wait(5))
    local.close()
""")


def test_two_concurrent_runs_share_a_concurrency_limit(tmp_path: Path) -> None:
    store, log = tmp_path / "limits.sqlite", tmp_path / "spans.log"
    runs = [subprocess.Popen([sys.executable, "-c", HOLDER, str(store), str(log), tag], cwd=tmp_path)
            for tag in ("a", "b")]
    for run in runs:
        assert run.wait(timeout=60) == 0
    events = []
    for line in log.read_text().splitlines():
        kind, when = line.split()
        events.append((float(when), 0 if kind == "end" else 1))
    assert len(events) == 24
    level = peak = 0
    for _, start in sorted(events):
        level += 1 if start else -1
        peak = max(peak, level)
    assert peak == 2  # 8 slots between the two runs, but the limit of 2 held across both


def test_statistics_and_close_release_everything(tmp_path: Path) -> None:
    local = backend_for(tmp_path, "NUM_CPUS = 2\nBIG_LIMIT = 1\n")
    local.submit(make_launch(tmp_path, "x", ["/bin/sleep", "30"], ad='ConcurrencyLimits = "big"'))
    local.submit(make_launch(tmp_path, "y", ["/bin/sleep", "30"], ad='ConcurrencyLimits = "big"'))
    stats = local.statistics()
    assert (stats["running"], stats["idle"]) == (1, 1)
    local.close()
    again = MachineLimits({}, path=tmp_path / "limits.sqlite")
    assert again.usage() == {}
    assert local.pool.statistics()["static_claimed"] == 0


def test_started_reports_every_start_once_with_its_start_time(tmp_path: Path) -> None:
    from sheaf._proc import start_ticks

    with backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 1024\n") as backend:
        before = time.time()
        backend.submit(make_launch(tmp_path, "long", ["/bin/sleep", "30"]))
        backend.submit(make_launch(tmp_path, "short", ["/bin/true"]))
        collect(backend, 1)  # the short one is reaped before anyone asks: reported, with no process
        started = sorted(backend.started(), key=lambda s: s.key)
        assert [s.key for s in started] == ["long#0", "short#0"]
        assert started[0].start_ticks == start_ticks(started[0].pid) and started[1].start_ticks == 0
        assert all(before <= s.time <= time.time() and s.slot for s in started)  # its EXECUTE event
        assert os.getpgid(started[0].pid) == started[0].pid  # its own process group, as killed on resume
        assert backend.started() == []


def test_a_large_engine_does_not_make_small_jobs_fail_for_memory(tmp_path: Path) -> None:
    """wait4's ru_maxrss of a posix_spawn'd child starts at the spawner's high-water mark (Linux
    keeps the pre-exec peak across execve), so a 300 MB engine must not fail a /bin/true that asked
    for 64 MB."""
    ballast = b"x" * (300 * 2**20)  # written, so resident: the engine process is now large
    with backend_for(tmp_path, "NUM_CPUS = 1\nMEMORY = 64\n") as local:
        for i in range(3):
            local.submit(make_launch(tmp_path, f"small{i}", ["/bin/sh", "-c", "exit 0"]))
        events = collect(local, 3)
    assert len(ballast) > 0
    for event in events.values():
        assert (exited(event).exit_code, exited(event).reason) == (0, None)


def test_a_short_spike_is_caught_by_polling_or_at_exit(tmp_path: Path) -> None:
    """A job that grows far past its request (and past the engine's own peak) and exits at once
    fails, whichever catches it: a poll, or its own ru_maxrss at exit."""
    spike = "import sys; block = b'x' * (1200 * 2**20); sys.exit(0)"
    with backend_for(tmp_path, "NUM_CPUS = 1\nMEMORY = 256\n") as local:
        local.submit(make_launch(tmp_path, "spike", [sys.executable, "-c", spike]))
        event = exited(collect(local, 1)["spike#0"])
    assert event.signal == 9 and event.reason is not None and "exceeded request" in event.reason


@pytest.mark.skipif(_spawner._compiled() is None,
                    reason="spawns run in the engine's thread without the _cspawn extension")
def test_a_spawn_that_blocks_does_not_block_the_engine(tmp_path: Path) -> None:
    """A child stuck before its execve (here: opening a FIFO nobody reads as its stdout) holds
    ``posix_spawn``'s caller; the backend spawns from its own thread, so ``submit`` returns at once
    and ``wait`` still reports other jobs.  (Spawned in the caller, ``submit`` hung until the reader came.)"""
    with unread_fifo(tmp_path, 8.0) as fifo, backend_for(tmp_path, "NUM_CPUS = 2\nMEMORY = 2048\n") as local:
        local.submit(make_launch(tmp_path, "first", ["/bin/sleep", "0.3"]))
        begin = time.monotonic()
        blocked = make_launch(tmp_path, "blocked", ["/bin/true"])
        local.submit(Launch(**{**{f: getattr(blocked, f) for f in blocked.__dataclass_fields__},
                               "stdout": str(fifo)}))
        assert time.monotonic() - begin < 1.0
        assert exited(collect(local, 1, timeout=5.0)["first#0"]).exit_code == 0
        assert time.monotonic() - begin < 5.0  # the blocked spawn is still waiting for its reader
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert exited(collect(local, 1)["blocked#0"]).exit_code == 0
        finally:
            os.close(reader)
