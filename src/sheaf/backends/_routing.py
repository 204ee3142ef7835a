"""``RoutingBackend``: one backend per launch, chosen by the job's ``GridResource`` (its site's choice)
or its universe.

A launch whose job ad has ``GridResource = "batch <system>"`` goes to the backend registered for
that system (made on first use); a local or scheduler universe job (``JobUniverse`` 12 or 7: a data
job, a SUBDAG's run) to the submit host's own backend, where HTCondor's schedd runs those, when the
default backend is another (made on first use too); every other launch to the default backend.
The router keeps which backend holds each key, so ``cancel`` reaches the right one;
``idle``/``running`` are sums; ``wait`` hands over to the one backend when only one has work (its
own blocking wait, no added latency) and otherwise polls each in turn without blocking, pausing
``_SLICE`` seconds between rounds.  Optional
extensions (``started``, ``adopt``) are forwarded to the backends that have them; ``self_refilling``
holds while every backend made so far has it, and ``fileno`` is the default backend's while it is
the only one made (else -1: nothing to wait on).  A route whose
backend cannot be made here (no ``sbatch`` on PATH) holds its launches with the reason: the
site's jobs cannot run as submitted, the rest of the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Self

from sheaf.classad import ClassAd
from sheaf.engine import (
    Adopts,
    Backend,
    Event,
    Held,
    Launch,
    Pollable,
    ReportsStarts,
    SelfRefilling,
    Started,
)
from sheaf.errors import UsageError

__all__ = ["RoutingBackend", "route_of"]

_SLICE = 0.01


#: the route of the jobs the schedd runs on the submit host (a name no batch system has)
SUBMIT_HOST = "<submit host>"
_SUBMIT_HOST_UNIVERSES = frozenset({7, 12})  # scheduler, local


def _on_submit_host(ad: ClassAd) -> bool:
    universe = ad.get("JobUniverse")
    return isinstance(universe, int) and universe in _SUBMIT_HOST_UNIVERSES


def route_of(ad: ClassAd) -> str | None:
    """The batch system a job asks for (``grid_resource = batch slurm`` -> ``"slurm"``), or None."""
    if ad.get_expr("GridResource") is None:
        return None
    value = ad.eval("GridResource")
    if not isinstance(value, str):
        return None
    words = value.lower().split()
    return words[1] if len(words) >= 2 and words[0] == "batch" else None


class RoutingBackend:
    def __init__(self, default: Backend, routes: Mapping[str, Callable[[], Backend]],
                 stateful: Collection[str] = (), submit_host: Callable[[], Backend] | None = None) -> None:
        self.default = default
        self._routes = dict(routes)
        if submit_host is not None:
            self._routes[SUBMIT_HOST] = submit_host
        self._stateful = frozenset(stateful)  # routes that may hold a killed engine's jobs
        self._made: dict[str, Backend] = {}
        self._owner: dict[str, Backend] = {}
        self._broken: dict[str, str] = {}  # route -> why its backend could not be made
        self._held: list[Event] = []

    @property
    def backends(self) -> list[Backend]:
        return [self.default, *self._made.values()]

    @property
    def self_refilling(self) -> bool:
        """Whether every backend made so far starts its queued attempts by itself (the engine then
        batches exits into fewer turns; see ``engine._run``): a route made later may change it."""
        return all(isinstance(b, SelfRefilling) and b.self_refilling for b in self.backends)

    def fileno(self) -> int:
        """The default backend's ``fileno`` while no route's backend was made, else -1."""
        return self.default.fileno() if isinstance(self.default, Pollable) and not self._made else -1

    def _backend_for(self, launch: Launch) -> Backend | None:
        system = route_of(launch.job_ad)
        if system is None and SUBMIT_HOST in self._routes and _on_submit_host(launch.job_ad):
            system = SUBMIT_HOST
        if system is None or system not in self._routes:
            return self.default
        made = self._made.get(system)
        if made is None and system not in self._broken:
            try:
                made = self._made[system] = self._routes[system]()
            except UsageError as exc:
                self._broken[system] = (
                    f"the submit host cannot run it: {exc}" if system == SUBMIT_HOST
                    else f"grid_resource asks for batch {system}, which is unusable here: {exc}")
        return made

    def submit(self, launch: Launch) -> None:
        backend = self._backend_for(launch)
        if backend is None:
            self._held.append(Held(launch.key, self._broken[route_of(launch.job_ad) or ""]))
            return
        backend.submit(launch)
        self._owner[launch.key] = backend

    def wait(self, timeout: float | None) -> list[Event]:
        if self._held:
            held, self._held = self._held, []
            return held
        busy = [b for b in self.backends if b.idle() or b.running()] or [self.default]
        if len(busy) == 1:
            return self._forget(busy[0].wait(timeout))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            events = [event for backend in busy for event in backend.wait(0.0)]
            if events or (deadline is not None and time.monotonic() >= deadline):
                return self._forget(events)
            time.sleep(_SLICE if deadline is None else max(0.0, min(_SLICE, deadline - time.monotonic())))

    def _forget(self, events: list[Event]) -> list[Event]:
        for event in events:
            self._owner.pop(event.key, None)
        return events

    def cancel(self, key: str) -> None:
        self._held = [e for e in self._held if e.key != key]
        backend = self._owner.pop(key, None)
        if backend is not None:
            backend.cancel(key)

    def idle(self) -> int:
        return sum(b.idle() for b in self.backends)

    def running(self) -> int:
        return sum(b.running() for b in self.backends)

    def close(self) -> None:
        for backend in self.backends:
            backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def started(self) -> list[Started]:
        found: list[Started] = []
        for backend in self.backends:
            if isinstance(backend, ReportsStarts):
                found.extend(backend.started())
        return found

    def adopt(self, run_id: str, attempts: Collection[tuple[str, int]]) -> set[str]:
        """The default backend, the submit host's and every route that kept state may hold the killed
        engine's jobs."""
        for system in (self._stateful | {SUBMIT_HOST}) & self._routes.keys():
            if system not in self._made and system not in self._broken:
                try:
                    self._made[system] = self._routes[system]()
                except UsageError as exc:
                    self._broken[system] = str(exc)
        keys: set[str] = set()
        for backend in self.backends:
            if isinstance(backend, Adopts):
                taken = set(backend.adopt(run_id, attempts))
                keys |= taken
                self._owner.update(dict.fromkeys(taken, backend))
        return keys
