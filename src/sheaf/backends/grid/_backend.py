"""The grid backend: the outer DAG's group DAG jobs held idle until matched to a site, then run there.

A :class:`GridBackend` is what ``sheaf run`` uses for a directory ``sheaf plan --group-size`` wrote.
Every launch the engine hands it is a group DAG job (``sheaf.codegen._gridsubmit``).  It loops, every
``interval`` seconds:

1. **Monitor** (the report's matchmaker monitor): reads the site ads from the collector, recounts
   each site's ``CurMatches`` from the queue -- the group jobs matched and not finished, by the site
   named in their ``MATCH_SiteEnvironment`` -- and re-advertises every site with a higher
   ``UpdateSequenceNumber``.
2. **Negotiation**: one cycle (``classad.negotiate``) of the idle group jobs against the site ads of
   the sites not marked down; a job is never matched again to a site it backed out of (its
   Requirements get ``TARGET.Name =!= "<site>"``).  WantAdRevaluate bumps CurMatches within the cycle.
3. **Start**: each match's ``$$()`` references are expanded against the site ad (``MATCH_`` records
   kept in the job's ad); an unexpandable ``$$(X)`` holds the job (a ``Held`` event with HTCondor's
   reason).  Otherwise the group DAG job starts as a process of its own session, its environment
   holding the site's (``SiteEnvironment``), and runs the group DAG on the site's backend
   (``_group``).
4. **Back-out policy** (:class:`BackOut`): a group at a site that has shown no progress for
   ``idle`` seconds (none of our jobs running there, none finished), or whose group DAG failed
   there, is stopped
   (SIGTERM to its process group: its engine stops its jobs and keeps its journal) and put back
   for matching, with that site excluded for it; a site is marked down for every group after
   ``site_failures`` back-outs.  A site whose group DAG failed (its jobs fail), or that stopped
   answering (the group's progress says so), is also *dead*: the files left there are out of
   reach; a site that answers but starts nothing has merely stalled, its storage still readable.
   On the next site the group restarts from a rescue DAG of its own (``_rescue``): done nodes
   whose outputs were consumed or delivered, or sit on a site not dead, stay done; intermediates
   left on a dead site are recomputed, and nothing else.  A group that failed at ``max_sites`` sites fails
   (an ``Exited`` event).  After a crash of our own engine, a group resumes from its journal.

The gridmanager's throttles apply per site (``_gridmanager``): at most
``GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE`` group DAG jobs run at a site, and the group processes
share ``GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE`` node jobs there.

Every decision is written to ``grid/negotiator.log`` in the outer DAG's directory, one line each.
The group processes lead their own sessions and are reported through ``started()``, so a run resumed
after the engine was killed stops the ones the dead engine left (``sheaf.engine._orphans``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from sheaf._proc import start_ticks
from sheaf.backends.grid._collector import Collector
from sheaf.backends.grid._gridmanager import jobmanager_limit, submitted_limit
from sheaf.backends.grid._group import PROGRESS_ENV
from sheaf.backends.grid._rescue import rescue_group
from sheaf.backends.grid._sites import sequence_number, site_of_environment
from sheaf.classad import ClassAd, Match, negotiate, parse, recount_matches
from sheaf.engine import Event, Exited, Held, Launch, Started, expand_launch

__all__ = ["BackOut", "GridBackend"]

_SITES = "Is_USCMS_Site =?= True"


@dataclass(frozen=True, slots=True)
class BackOut:
    """When to back out of a site: ``idle`` seconds without progress there; a site is down for
    every group after ``site_failures`` back-outs; a group fails after failing at ``max_sites``."""

    idle: float = 30.0
    site_failures: int = 2
    max_sites: int = 4


@dataclass(slots=True)
class _Group:
    launch: Launch
    ad: ClassAd
    rejected: list[str] = field(default_factory=list)
    failures: int = 0
    rescue: bool = False  # backed out: restart from a rescue of the group DAG (``_rescue``)
    original: str | None = None  # the group DAG file the rescues are made from
    match: Match | None = None
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    wall_start: float = 0.0

    @property
    def site(self) -> str | None:
        return self.match.resource if self.match is not None else None


class GridBackend:
    """See the module docstring."""

    def __init__(self, collector: Collector | None = None, *, policy: BackOut | None = None,
                 interval: float = 1.0, clock: Callable[[], float] = time.time,
                 config: Mapping[str, str] | None = None) -> None:
        self.collector = collector if collector is not None else Collector()
        self.config = dict(config or {})
        self.jobmanagers = jobmanager_limit(self.config)
        self.policy = policy or BackOut()
        self.interval = interval
        self.clock = clock
        self.groups: dict[str, _Group] = {}
        self.down: dict[str, int] = {}  # site Name -> back-outs there
        self.dead: set[str] = set()  # the SheafSite of sites whose storage is out of reach
        self._next_cycle = 0.0
        self._new: list[Started] = []
        self._log: IO[str] | None = None

    # -- the Backend interface --------------------------------------------------------------------
    def submit(self, launch: Launch) -> None:
        self.groups[launch.key] = _Group(launch, launch.job_ad.copy())
        self.note(f"queued {launch.node} (idle until matched)", launch)

    def wait(self, timeout: float | None) -> list[Event]:
        deadline = time.monotonic() + (timeout if timeout is not None else 3600.0)
        while True:
            events = self._reap()
            events += self._police()
            if time.monotonic() >= self._next_cycle:
                self._next_cycle = time.monotonic() + self.interval
                events += self.cycle()
            if events or time.monotonic() >= deadline:
                return events
            time.sleep(max(0.0, min(0.05, deadline - time.monotonic())))

    def cancel(self, key: str) -> None:
        group = self.groups.pop(key, None)
        if group is not None and group.proc is not None:
            _stop(group.proc)

    def idle(self) -> int:
        return sum(1 for g in self.groups.values() if g.proc is None)

    def running(self) -> int:
        return sum(1 for g in self.groups.values() if g.proc is not None)

    def started(self) -> list[Started]:
        new, self._new = self._new, []
        return new

    def close(self) -> None:
        for group in self.groups.values():
            if group.proc is not None:
                _stop(group.proc)
        self.groups.clear()
        with contextlib.suppress(sqlite3.Error):
            self.monitor()  # the sites' CurMatches without this run's groups
        self.collector.close()
        if self._log is not None:
            self._log.close()

    # -- monitor and negotiation ------------------------------------------------------------------
    def monitor(self) -> list[ClassAd]:
        """Recount CurMatches from the queue and re-advertise every site (higher sequence numbers)."""
        ads = self.collector.ads(_SITES)
        queue = [g.ad for g in self.groups.values() if g.match is not None]
        fresh = recount_matches(ads, queue, key=site_of_environment)
        for ad in fresh:
            name = ad.eval("Name")
            ad["UpdateSequenceNumber"] = sequence_number(self.collector.sequence(str(name)))
        self.collector.advertise(fresh)
        return fresh

    def cycle(self) -> list[Event]:
        """One monitor pass and one negotiation cycle; starts what matched."""
        limit = self.policy.site_failures
        ads = [ad for ad in self.monitor() if self.down.get(str(ad.eval("Name")), 0) < limit]
        events = self._stranded({str(ad.eval("Name")) for ad in ads})
        idle: dict[Hashable, ClassAd] = {key: _excluding(g.ad, g.rejected)
                                         for key, g in self.groups.items() if g.proc is None}
        if not idle or not ads:
            return events
        result = negotiate(idle, ads, pre_job_rank=None, post_job_rank=None)
        for match in result.matches:
            if self._at_site(match.resource) >= self.jobmanagers:
                continue  # GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE: it waits for the next cycle
            held = self._start(self.groups[str(match.job)], match)
            if held is not None:
                events.append(held)
        return events

    def _stranded(self, sites: set[str]) -> list[Event]:
        """Fail the idle groups that backed out of every site still advertised and up: no site
        is left to try (an empty collector strands nobody: sites may yet be advertised)."""
        events: list[Event] = []
        for key, group in list(self.groups.items()):
            if group.proc is None and group.rejected and sites and sites <= set(group.rejected):
                del self.groups[key]
                self.note(f"group {group.launch.node} failed: backed out of every site", group.launch)
                events.append(Exited(key, 1, None, f"backed out of {', '.join(group.rejected)}; no site left",
                                     group.wall_start, time.time()))
        return events

    def _at_site(self, site: str) -> int:
        return sum(1 for g in self.groups.values() if g.proc is not None and g.site == site)

    def _site_limits(self, ad: ClassAd) -> dict[str, str]:
        """``SiteMaxSubmitted`` for the group process (GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE)."""
        gatekeeper = ad.eval("GatekeeperURL") if "GatekeeperURL" in ad else None
        env = ad.eval("SiteEnvironment") if "SiteEnvironment" in ad else None
        kind = dict(e.partition("=")[::2] for e in env.split(";")).get("SiteBackend", "local") \
            if isinstance(env, str) else "local"
        resource = gatekeeper if isinstance(gatekeeper, str) else str(ad.eval("Name"))
        return {"SiteMaxSubmitted": str(submitted_limit(self.config, resource, kind))}

    def _rescued(self, group: _Group, launch: Launch) -> Launch:
        """The launch running the group's next rescue DAG (its last argument names the DAG)."""
        directory, current = launch.argv[-2], group.launch.argv[-1]
        original = group.original or current
        name, keep, rerun = rescue_group(directory, current, original, self.dead)
        group.original, group.rescue = original, False
        group.launch = replace(group.launch, argv=(*group.launch.argv[:-1], name))
        lost = " ".join(sorted(rerun))
        again = f"; {len(rerun)} done nodes run again (outputs lost on a dead site): {lost}" if rerun else ""
        self.note(f"{launch.node} restarts from {name} ({len(keep)} nodes kept done{again})", launch)
        return replace(launch, argv=(*launch.argv[:-1], name))

    def _start(self, group: _Group, match: Match) -> Held | None:
        launch, reason = expand_launch(group.launch, match.resource_ad)
        if reason is not None:
            self.note(f"held {launch.node}: {reason}", launch)
            del self.groups[launch.key]
            return Held(launch.key, reason)
        launch = replace(launch, job_ad=_expanded(launch.job_ad))
        if group.rescue:
            launch = self._rescued(group, launch)
        progress = _progress_path(launch)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(progress)
        env = {**launch.env, **self._site_limits(match.resource_ad), PROGRESS_ENV: progress}
        with open(launch.stdout, "ab") as out:
            proc = subprocess.Popen(list(launch.argv), env=env, cwd=launch.cwd, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        group.ad, group.match, group.proc = launch.job_ad, match, proc
        group.started, group.wall_start = self.clock(), time.time()
        ticks = start_ticks(proc.pid)
        if ticks is not None:
            self._new.append(Started(launch.key, proc.pid, ticks))
        gatekeeper = launch.job_ad.eval("SiteGatekeeper") if "SiteGatekeeper" in launch.job_ad else None
        bound = f", gatekeeper {gatekeeper}" if isinstance(gatekeeper, str) else ""
        self.note(f"matched {launch.node} to {match.resource} (rank {match.rank:g}{bound}); "
                  f"started pid {proc.pid}", launch)
        return None

    # -- the group processes and the back-out policy -----------------------------------------------
    def _reap(self) -> list[Event]:
        events: list[Event] = []
        for key, group in list(self.groups.items()):
            if group.proc is None or (code := group.proc.poll()) is None:
                continue
            if code == 0:
                del self.groups[key]
                self.note(f"group {group.launch.node} done at {group.site}", group.launch)
                events.append(Exited(key, 0, None, None, group.wall_start, time.time()))
                continue
            failed = self._back_out(group, f"its group DAG failed there (exit {code})", dead=True)
            if failed is not None:
                events.append(failed)
        return events

    def _police(self) -> list[Event]:
        """Back out of sites idle for ``policy.idle`` seconds (see :meth:`_idle_sites`); a site that
        no longer answers is dead, one that answers but starts nothing has stalled."""
        idle = self._idle_sites()
        events: list[Event] = []
        for group in list(self.groups.values()):
            if group.proc is not None and group.site in idle:
                silent = _read_progress(_progress_path(group.launch)).get("answering", 1.0) == 0
                _stop(group.proc)
                why = "it stopped answering" if silent else f"no progress there for {self.policy.idle:g}s"
                failed = self._back_out(group, why, dead=silent)
                if failed is not None:
                    events.append(failed)
        return events

    def _idle_sites(self) -> set[str]:
        """Sites where none of our groups has a job running or has finished one for ``idle`` s.

        Judged per site, not per group: a group whose jobs wait while the site runs other groups'
        jobs is queued there, as the report wants queues slightly over-stuffed, not stalled.  A
        group counts from when its engine first reports (start-up on a loaded machine is not the
        site's fault); one that has not reported after three times ``idle`` counts as idle."""
        now, limit = self.clock(), self.policy.idle
        active: dict[str, float] = {}
        for group in self.groups.values():
            if group.proc is None or group.site is None:
                continue
            state = _read_progress(_progress_path(group.launch))
            if not state:
                last = group.started + 2 * limit  # not reporting yet: a grace of two periods
            elif state.get("running", 0.0) > 0:
                last = now
            else:
                last = max(state.get("changed", group.started), group.started)
            active[group.site] = max(active.get(group.site, -1.0), last)
        return {site for site, last in active.items() if now - last >= limit}

    def _back_out(self, group: _Group, why: str, *, dead: bool) -> Exited | None:
        site = group.site or "?"
        self.down[site] = self.down.get(site, 0) + 1
        if dead and group.match is not None:
            self._dead(group.match, group.launch)
        group.rejected.append(site)
        group.failures += 1
        group.proc, group.match, group.rescue = None, None, True
        group.ad = _unmatched(group.ad)
        if self.down[site] >= self.policy.site_failures:
            self.note(f"site {site} marked down after {self.down[site]} back-outs", group.launch)
        if group.failures >= self.policy.max_sites:
            del self.groups[group.launch.key]
            self.note(f"group {group.launch.node} failed at {group.failures} sites; giving up", group.launch)
            return Exited(group.launch.key, 1, None, f"backed out of {', '.join(group.rejected)}",
                          group.wall_start, time.time())
        self.note(f"backed out of {site} for {group.launch.node}: {why}; back for matching", group.launch)
        return None

    def _dead(self, match: Match, launch: Launch) -> None:
        """Mark the matched site dead, by the name its nodes know it by (``SheafSite``)."""
        try:
            name = site_of_environment(match.resource_ad.eval("SiteEnvironment"))
        except (LookupError, TypeError):
            name = match.resource
        if name not in self.dead:
            self.dead.add(name)
            self.note(f"site {match.resource} is dead: files left there are out of reach", launch)

    def note(self, text: str, launch: Launch) -> None:
        if self._log is None:
            path = Path(launch.cwd) / "grid" / "negotiator.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(path, "a", encoding="utf-8")  # noqa: SIM115  (open for the backend's life)
        self._log.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self._log.flush()


def _expanded(ad: ClassAd) -> ClassAd:
    """The job ad as the matched job runs with it: each attribute with a ``MATCH_EXP_<Attr>``
    record (its ``$$()`` expanded) takes that value, as the schedd's expanded job ad does."""
    copy = ad.copy()
    for name in ad:
        base = name[len("MATCH_EXP_"):]
        if name.upper().startswith("MATCH_EXP_") and base in ad and (expr := ad.get_expr(name)) is not None:
            copy[base] = expr
    return copy


def _excluding(ad: ClassAd, rejected: list[str]) -> ClassAd:
    if not rejected:
        return ad
    copy = ad.copy()
    base = ad.get_expr("Requirements")
    clauses = " && ".join(f'(TARGET.Name =!= "{name}")' for name in rejected)
    copy["Requirements"] = parse(f"({base.unparse() if base is not None else 'true'}) && {clauses}")
    return copy


def _unmatched(ad: ClassAd) -> ClassAd:
    """The job ad without its MATCH_ records (the monitor no longer counts it for the site)."""
    copy = ad.copy()
    for name in [name for name in ad if name.lower().startswith("match_")]:
        del copy[name]
    return copy


def _progress_path(launch: Launch) -> str:
    return str(Path(launch.cwd) / "grid" / f"{launch.node}.progress")


def _read_progress(path: str) -> dict[str, float]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if type(v) in (int, float)}


def _stop(proc: subprocess.Popen[bytes], patience: float = 15.0) -> None:
    """SIGTERM to the group's process group (its engine stops its jobs, keeps its journal), then
    SIGKILL if it has not ended within ``patience`` seconds."""
    for sig, wait in ((signal.SIGTERM, patience), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue

