"""The overhead model: what a job costs beyond its tasks' own runtime, per backend or site.

The decomposition is the one workflow simulators use (WorkflowSim's delays, WRENCH's service
overheads), each a distribution given by its mean and coefficient of variation (a gamma
distribution; a cv of 0 is the constant)::

    engine    a node ready -> its job submitted (the engine's turn, a PRE script)
    submit    submitted -> may start (sbatch and the scheduler's pass, HTCondor's negotiation cycle,
              a grid site's queue); waiting for a free slot comes on top, from the simulation
    launch    slot time per job beyond its tasks (the job wrapper, sandbox set-up, exit)
    task      slot time per task of a cluster beyond its runtime (the cluster runner's fork and exec)
    post      the job ended -> its node done (the POST script, the event reaching the engine)

plus ``dispatch``: the seconds a site's scheduler takes between two job starts (0: no limit) -- a
batch system's throughput, one job a scheduling pass on a small Slurm cluster -- and ``bandwidth``
(bytes per second a data job moves; files of unknown size cost nothing) and
``speed_cv``: the spread of one run's speed against another's (every delay and runtime of a run is
scaled by one factor of mean 1), which is what widens the p10-p90 interval of a large workflow,
whose per-job variations average out.

A model file (``sheaf predict --overheads FILE``; what ``sheaf calibrate`` writes) is JSON::

    {"format": "sheaf-overheads/1",
     "backends": {"slurm": {"submit": {"mean": 1.2, "cv": 0.4}, "post": 0.05, ...}},
     "sites": {"condorpool": {"submit": 60}}}

A component is a number (the mean, cv 0) or ``{"mean": m, "cv": c}``; components a block does not
name keep the backend's default.  A site's block wins over its backend's.
"""

from __future__ import annotations

__all__ = ["BACKENDS", "COMPONENTS", "DEFAULTS", "Dist", "OverheadModel", "OverheadModelError", "Overheads",
           "flat_overheads"]

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf.errors import SheafError

FORMAT = "sheaf-overheads/1"
COMPONENTS = ("engine", "submit", "launch", "task", "post")
BACKENDS = ("local", "slurm", "dask", "htcondor", "grid")


class OverheadModelError(SheafError, ValueError):
    """A model file or value that cannot be read (exit code 2)."""


@dataclass(frozen=True, slots=True)
class Dist:
    """A non-negative delay: gamma distributed with this mean and coefficient of variation."""

    mean: float
    cv: float = 0.0

    def to_json(self) -> dict[str, float]:
        return {"mean": self.mean, "cv": self.cv}


@dataclass(frozen=True, slots=True)
class Overheads:
    engine: Dist = Dist(0.0)
    submit: Dist = Dist(0.0)
    launch: Dist = Dist(0.0)
    task: Dist = Dist(0.0)
    post: Dist = Dist(0.0)
    bandwidth: float = 100e6
    speed_cv: float = 0.0
    source: str = "default"
    dispatch: float = 0.0

    @property
    def per_job(self) -> float:
        """The mean overhead of one single-task job."""
        return self.engine.mean + self.submit.mean + self.launch.mean + self.task.mean + self.post.mean

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name).to_json() for name in COMPONENTS}
        out.update(dispatch=self.dispatch, bandwidth=self.bandwidth, speed_cv=self.speed_cv,
                   source=self.source)
        return out


# local, slurm and dask: what calibrating benchmarks/predict_accuracy.py's runs gave (this machine,
# the tests' Slurm cluster, a Dask LocalCluster); htcondor: its documented negotiation cycle and a
# shadow and starter per job; grid: a wide-area site's minute of scheduling, staging and bookkeeping.
DEFAULTS: dict[str, Overheads] = {
    "local": Overheads(engine=Dist(0.0015, 1.0), submit=Dist(0.0005, 1.0), launch=Dist(0.002, 1.0),
                       task=Dist(0.004, 0.5), post=Dist(0.001, 1.0), bandwidth=500e6, speed_cv=0.05),
    "slurm": Overheads(engine=Dist(0.002, 0.5), submit=Dist(1.0, 0.3), launch=Dist(0.001, 1.0),
                       task=Dist(0.004, 0.5), post=Dist(0.002, 1.0), bandwidth=200e6, speed_cv=0.08,
                       dispatch=0.5),
    "dask": Overheads(engine=Dist(0.002, 1.0), submit=Dist(0.015, 0.3), launch=Dist(0.006, 0.5),
                      task=Dist(0.004, 0.5), post=Dist(0.005, 0.3), bandwidth=500e6, speed_cv=0.05),
    "htcondor": Overheads(engine=Dist(0.01, 0.5), submit=Dist(30.0, 0.6), launch=Dist(2.0, 0.5),
                          task=Dist(0.004, 0.5), post=Dist(5.0, 0.5), bandwidth=100e6, speed_cv=0.05),
    "grid": Overheads(engine=Dist(0.01, 0.5), submit=Dist(50.0, 0.5), launch=Dist(5.0, 0.5),
                      task=Dist(0.004, 0.5), post=Dist(5.0, 0.5), bandwidth=20e6, speed_cv=0.1),
}


