"""The group DAG job: runs one group DAG with its nodes on the site its environment names.

This is what the USCMS report's matched DAGMan job is: ``python -m sheaf.backends.grid._group DIR
GROUP_DAG`` started by the grid backend with ``$$(SiteEnvironment)`` expanded into its environment.
Everything about the site comes from that environment (the report: "all site-specific information
is passed from the site ClassAd into the environment of DAGMan"):

* ``SheafSite`` names the site; node submit descriptions read it with ``$ENV(SheafSite)``.
* ``SiteBackend`` is the site's kind: ``local`` (a pool of ``SiteSlots`` slots on this machine; every
  group at the site shares them through the machine-wide concurrency limit ``sheaf_site_<site>``,
  and ``SiteMaxSubmitted`` -- the gridmanager's per-resource limit -- through ``sheaf_submitted_<site>``),
  ``stall`` (accepts jobs, never starts them) or ``fail`` (every job exits 1) -- the test sites;
  ``SiteDiesAfter=N`` makes a local site stop answering after its first N jobs (dying midway),
  ``SiteStallsAfter=N`` stop starting jobs while it still answers, ``SiteFailsAfter=N`` fail every
  later job; any other name is a backend of ``sheaf.backends._registry`` (``slurm``; ``dask``,
  with ``SiteScheduler`` as its scheduler address).
* ``SHEAF_GROUP_PROGRESS`` (set by the grid backend) is a file rewritten atomically with the run's
  progress (done/failed/running, when a node last started or ended, and whether the site still
  answers -- a backend without ``answering()`` always does): the backend's back-out policy reads it
  to tell a group that makes progress from one idle at its site, and a stalled site from a dead one.

Before its engine starts, the group DAG job records the site its run (the journal's next epoch)
is at (``_rescue.record_site``): where every node of the group ran is known from then on.
The group DAG resumes from its own journal when run again (on another site after a crash of the
outer engine): nodes already done stay done.  Exit status 0 when the group DAG succeeded, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from sheaf.backends._pool import Pool
from sheaf.backends.grid._gridmanager import DEFAULT_SUBMITTED
from sheaf.backends.grid._rescue import record_site
from sheaf.backends.grid._sites import SITE_KEY
from sheaf.backends.local import LocalBackend
from sheaf.engine import Backend, DagmanOptions, Event, Exited, Launch, Progress, run_workflow

__all__ = ["FailingSite", "StallingSite", "main", "site_backend"]

PROGRESS_ENV = "SHEAF_GROUP_PROGRESS"


class StallingSite:
    """A site that accepts every job and never starts one (a gatekeeper that stopped answering)."""

    def __init__(self) -> None:
        self._queued: set[str] = set()

    def submit(self, launch: Launch) -> None:
        self._queued.add(launch.key)

    def wait(self, timeout: float | None) -> list[Event]:
        time.sleep(min(timeout if timeout is not None else 1.0, 1.0))
        return []

    def cancel(self, key: str) -> None:
        self._queued.discard(key)

    def idle(self) -> int:
        return len(self._queued)

    def running(self) -> int:
        return 0

    def close(self) -> None:
        self._queued.clear()


class FailingSite:
    """A site where every job fails at once (exit code 1)."""

    def __init__(self) -> None:
        self._done: list[Event] = []

    def submit(self, launch: Launch) -> None:
        now = time.time()
        self._done.append(Exited(launch.key, 1, None, "the site fails every job", now, now))

    def wait(self, timeout: float | None) -> list[Event]:
        done, self._done = self._done, []
        if not done and timeout:
            time.sleep(min(timeout, 0.05))
        return done

    def cancel(self, key: str) -> None:
        self._done = [event for event in self._done if event.key != key]

    def idle(self) -> int:
        return 0

    def running(self) -> int:
        return 0

    def close(self) -> None:
        self._done.clear()


class _SiteLimited:
    """A local pool whose every job also takes one unit of the site's machine-wide limit."""

    def __init__(self, inner: LocalBackend, limit: str) -> None:
        self.inner, self.limit = inner, limit

    def submit(self, launch: Launch) -> None:
        ad = launch.job_ad.copy()
        own = ad.eval("ConcurrencyLimits") if "ConcurrencyLimits" in ad else None
        ad["ConcurrencyLimits"] = f"{own},{self.limit}" if isinstance(own, str) and own else self.limit
        self.inner.submit(replace(launch, job_ad=ad))

    def wait(self, timeout: float | None) -> list[Event]:
        return self.inner.wait(timeout)

    def cancel(self, key: str) -> None:
        self.inner.cancel(key)

    def idle(self) -> int:
        return self.inner.idle()

    def running(self) -> int:
        return self.inner.running()

    def close(self) -> None:
        self.inner.close()

    def started(self) -> list[object]:
        return list(self.inner.started())


