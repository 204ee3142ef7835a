"""The recipe end to end with real processes: group DAGs matched to sites, run there, backed out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.grid._recipe import SHEAF, env, prepare, ran, sheaf, sites_used

SITES = """\
sites:
  one: {max_queued: 3, backend: local, slots: 1}
  two: {max_queued: 6, backend: local, slots: 2}
  stuck: {max_queued: 3, backend: stall}
  broken: {max_queued: 3, backend: fail}
"""


def _log(run: Path) -> str:
    return (run / "grid" / "negotiator.log").read_text()


def test_every_group_finishes_and_backs_out_of_stalling_and_failing_sites(tmp_path: Path) -> None:
    run = prepare(tmp_path, SITES, tasks=12, size=3)
    groups = json.loads((run / "grid" / "groups.json").read_text())["groups"]
    assert len(groups) == 4
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.2", "--backout-idle", "2",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    log = _log(run)
    # round-robin among equal ranks puts one group on each site first
    assert "matched group_0001 to" in log and "backed out of stuck-Site" in log
    assert "backed out of broken-Site" in log and "its group DAG failed there" in log
    counts = ran(tmp_path)
    assert sorted(counts) == [f"ID{i:04d}" for i in range(12)] and set(counts.values()) == {1}
    assert sites_used(tmp_path) <= {"one", "two"}  # nodes ran where their group was matched
    listing = sheaf(tmp_path, "ads").stdout
    assert "one-Site" in listing and "0/1" in listing  # the monitor's last recount: nothing queued


def test_a_group_resumes_from_its_journal_on_the_next_site(tmp_path: Path) -> None:
    """A chain whose group is stopped at a site midway: the next site runs only what is not done."""
    sites = ("sites:\n  one: {max_queued: 6, backend: local, slots: 1}\n"
             "  two: {max_queued: 6, backend: local, slots: 1}\n")
    run = prepare(tmp_path, sites, tasks=6, size=6, seconds=0.4, chain=True)
    proc = subprocess.Popen([SHEAF, "run", str(run), "--negotiation-interval", "0.2"], cwd=tmp_path,
                            env=env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while sum(ran(tmp_path).values()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the engine and the group DAG job, mid-chain
    proc.wait()
    before = set(ran(tmp_path))
    assert 2 <= len(before) < 6
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.2", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    counts = ran(tmp_path)
    assert sorted(counts) == [f"ID{i:04d}" for i in range(6)]
    # finished nodes did not run again; with one slot on a chain, only the task in flight at the kill
    # (its marker written, its exit not yet journaled) may run a second time
    again = [task for task in before if counts[task] > 1]
    assert again in ([], [max(before)]), counts


def test_kill_9_of_the_engine_during_negotiation(tmp_path: Path) -> None:
    run = prepare(tmp_path, SITES.replace("stuck", "slow"), tasks=12, size=3, seconds=0.3)
    proc = subprocess.Popen([SHEAF, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "2"],
                            cwd=tmp_path, env=env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = run / "grid" / "negotiator.log"
    deadline = time.monotonic() + 60
    while (not log.exists() or "matched" not in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.kill()  # the engine alone: its group DAG jobs are left running
    proc.wait()
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "2",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    counts = ran(tmp_path)
    assert sorted(counts) == [f"ID{i:04d}" for i in range(12)]
    # a node in flight at the kill may run again; nothing runs twice beside itself
    assert sum(counts.values()) <= 12 + 4
    ps = subprocess.run(["pgrep", "-f", str(run)], capture_output=True, text=True, check=False)
    assert ps.stdout.strip() == ""  # no group DAG job of the dead engine is left behind


def test_an_unexpandable_reference_holds_the_group(tmp_path: Path) -> None:
    sites = "sites:\n  one: {max_queued: 3, backend: local, slots: 1}\n"
    run = prepare(tmp_path, sites, tasks=3, size=3)
    sub = run / "grid" / "group_0001.sub"
    sub.write_text(sub.read_text().replace("queue\n", "arguments = \"-c pass $$(NoSuchAttr)\"\nqueue\n"))
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", check=False)
    assert result.returncode == 1
    assert "Cannot expand $$(NoSuchAttr)" in _log(run)
    assert not ran(tmp_path)


def test_group_size_one_binds_each_job_with_the_gatekeeper(tmp_path: Path) -> None:
    sites = "sites:\n  one: {max_queued: 2, backend: local, slots: 2, gatekeeper: gk.example.org/jm}\n"
    run = prepare(tmp_path, sites, tasks=3, size=1)
    assert '+SiteGatekeeper = "$$(GatekeeperURL)"' in (run / "grid" / "group_0001.sub").read_text()
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(ran(tmp_path)) == ["ID0000", "ID0001", "ID0002"]
    assert "gatekeeper gk.example.org/jm" in _log(run)  # $$(GatekeeperURL) expanded at the match


CHAIN_TASK = """#!/bin/sh
# a chain step: needs the previous step's output in this site's working area, writes its own there
work="{work}/$SheafSite"
mkdir -p "$work"
n=${{1#ID}}
if [ "$n" != "0000" ]; then
    prev=$(printf 'ID%04d' "$(expr "$n" - 1)")
    [ -f "$work/$prev.out" ] || exit 3
fi
sleep 0.1
echo "$1" > "$work/$1.out"
echo "$1 $SheafSite" >> "{log}"
"""


def test_intermediates_on_a_site_that_dies_are_recomputed_on_the_next(tmp_path: Path) -> None:
    """A chain runs two steps (after its create-dir job) at a site that then stops answering; on
    the next site the steps whose outputs were left behind run again, none twice at one site."""
    sites = ("sites:\n  aflaky: {max_queued: 4, backend: local, slots: 1, dies_after: 3}\n"
             "  good: {max_queued: 4, backend: local, slots: 1}\n")
    run = prepare(tmp_path, sites, tasks=4, size=4, chain=True)
    (tmp_path / "task.sh").write_text(CHAIN_TASK.format(work=tmp_path / "work", log=tmp_path / "ran.log"))
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "2",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    log = _log(run)
    assert "matched group_0001 to aflaky-Site" in log and "backed out of aflaky-Site" in log
    assert "restarts from sleepy.group_0001.gdag.r1" in log
    lines = (tmp_path / "ran.log").read_text().split("\n")
    assert [line for line in lines if line.endswith("aflaky")] == ["ID0000 aflaky", "ID0001 aflaky"]
    assert [line for line in lines if line.endswith("good")] == [f"ID{i:04d} good" for i in range(4)]


def test_a_group_with_no_site_left_fails_instead_of_waiting(tmp_path: Path) -> None:
    run = prepare(tmp_path, "sites:\n  broken: {max_queued: 3, backend: fail}\n", tasks=3, size=3)
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", check=False, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "backed out of every site" in _log(run)
