"""The grid site configuration file (YAML): what the USCMS report keeps in its "site configuration file".

::

    group_size: 50                 # optional: the default of sheaf.group.size for MaxMatches
    sites:
      uw-hep:
        max_queued: 100            # the deepest the site's queue should be, in jobs
        backend: local             # local | stall | fail | a name from the backend registry
        slots: 4                   # local pools only: how many jobs run at once
        gatekeeper: dill.hep.wisc.edu:/jobmanager-condor   # optional (else the site catalog's grid)
        environment:               # optional: SiteEnvironment entries besides the ones sheaf sets
          SiteWorkingArea: /scratch/work
        dies_after: 10             # test sites only: after 10 jobs of a group it stops answering
        stalls_after: 10           # ... it answers but never starts another job (a stalled queue)
        fails_after: 10            # ... every later job fails (exit code 1)

Policy: sites keep the file's order; names are unique (a YAML mapping); ``max_queued`` and ``slots``
are positive integers; an environment name or value may not hold ``;`` or ``=`` in a name (the
SiteEnvironment string is ``name=value;...``).  A bad file raises ``FormatError``/``ValidationError``
naming the file, the line where it can, and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sheaf.formats._common import PathLike, TextSource, mapping

__all__ = ["FAILURE_MODES", "SiteConfig", "SiteSpec", "read_site_config"]

TEST_KINDS = ("stall", "fail")
#: the test sites' failure modes: after N jobs of a group the site ... (``sheaf.backends.grid``)
FAILURE_MODES = ("dies_after", "stalls_after", "fails_after")
_SITE_KEYS = frozenset({"max_queued", "backend", "slots", "gatekeeper", "environment", *FAILURE_MODES})


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """One site of the configuration."""

    name: str
    max_queued: int
    backend: str = "local"
    slots: int = 1
    gatekeeper: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    dies_after: int | None = None
    stalls_after: int | None = None
    fails_after: int | None = None


@dataclass(frozen=True, slots=True)
class SiteConfig:
    sites: tuple[SiteSpec, ...]
    group_size: int | None = None
    path: str | None = None

    def site(self, name: str) -> SiteSpec | None:
        return next((spec for spec in self.sites if spec.name == name), None)


def read_site_config(path: PathLike) -> SiteConfig:
    """Read and check a site configuration file (see the module docstring)."""
    src = TextSource.open(path, None)
    raw = mapping(src, src.load_yaml(), "the site configuration", frozenset({"group_size", "sites"}),
                  required=("sites",))
    sites = mapping(src, raw["sites"], "sites", frozenset(raw["sites"]) if isinstance(raw["sites"], dict)
                    else frozenset())
    group = raw.get("group_size")
    return SiteConfig(tuple(_site(src, str(name), body) for name, body in sites.items()),
                      None if group is None else _positive(src, group, "group_size"), src.path)


def _site(src: TextSource, name: str, raw: Any) -> SiteSpec:
    body = mapping(src, raw, f"site '{name}'", _SITE_KEYS, required=("max_queued",))
    if ";" in name or "=" in name:
        src.fail(f"site name {name!r} holds ';' or '='", rule="a site name fits in SiteEnvironment",
                 value=name)
    env = body.get("environment") or {}
    if not isinstance(env, dict):
        src.fail(f"site '{name}': environment must be a mapping", rule="environment: {NAME: value}",
                 value=type(env).__name__)
    for key, value in env.items():
        if not isinstance(key, str) or "=" in key or ";" in key or ";" in str(value):
            src.fail(f"site '{name}': environment entry {key}={value} cannot go in SiteEnvironment",
                     rule="no ';' in names or values, no '=' in names", value=f"{key}={value}")
    gatekeeper = body.get("gatekeeper")
    queued = _positive(src, body["max_queued"], f"site '{name}': max_queued")
    slots = _positive(src, body.get("slots", 1), f"site '{name}': slots")
    modes = {mode: _positive(src, body[mode], f"site '{name}': {mode}")
             for mode in FAILURE_MODES if body.get(mode) is not None}
    return SiteSpec(name, queued, str(body.get("backend") or "local"), slots,
                    None if gatekeeper is None else str(gatekeeper), {k: str(v) for k, v in env.items()},
                    **modes)


def _positive(src: TextSource, value: Any, what: str) -> int:
    if type(value) is not int or value < 1:
        src.fail(f"{what} must be a positive integer", rule=f"{what} >= 1", value=value)
    return int(value)
