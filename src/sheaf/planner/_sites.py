"""Site selection: which site each abstract job runs on.

Policy
    - Default sites, as in Pegasus 5: a site catalog always has ``local`` (the submit host) and
      ``condorpool`` (the local HTCondor pool -- for sheaf, the embedded engine's pool of slots);
      when the catalog lacks them, they exist with no directories or profiles.
    - The *selected sites* are ``--sites`` (in the order given, duplicates dropped; ``*`` means
      every site); without it, as pegasus-plan: a site named ``compute`` alone when the catalog has
      one, else every site of the catalog except ``local``, ``condorpool`` included.  Sheaf's one
      leniency: a transformation catalogued only for ``local`` keeps running there when ``--sites``
      is absent (Pegasus would find no site for it), because a plan that ran before must still run.
      A selected site the catalog does not define (nor is a default site) is a ``PlanningError``.
    - A compute job's *candidates* are the selected sites where its transformation is installed
      (a transformation-catalog entry for that site); a *stageable* entry can be staged anywhere,
      so it makes every selected site a candidate.  Without a transformation catalog every selected
      site is a candidate and the executable is the transformation's name (found on the ``PATH``).
    - A job's ``selector`` profile ``execution.site`` pins it to that site (which must be known to
      the site catalog and have the transformation), whether or not it is among ``--sites``.
    - Sub-workflow jobs run on the submit host, ``local``.
    - A job no candidate can run is a ``PlanningError`` naming the job and the transformation.

Selectors are pluggable: a ``SiteSelector`` chooses one of a job's candidates; ``register_selector``
adds one under a name that property ``pegasus.selector.site`` can then name (case-insensitive).
``Random`` draws from a ``random.Random`` seeded with the plan's seed; ``RoundRobin`` cycles over
each distinct candidate list in file order.  Both are deterministic for a given seed and input,
and are called only for jobs with more than one candidate.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from sheaf.errors import PlanningError
from sheaf.model import Job, SiteCatalog


class SiteSelector(Protocol):
    def select(self, job: Job, candidates: Sequence[str]) -> str: ...


SelectorFactory = Callable[[int], SiteSelector]


class RandomSelector:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def select(self, job: Job, candidates: Sequence[str]) -> str:
        return candidates[self._rng.randrange(len(candidates))]


class RoundRobinSelector:
    def __init__(self, seed: int) -> None:
        self._next: dict[tuple[str, ...], int] = {}
        self._start = seed

    def select(self, job: Job, candidates: Sequence[str]) -> str:
        key = tuple(candidates)
        turn = self._next.get(key, self._start)
        self._next[key] = turn + 1
        return candidates[turn % len(candidates)]


_SELECTORS: dict[str, SelectorFactory] = {}


def register_selector(name: str, factory: SelectorFactory) -> None:
    """Make ``factory(seed)`` available as ``pegasus.selector.site = name``."""
    _SELECTORS[name.lower()] = factory


register_selector("Random", RandomSelector)
register_selector("RoundRobin", RoundRobinSelector)


def make_selector(name: str, seed: int) -> SiteSelector:
    factory = _SELECTORS.get(name.strip().lower())
    if factory is None:
        raise PlanningError("unknown site selector", value=name,
                            rule="pegasus.selector.site is one of " + ", ".join(sorted(_SELECTORS)))
    return factory(seed)


DEFAULT_SITES = ("local", "condorpool")
#: what Pegasus gives the ``local`` site's environment from the planner's own, unless the site sets it
LOCAL_ENVIRONMENT = ("PATH", "PYTHONPATH")


def local_site_layer(layer: Mapping[str, Mapping[str, str]],
                     environ: Mapping[str, str]) -> Mapping[str, Mapping[str, str]]:
    """The ``local`` site's profiles with ``PATH``/``PYTHONPATH`` from the planning environment where
    the site's ``env`` profiles do not set them (Pegasus does so: jobs on the submit host see the
    programs and Python modules the planner saw)."""
    env = layer.get("env") or {}
    extra = {name: environ[name] for name in LOCAL_ENVIRONMENT if name not in env and environ.get(name)}
    if not extra:
        return layer
    return {**layer, "env": {**env, **extra}}


def selected_sites(sites: Sequence[str] | None, sc: SiteCatalog | None) -> tuple[str, ...]:
    """The sites jobs may run on (module docstring)."""
    if sites:
        chosen = tuple(dict.fromkeys(s.strip() for s in sites if s.strip()))
        if "*" in chosen:
            return _every_site(sc)
        for site in chosen:
            check_known(site, sc, "--sites")
        if chosen:
            return chosen
    if sc is not None and "compute" in sc:
        return ("compute",)
    return _every_site(sc)


def _every_site(sc: SiteCatalog | None) -> tuple[str, ...]:
    named = tuple(name for name in (sc.sites if sc is not None else ()) if name != "local")
    return named if "condorpool" in named else (*named, "condorpool")


def check_known(site: str, sc: SiteCatalog | None, where: str) -> None:
    """A site jobs run on must be defined: without a site catalog only the default sites are, as
    pegasus-plan's site store then holds ``local`` and ``condorpool`` alone."""
    if site in DEFAULT_SITES or (sc is not None and site in sc):
        return
    known = ", ".join(dict.fromkeys((*DEFAULT_SITES, *(sc.sites if sc is not None else ()))))
    which = "the sites are" if sc is not None else "without a site catalog the sites are"
    raise PlanningError(f"unknown site in {where}; {which} {known}", value=site,
                        rule="a site jobs run on is defined in the site catalog")
