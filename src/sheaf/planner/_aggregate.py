"""How a cluster runs: its aggregator's executable on the site, and the cluster job's profiles.

Aggregator executables (``AggregatorResolver.resolve(site, aggregator)``), first found wins:

1. ``seqexec``/``mpiexec``: the transformation-catalog entry ``pegasus::seqexec`` /
   ``pegasus::mpiexec`` for the site (its pfn; its profiles go on the cluster job).  An entry with
   namespace and name swapped (``seqexec::pegasus``, as in the Pegasus manual's YAML example) is *not* it:
   a warning says so and the search goes on;
2. ``$PEGASUS_HOME/bin/pegasus-cluster`` / ``pegasus-mpi-cluster`` from the site's ``env`` profile
   ``PEGASUS_HOME`` (site catalog) -- on a site the embedded engine runs (this host) only when that
   file is an executable here: Pegasus users' catalogs name the install of the machines they came
   from (``PEGASUS_HOME: /usr``), which a cluster job here could not start, so a warning names it and
   the search goes on;
3. on a site the embedded engine runs, sheaf's own ``sheaf-cluster`` / ``sheaf-mpi-cluster``
   (console scripts of this package, found on the ``PATH``).  The embedded engine runs ``local``
   and every site of the site catalog without a grid gateway (``grids``) -- or, when property
   ``sheaf.embedded.sites`` is set, exactly the sites it lists; without a site catalog, every site;
4. otherwise the site has no aggregator: its jobs stay unclustered and a warning names the site.

``decaf`` needs a ``dataflow::decaf`` entry for the site: its pfn is the basename of the Decaf JSON
file (the cluster's ``executable``), and its profiles (``glite.arguments``,
``exitcode.successmsg``, ``dagman.post``, ``env``...) go on the cluster job.  There is no fallback.

Cluster profiles (``combine``): ``runtime`` and ``maxwalltime`` (pegasus, globus) are summed over
the tasks; ``pegasus.memory`` and ``condor.request_memory`` take the maximum -- numbers compared
numerically, and as soon as one is a ClassAd expression, ``max({e1, e2, ...})`` of the distinct
values, so retry-dependent expressions keep working.  Per-task keys (``clusters.*``, the label
key, ``pmc_*``, ``job.aggregator``, the selector namespace) stay on the tasks.  Every other key is
kept where the tasks agree; where they do not (or not all set it), the last task that sets it
wins, as in the reference planner, with a note for ``-v``.  The aggregator entry's profiles then
go on top (a PMC entry's ``nodes``/``ppn``, globus ``xcount``/``host_xcount``/``maxwalltime``
size the MPI job).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sheaf.errors import PlanningError
from sheaf.model import EMPTY, Profiles, SiteCatalog, TransformationCatalog, merge_profiles
from sheaf.planner._jobs import installed_path
from sheaf.planner._options import Options

_ENTRIES = {"seqexec": ("pegasus", "seqexec"), "mpiexec": ("pegasus", "mpiexec"),
            "decaf": ("dataflow", "decaf")}
_PEGASUS_TOOLS = {"seqexec": "pegasus-cluster", "mpiexec": "pegasus-mpi-cluster"}
_SHEAF_TOOLS = {"seqexec": "sheaf-cluster", "mpiexec": "sheaf-mpi-cluster"}

SUMMED = frozenset({("pegasus", "runtime"), ("pegasus", "maxwalltime"), ("globus", "maxwalltime")})
MAXED = frozenset({("pegasus", "memory"), ("condor", "request_memory")})
_PER_TASK = frozenset({"clusters.size", "clusters.num", "clusters.maxruntime", "job.aggregator",
                       "pmc_request_memory", "pmc_request_cpus", "pmc_priority", "pmc_task_arguments"})


@dataclass(frozen=True, slots=True)
class AggregatorTool:
    name: str                # seqexec | mpiexec | decaf
    executable: str          # pfn (decaf: the JSON file's basename)
    source: str              # where it came from, for -v
    profiles: Mapping[str, Mapping[str, str]] = EMPTY


@dataclass(slots=True)
class AggregatorResolver:
    tc: TransformationCatalog | None
    sc: SiteCatalog | None
    options: Options
    warnings: list[str]
    _cache: dict[tuple[str, str], AggregatorTool | None] = field(default_factory=dict)

    def resolve(self, site: str, name: str) -> AggregatorTool | None:
        key = (site, name)
        if key not in self._cache:
            found = self._find(site, name)
            if found is None:
                self.warnings.append(self._missing(site, name))
            self._cache[key] = found
        return self._cache[key]

    def _find(self, site: str, name: str) -> AggregatorTool | None:
        entry = self._catalog_entry(site, name)
        if entry is not None or name == "decaf":
            return entry
        site_entry = self.sc.get(site) if self.sc is not None else None
        home = site_entry.profiles.get("env", EMPTY).get("PEGASUS_HOME") if site_entry else None
        embedded = self.embedded(site)
        if home:
            tool = posixpath.join(home, "bin", _PEGASUS_TOOLS[name])
            if not embedded or os.access(tool, os.X_OK):
                return AggregatorTool(name, tool, "PEGASUS_HOME")
            # the embedded engine runs the site on this host, where that Pegasus is not installed
            self.warnings.append(f"site '{site}': PEGASUS_HOME names {home}, but {tool} is not an "
                                 f"executable here; its clusters run {_SHEAF_TOOLS[name]}")
        if embedded:
            return AggregatorTool(name, _SHEAF_TOOLS[name], "embedded engine")
        return None

    def _catalog_entry(self, site: str, name: str) -> AggregatorTool | None:
        if self.tc is None:
            return None
        namespace, tname = _ENTRIES[name]
        t = self.tc.lookup(namespace, tname, None)
        entry = t.site(site) if t is not None else None
        if t is None or entry is None:
            swapped = self.tc.lookup(tname, namespace, None)
            if swapped is not None and swapped.site(site) is not None:
                self.warnings.append(
                    f"transformation '{swapped.fqn}' is not the {name} aggregator (namespace and name are "
                    f"swapped); name it '{namespace}::{tname}' to use it on site '{site}'")
            return None
        where = f"transformation '{t.fqn}' on site '{site}'"
        pfn = posixpath.basename(entry.pfn) if name == "decaf" else installed_path(entry.pfn, where)
        return AggregatorTool(name, pfn, f"transformation {t.fqn}",
                              merge_profiles(t.profiles, entry.profiles))

    def embedded(self, site: str) -> bool:
        if self.options.embedded_sites is not None:
            return site in self.options.embedded_sites
        if site == "local" or self.sc is None:
            return True
        site_entry = self.sc.get(site)
        return site_entry is not None and not site_entry.grids

    def _missing(self, site: str, name: str) -> str:
        if name == "decaf":
            return (f"site '{site}': no 'dataflow::decaf' entry in the transformation catalog; "
                    "its decaf clusters are not made (jobs stay unclustered)")
        return (f"site '{site}': no executable for the {name} aggregator (no '{'::'.join(_ENTRIES[name])}' "
                "entry, no PEGASUS_HOME, not run by the embedded engine); its jobs stay unclustered")

    def arguments(self, aggregator: AggregatorTool, profiles: Profiles, cluster: str) -> tuple[str, ...]:
        """The aggregator's command-line options for a cluster with these (combined) profiles."""
        args: list[str] = []
        if aggregator.name == "seqexec" and self.options.first_job_fail:
            args.append("-f")
        if aggregator.name == "mpiexec":
            wall = profiles.get("globus", EMPTY).get("maxwalltime") or profiles.get("pegasus", EMPTY).get(
                "maxwalltime")
            if wall:
                args += ["--max-wall-time", wall]
        extra = profiles.get("pegasus", EMPTY).get("job.aggregator.arguments", "")
        try:
            args += shlex.split(extra)
        except ValueError as exc:
            raise PlanningError(f"cluster '{cluster}': job.aggregator.arguments do not parse ({exc})",
                                rule="job.aggregator.arguments is a shell-quoted argument list",
                                value=extra) from None
        return tuple(args)