def flat_overheads(seconds: float, base: Overheads) -> Overheads:
    """``--overhead S``: every job costs S seconds beyond its tasks (submission, queueing, staging,
    bookkeeping), all of it capacity the job takes from its site -- a slot does no other work meanwhile,
    which is what clustering saves -- keeping the base model's per-task cost, bandwidth and spread."""
    if not math.isfinite(seconds) or seconds < 0:
        raise OverheadModelError(f"--overhead must be a number of seconds >= 0, got {seconds!r}")
    return replace(base, engine=Dist(0.0), submit=Dist(0.0), launch=Dist(seconds, base.launch.cv),
                   post=Dist(0.0), dispatch=0.0, source=f"--overhead {seconds:g}")


@dataclass(frozen=True, slots=True)
class OverheadModel:
    """Overheads per backend and per site; :meth:`for_site` picks a job's."""

    backends: Mapping[str, Overheads] = field(default_factory=lambda: dict(DEFAULTS))
    sites: Mapping[str, Overheads] = field(default_factory=dict)

    def for_site(self, site: str | None, backend: str) -> Overheads:
        found = self.sites.get(site or "")
        if found is not None:
            return found
        return self.backends.get(backend) or DEFAULTS.get(backend) or DEFAULTS["local"]

    def flat(self, seconds: float) -> OverheadModel:
        return OverheadModel({name: flat_overheads(seconds, o) for name, o in self.backends.items()},
                             {name: flat_overheads(seconds, o) for name, o in self.sites.items()})

    def merged(self, other: Mapping[str, Any], origin: str) -> OverheadModel:
        """This model with a model file's blocks on top (module docstring); ``origin`` names the file
        in errors and in each block's ``source``."""
        if not isinstance(other, Mapping) or other.get("format") != FORMAT:
            raise OverheadModelError(f"{origin}: not an overhead model (want \"format\": \"{FORMAT}\")")
        unknown = set(other) - {"format", "backends", "sites"}
        if unknown:
            raise OverheadModelError(f"{origin}: unknown key {min(unknown)!r} "
                                     "(a model has format, backends, sites)")
        backends = dict(self.backends)
        for name, block in _blocks(other, "backends", origin).items():
            if name not in BACKENDS:
                raise OverheadModelError(f"{origin}: unknown backend {name!r} (one of {', '.join(BACKENDS)})")
            backends[name] = _block(block, backends.get(name) or DEFAULTS[name], f"{origin}: backends.{name}")
        sites = dict(self.sites)
        for name, block in _blocks(other, "sites", origin).items():
            base = sites.get(name) or backends.get(str(block.get("backend", "local"))) or DEFAULTS["local"]
            sites[name] = _block(block, base, f"{origin}: sites.{name}")
        return OverheadModel(backends, sites)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "backends": {n: o.to_json() for n, o in sorted(self.backends.items())},
                "sites": {n: o.to_json() for n, o in sorted(self.sites.items())}}


def _blocks(data: Mapping[str, Any], key: str, origin: str) -> Mapping[str, Mapping[str, Any]]:
    blocks = data.get(key) or {}
    if not isinstance(blocks, Mapping) or not all(isinstance(b, Mapping) for b in blocks.values()):
        raise OverheadModelError(f"{origin}: {key} must map names to objects of components")
    return blocks


_NUMBERS = {"bandwidth", "speed_cv", "dispatch"}
_KNOWN = {*COMPONENTS, *_NUMBERS, "source", "backend"}


def _block(block: Mapping[str, Any], base: Overheads, where: str) -> Overheads:
    unknown = set(block) - _KNOWN
    if unknown:
        raise OverheadModelError(f"{where}: unknown component {min(unknown)!r} "
                                 f"(components: {', '.join(COMPONENTS)}, dispatch, bandwidth, speed_cv)")
    changes: dict[str, Any] = {}
    for name in COMPONENTS:
        if name in block:
            changes[name] = _dist(block[name], f"{where}.{name}")
    for name in _NUMBERS:
        if name in block:
            changes[name] = _number(block[name], f"{where}.{name}", positive=name == "bandwidth")
    changes["source"] = str(block.get("source") or where.split(":", maxsplit=1)[0])
    return replace(base, **changes)


def _dist(value: Any, where: str) -> Dist:
    if isinstance(value, Mapping):
        unknown = set(value) - {"mean", "cv"}
        if unknown or "mean" not in value:
            raise OverheadModelError(f"{where}: a component is a number or {{\"mean\": m, \"cv\": c}}, "
                                     f"got {dict(value)!r}")
        return Dist(_number(value["mean"], f"{where}.mean"), _number(value.get("cv", 0.0), f"{where}.cv"))
    return Dist(_number(value, where))


def _number(value: Any, where: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise OverheadModelError(f"{where}: want a finite number {bound}, got {value!r}")
    return float(value)
