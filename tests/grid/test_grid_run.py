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
    _check_group_logs_and_views(tmp_path, run, groups)


def _check_group_logs_and_views(root: Path, run: Path, groups: dict[str, list[str]]) -> None:
    """Each group DAG wrote its own jobstate.log (the outer run's holds its group jobs only), and
    ``sheaf status``/``sheaf statistics`` on the outer run see every group's nodes."""
    outer = {line.split()[1] for line in (run / "jobstate.log").read_text().splitlines()}
    assert outer - {"INTERNAL"} == set(groups)
    for label, members in groups.items():
        lines = (run / f"sleepy.{label}.gdag.jobstate.log").read_text().splitlines()
        assert {line.split()[1] for line in lines} - {"INTERNAL"} == set(members)
    status = sheaf(root, "status", str(run), "-l").stdout
    assert all(label in status for label in groups)
    # the headline, the outer DAG's row and one row per group (its latest rescue after a back-out)
    assert status.count("succeeded") == 2 + len(groups), status
    statistics = sheaf(root, "statistics", str(run)).stdout
    tasks = next(line.split() for line in statistics.splitlines() if line.startswith("Tasks "))
    assert tasks[1:5] == ["12", "0", "0", "12"], statistics  # succeeded, failed, incomplete, total
    subs = next(line.split() for line in statistics.splitlines() if line.startswith("Sub-Workflows"))
    assert subs[1:5] == [str(len(groups)), "0", "0", str(len(groups))], statistics


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
    assert "Cannot expand $$ expression (NoSuchAttr)" in _log(run)
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
# a chain step: needs the previous step's output ({where}), writes its own in its site's working area
work="{work}/$SheafSite"
mkdir -p "$work"
n=${{1#ID}}
if [ "$n" != "0000" ]; then
    prev=$(printf 'ID%04d' "$(expr "$n" - 1)")
    {find} || exit 3
fi
sleep 0.1
echo "$1" > "$work/$1.out"
echo "$1 $SheafSite" >> "{log}"
"""


def chain_task(root: Path, shared: bool) -> str:
    """The chain step's script: its input found in its own site's working area only, or (``shared``)
    in any site's, as the local pools of one machine read each other's scratch."""
    if shared:
        where, find = "in any site's working area", f'ls {root / "work"}/*/"$prev.out" > /dev/null 2>&1'
    else:
        where, find = "in this site's working area", '[ -f "$work/$prev.out" ]'
    return CHAIN_TASK.format(where=where, find=find, work=root / "work", log=root / "ran.log")


def test_intermediates_on_a_site_that_dies_are_recomputed_on_the_next(tmp_path: Path) -> None:
    """A chain runs two steps (after its create-dir job) at a site that then stops answering; on
    the next site the steps whose outputs were left behind run again, none twice at one site."""
    sites = ("sites:\n  aflaky: {max_queued: 4, backend: local, slots: 1, dies_after: 3}\n"
             "  good: {max_queued: 4, backend: local, slots: 1}\n")
    run = prepare(tmp_path, sites, tasks=4, size=4, chain=True)
    (tmp_path / "task.sh").write_text(chain_task(tmp_path, shared=False))
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


def _chain_at(tmp_path: Path, sites: str, tasks: int) -> tuple[Path, list[str]]:
    """Run a chain of ``tasks`` steps as one group over ``sites``; the run and ran.log's lines."""
    run = prepare(tmp_path, sites, tasks=tasks, size=tasks, chain=True)
    (tmp_path / "task.sh").write_text(chain_task(tmp_path, shared=True))
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "2",
                   check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return run, (tmp_path / "ran.log").read_text().split("\n")[:-1]


def test_a_group_backed_out_of_a_stalled_site_reruns_no_finished_node(tmp_path: Path) -> None:
    """A site that answers but stops starting jobs keeps its storage: on the next site the steps it
    finished stay done (their outputs are read from its scratch), none runs again."""
    sites = ("sites:\n  astall: {max_queued: 5, backend: local, slots: 1, stalls_after: 3}\n"
             "  good: {max_queued: 5, backend: local, slots: 1}\n")
    run, lines = _chain_at(tmp_path, sites, 5)
    assert lines == ["ID0000 astall", "ID0001 astall", "ID0002 good", "ID0003 good", "ID0004 good"]
    log = _log(run)
    assert "backed out of astall-Site for group_0001: no progress there" in log
    assert "is dead" not in log and "restarts from sleepy.group_0001.gdag.r1 (3 nodes kept done)" in log
    assert sorted(p.name for p in (tmp_path / "work").rglob("*.out")) == [f"ID{i:04d}.out" for i in range(5)]


def test_a_group_backed_out_of_a_failing_site_recomputes_only_what_it_left_there(tmp_path: Path) -> None:
    """Stalled at one site, then failing at a second: the steps done at the stalled site stay done,
    the ones done at the failing (dead) site that the rest needs run again, and nothing else."""
    sites = ("sites:\n  astall: {max_queued: 6, backend: local, slots: 1, stalls_after: 3}\n"
             "  bfail: {max_queued: 6, backend: local, slots: 1, fails_after: 2}\n"
             "  good: {max_queued: 6, backend: local, slots: 1}\n")
    run, lines = _chain_at(tmp_path, sites, 6)
    assert lines == ["ID0000 astall", "ID0001 astall", "ID0002 bfail", "ID0003 bfail",
                     "ID0002 good", "ID0003 good", "ID0004 good", "ID0005 good"]
    log = _log(run)
    assert "backed out of bfail-Site for group_0001: its group DAG failed there" in log
    assert "site bfail-Site is dead" in log and "site astall-Site is dead" not in log
    assert ("restarts from sleepy.group_0001.gdag.r2 (3 nodes kept done; 2 done nodes run again "
            "(outputs lost on a dead site): task_ID0002 task_ID0003)") in log
    assert (tmp_path / "work" / "good" / "ID0005.out").exists()  # the chain's end, delivered


def test_a_group_that_stalls_at_its_last_allowed_site_fails_instead_of_hanging(tmp_path: Path) -> None:
    """Backed out for idleness of as many sites as the policy allows (4), the group fails: its
    ``Exited`` event reaches the engine (it was dropped, and the outer run waited forever)."""
    sites = "sites:\n" + "".join(f"  s{i}: {{max_queued: 3, backend: stall}}\n" for i in range(4)) \
        + "  s9: {max_queued: 3, backend: stall}\n"
    run = prepare(tmp_path, sites, tasks=2, size=2)
    result = sheaf(tmp_path, "run", str(run), "--negotiation-interval", "0.1", "--backout-idle", "0.5",
                   check=False, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "group group_0001 failed at 4 sites; giving up" in _log(run)