def combine(task_profiles: Sequence[Profiles], label_key: str, cluster: str,
            notes: list[str]) -> Profiles:
    """The cluster job's profiles from its tasks' (module docstring)."""
    distinct: dict[int, tuple[Profiles, int, int]] = {}  # id -> (profiles, count, last position)
    for pos, profiles in enumerate(task_profiles):
        seen = distinct.get(id(profiles))
        distinct[id(profiles)] = (profiles, (seen[1] if seen else 0) + 1, pos)
    layers = sorted(distinct.values(), key=lambda item: item[2])  # by last occurrence
    total = len(task_profiles)
    values: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for profiles, count, _ in layers:
        for ns, entries in profiles.items():
            if ns == "selector":
                continue
            for key, value in entries.items():
                if ns == "pegasus" and (key in _PER_TASK or key == label_key):
                    continue
                values.setdefault((ns, key), []).append((value, count))
    result: Profiles = {}
    for (ns, key), found in values.items():
        result.setdefault(ns, {})[key] = _combine_one(ns, key, found, total, cluster, notes)
    return result


def _combine_one(ns: str, key: str, found: list[tuple[str, int]], total: int, cluster: str,
                 notes: list[str]) -> str:
    if (ns, key) in SUMMED:
        return _fmt(sum(_number(v, ns, key, cluster) * count for v, count in found))
    if (ns, key) in MAXED:
        return _maximum([v for v, _ in found])
    distinct = list(dict.fromkeys(v for v, _ in found))
    setters = sum(count for _, count in found)
    if len(distinct) > 1 or setters != total:
        why = "differs among its tasks" if len(distinct) > 1 else f"is set on {setters} of {total} tasks"
        notes.append(f"cluster {cluster}: {ns} profile '{key}' {why}; "
                     f"using the last task's value {found[-1][0]!r}")
    return found[-1][0]


def _number(raw: str, ns: str, key: str, cluster: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise PlanningError(f"cluster '{cluster}': {ns} profile '{key}' of a task is not a number",
                            rule=f"'{key}' is a number", value=raw) from None


def _maximum(raw: list[str]) -> str:
    distinct = list(dict.fromkeys(v.strip() for v in raw))
    try:
        numbers = [float(v) for v in distinct]
    except ValueError:
        return distinct[0] if len(distinct) == 1 else "max({" + ", ".join(distinct) + "})"
    best = max(range(len(numbers)), key=lambda i: numbers[i])
    return distinct[best]


def _fmt(x: float) -> str:
    """A sum as a profile value: an integer when whole, else at most 6 decimals (no float noise)."""
    x = round(x, 6)
    return str(int(x)) if x.is_integer() else f"{x:.6f}".rstrip("0")
