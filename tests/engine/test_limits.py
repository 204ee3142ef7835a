"""Concurrency limits across runs: a real SQLite store shared by real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sheaf.backends._limits import MachineLimits
from sheaf.backends._slotconfig import parse_config
from sheaf.classad import parse_limits
from sheaf.errors import FormatError

CONFIG = (
    "PEGASUS_TRANSFER.STAGEIN_LIMIT = 2\n"
    "CONCURRENCY_LIMIT_DEFAULT_PEGASUS_AUXILLARY = 3\n"
    "CONCURRENCY_LIMIT_DEFAULT = 10\n"
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "limits.sqlite"


def test_parse_limits_names_weights_and_case() -> None:
    assert parse_limits("a, B:2  c:0.5,a") == (("a", 1.0), ("b", 2.0), ("c", 0.5), ("a", 1.0))
    assert parse_limits("x:bogus") == (("x", 1.0),)
    assert parse_limits("") == ()


def test_limit_lookup_order(store: Path) -> None:
    limits = MachineLimits(parse_config(CONFIG), path=store)
    assert limits.limit("pegasus_transfer.stagein") == 2
    assert limits.limit("PEGASUS_TRANSFER.STAGEOUT") == 10
    assert limits.limit("pegasus_auxillary.cleanup") == 3
    assert limits.limit("other") == 10
    assert MachineLimits({}, path=store).limit("other") == 2308032
    limits.close()


def test_grants_are_all_or_nothing_with_weights(store: Path) -> None:
    limits = MachineLimits(parse_config(CONFIG), path=store)
    assert limits.try_acquire("j1", "pegasus_auxillary.cleanup:2")
    assert not limits.try_acquire("j2", "pegasus_transfer.stagein, pegasus_auxillary.cleanup:2")
    assert limits.usage() == {"pegasus_auxillary.cleanup": 2.0}
    assert limits.try_acquire("j3", "pegasus_transfer.stagein:2, pegasus_auxillary.cleanup")
    limits.release("j1")
    assert limits.usage() == {"pegasus_auxillary.cleanup": 1.0, "pegasus_transfer.stagein": 2.0}
    stats = limits.statistics()
    assert stats["granted"] == 2 and stats["refused"] == 1
    limits.close()
    assert MachineLimits(parse_config(CONFIG), path=store).usage() == {}


def test_a_repeated_name_is_checked_per_token_and_held_as_the_sum(store: Path) -> None:
    limits = MachineLimits(parse_config("A_LIMIT = 1\n"), path=store)
    assert limits.try_acquire("j1", "a, a")  # each token: 0 + 1 <= 1, as the negotiator checks
    assert limits.usage() == {"a": 2.0}
    assert not limits.try_acquire("j2", "a")
    limits.close()


def test_a_bad_limit_value_is_a_located_format_error(store: Path) -> None:
    with pytest.raises(FormatError) as caught:
        MachineLimits(parse_config("A = 1\nFOO_LIMIT = lots\n", "pool.conf"), path=store)
    assert (caught.value.path, caught.value.line) == ("pool.conf", 2)


def test_state_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEAF_STATE_DIR", str(tmp_path / "state"))
    limits = MachineLimits({})
    assert limits.path == tmp_path / "state" / "limits.sqlite" and limits.path.exists()
    limits.close()


HOLDER = textwrap.dedent("""
    import os, sys, time
    from sheaf.backends._limits import MachineLimits
    store, log, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    limits = MachineLimits({"SHARED_LIMIT": "3"}, path=store)
    held, n, end = [], 0, time.monotonic() + seconds
    with open(log, "a") as out:
        while time.monotonic() < end:
            key = f"job{n}"
            if limits.try_acquire(key, "shared"):
                n += 1
                held.append((key, time.monotonic()))
                out.write(f"start {os.getpid()} {key} {time.monotonic()!r}\\n"); out.flush()
            if held and (len(held) >= 3 or time.monotonic() - held[0][1] > 0.02):
                key, _ = held.pop(0)
                out.write(f"end {os.getpid()} {key} {time.monotonic()!r}\\n"); out.flush()
                limits.release(key)
            time.sleep(0.001)
    for key, _ in held:
        out = open(log, "a"); out.write(f"end {os.getpid()} {key} {time.monotonic()!r}\\n"); out.close()
        limits.release(key)
    print(n)
""")


def test_two_concurrent_runs_never_exceed_a_limit_together(store: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    workers = [subprocess.Popen([sys.executable, "-c", HOLDER, str(store), str(log), "1.5"],
                                stdout=subprocess.PIPE, text=True) for _ in range(2)]
    grants = [int(w.communicate(timeout=60)[0]) for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert all(g > 10 for g in grants), grants  # both runs really got capacity
    events = []
    for line in log.read_text().splitlines():
        kind, _pid, _key, when = line.split()
        events.append((float(when), 0 if kind == "end" else 1))
    level = peak = 0
    for _when, start in sorted(events):
        level += 1 if start else -1
        peak = max(peak, level)
    assert peak == 3  # the limit was reached, and never exceeded across the two processes


KILLED = textwrap.dedent("""
    import sys, time
    from sheaf.backends._limits import MachineLimits
    limits = MachineLimits({"SHARED_LIMIT": "1"}, path=sys.argv[1])
    assert limits.try_acquire("only", "shared")
    print("held", flush=True)
    time.sleep(60)
""")


def test_holdings_of_a_killed_run_are_reclaimed(store: Path) -> None:
    victim = subprocess.Popen([sys.executable, "-c", KILLED, str(store)], stdout=subprocess.PIPE, text=True)
    assert victim.stdout is not None and victim.stdout.readline().strip() == "held"
    clock = [0.0]
    limits = MachineLimits({"SHARED_LIMIT": "1"}, path=store, clock=lambda: clock[0])
    assert limits.usage() == {"shared": 1.0}
    assert not limits.try_acquire("mine", "shared")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert not limits.try_acquire("mine", "shared")  # reclaim runs at most once a second...
    clock[0] += 1.5
    assert limits.try_acquire("mine", "shared")  # ...and then frees the dead run's share
    limits.close()


OPENER = textwrap.dedent("""
    import sys, time
    from sheaf.backends._limits import MachineLimits
    start = float(sys.argv[2])
    while time.time() < start:
        pass
    MachineLimits(path=sys.argv[1])
    print("ok")
""")


def test_runs_starting_together_on_a_fresh_store_all_open_it(tmp_path: Path) -> None:
    # Switching a new database to WAL answers "database is locked" without waiting when another
    # process switches it at the same moment; every opener must still get the store.
    for round_ in range(3):
        path = tmp_path / f"limits{round_}.sqlite"
        start = time.time() + 0.6
        openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), repr(start)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for _ in range(4)]
        results = [o.communicate(timeout=60) for o in openers]
        assert [out for out, _ in results] == ["ok\n"] * 4, [err for _, err in results]