class _FaltersAfter(_SiteLimited):
    """A test site that runs its first ``after`` jobs, then falters (``mode``): ``dies`` -- later
    jobs stay queued and the site stops answering; ``stalls`` -- they stay queued but the site still
    answers (its storage stays reachable); ``fails`` -- they fail at once (exit code 1)."""

    def __init__(self, inner: _SiteLimited, after: int, mode: str) -> None:
        super().__init__(inner.inner, inner.limit)
        self.after, self.mode, self.taken = after, mode, 0
        self.stuck: set[str] = set()
        self.failed: list[Event] = []

    def submit(self, launch: Launch) -> None:
        if self.taken < self.after:
            self.taken += 1
            super().submit(launch)
        elif self.mode == "fails":
            now = time.time()
            self.failed.append(Exited(launch.key, 1, None, "the site fails every job now", now, now))
        else:
            self.stuck.add(launch.key)

    def wait(self, timeout: float | None) -> list[Event]:
        failed, self.failed = self.failed, []
        return failed + super().wait(0.0 if failed else timeout)

    def cancel(self, key: str) -> None:
        if key in self.stuck:
            self.stuck.discard(key)
        else:
            super().cancel(key)

    def idle(self) -> int:
        return super().idle() + len(self.stuck)

    def answering(self) -> bool:
        return not (self.mode == "dies" and self.stuck)


@runtime_checkable
class Answering(Protocol):
    """A site backend that can stop answering (a test site that dies); others always answer."""

    def answering(self) -> bool: ...


_FALTERING = {"SiteDiesAfter": "dies", "SiteStallsAfter": "stalls", "SiteFailsAfter": "fails"}


def site_backend(env: dict[str, str] | os._Environ[str]) -> Backend:
    """The backend of the site ``env`` names (see the module docstring)."""
    kind = env.get("SiteBackend", "local")
    if kind == "stall":
        return StallingSite()
    if kind == "fail":
        return FailingSite()
    if kind != "local":
        from sheaf.backends._registry import BACKENDS

        if kind not in BACKENDS or kind == "htcondor":  # htcondor takes whole DAGs, not node jobs
            raise SystemExit(f"sheaf: error: site backend {kind!r} is not available here")
        # the group DAG's process runs in its own directory: a Slurm site keeps its records there
        made: Backend = BACKENDS[kind](scheduler=env.get("SiteScheduler") or None, directory=os.getcwd(),
                                       env=dict(env))
        return made
    slots = max(1, int(env.get("SiteSlots", "1")))
    site = "".join(c if c.isalnum() else "_" for c in env.get("SheafSite", "site"))
    submitted = env.get("SiteMaxSubmitted", str(DEFAULT_SUBMITTED))
    pool = Pool({"NUM_CPUS": str(slots), f"SHEAF_SITE_{site.upper()}_LIMIT": str(slots),
                 f"SHEAF_SUBMITTED_{site.upper()}_LIMIT": submitted})
    limited = _SiteLimited(LocalBackend(pool), f"sheaf_site_{site},sheaf_submitted_{site}")
    for name, mode in _FALTERING.items():
        after = env.get(name)
        if after and after.isdigit():
            return _FaltersAfter(limited, int(after), mode)
    return limited


class _ProgressFile:
    """Progress as the back-out policy needs it: ``running`` counts jobs the site actually started
    (the engine's own count includes jobs the site merely accepted, which a stalled site keeps)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.backend: Backend | None = None
        self.last: tuple[int, int, int, int] | None = None
        self.changed = time.time()

    def factory(self) -> Backend:
        self.backend = site_backend(os.environ)
        return self.backend

    def __call__(self, p: Progress) -> None:
        running = self.backend.running() if self.backend is not None else 0
        answers = not isinstance(self.backend, Answering) or self.backend.answering()
        now = (p.done, p.failed, running, int(answers))
        if now == self.last and not p.finished:
            return
        if self.last is None or now[:2] != self.last[:2] or now[2] > self.last[2]:
            self.changed = time.time()
        self.last = now
        if self.path is None:
            return
        record = {"done": p.done, "failed": p.failed, "running": running, "total": p.total,
                  "changed": self.changed, "finished": p.finished, "answering": now[3]}
        temporary = f"{self.path}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        os.replace(temporary, self.path)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m sheaf.backends.grid._group DIR GROUP_DAG", file=sys.stderr)
        return 2
    directory, dag = args
    record_site(directory, dag, os.environ.get(SITE_KEY, "?"))
    progress = _ProgressFile(os.environ.get(PROGRESS_ENV))
    result = run_workflow(directory, backend=progress.factory, options=DagmanOptions(dag_files=(dag,)),
                          on_progress=progress, progress_interval=0.2)
    return 0 if result.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
