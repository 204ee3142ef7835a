"""Per-job facts the passes need, computed once, in arrays indexed by the job's graph id.

``JobTable`` holds, for job ``i`` (file order, the ``Graph`` numbering): its site, its
transformation key (``None`` for a sub-workflow job), its executable on that site, its effective
profiles, and the aggregator it asks for.

Effective profiles follow the model's precedence (properties < job < site catalog < transformation
catalog: transformation level, then its entry for the site).  Most jobs share their layers, so the
merge is cached by ``(transformation key, site, the job's own profiles)`` -- ``EMPTY`` by identity,
a job's own dicts by content (key order included) -- and jobs with equal inputs share one merged
dict.  **The dicts are shared: read-only for everyone** (the planner and codegen copy before
changing one).

The aggregator a job asks for has its own precedence (the Pegasus manual's "Specification of Method of
Execution"): property ``pegasus.clusterer.job.aggregator`` < the site's ``job.aggregator`` profile
< the job's < the transformation's (transformation level, then its entry for the site).

Executables: an installed entry's pfn is a path or a ``file://`` URL (``file:///opt/bin/keg`` runs
``/opt/bin/keg``); another scheme is a ``PlanningError`` naming it.  A stageable entry's pfn (a path,
``file://`` or ``http(s)://`` URL) is a source: the task's executable is that source, and
``JobTable.staged`` maps ``(site, transformation, source)`` to the name the file gets in the site's
working directory (``namespace-name-version``), which codegen transfers it to and makes executable.
Each transformation gets its own copy, named after it, as Pegasus names a staged executable after the
job's transformation: several transformations catalogued with one source file each run their own
name (a program that reads its ``argv[0]`` sees the transformation it was called as).

Compound transformations: a staged transformation's ``requires`` (Pegasus's compound transformation,
``add_requirement``: an interpreter and its script, Montage's ``mDiffFit`` calling ``mDiff`` and
``mFitplane``) are staged beside it, each named after its own transformation, as Pegasus's
InterPoolEngine stages a job's dependent executables: ``JobTable.required`` maps ``(site,
transformation)`` to the ``(source, file name)`` of each.  As in Pegasus, only a stageable entry of a
required transformation usable on the site is staged, and only for a job whose own executable is
staged (an installed one finds its companions installed); a required transformation that has no
such entry is left out, with a note.

Pegasus's glite and ssh styles: a job whose pegasus ``style`` is ``glite`` and that has no condor
``grid_resource`` gets ``grid_resource = <type> <scheduler> <contact>`` from its site's grid gateway
(the one for compute jobs -- or for the job type its selector ``grid.jobtype`` profile names, as
Pegasus selects it -- else one for any job type, else the first), as Pegasus's GLite style
builds it -- ``batch slurm me@login`` -- so that ``sheaf run`` sends it where Pegasus would; under
``ssh`` the gateway's wins over a ``grid_resource`` given, as Pegasus's SSH style builds it always.
As in Pegasus, such a job whose site has no gateway with a contact, or whose gateway names no batch
scheduler (none, ``fork`` or ``unknown``), cannot be planned.

Hints: a job's selector ``pfn`` profile (Pegasus 4's ``hints.pfn``) names the installed executable it
runs, "overriding any entries specified in the transformation catalog" (Pegasus's profile table): the
job runs that path (a path or ``file://`` URL), nothing is staged for it, and it needs no catalog entry
on its site -- pinned by ``execution.site`` or, without, on a selected site that has its transformation,
else on any selected site.

Containers: a transformation entry that names a ``container`` runs inside it (codegen wraps the
command).  As in Pegasus's transformation mapper, such an entry is usable on every site, not only on
the one it is catalogued for (the image carries the executable); an entry for the site itself wins,
then a stageable one, then a containerized one.  ``JobTable.containers`` maps ``(site,
transformation)`` to the catalog's ``Container``; a container the catalog does not define is a
``PlanningError`` naming it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sheaf.errors import PlanningError
from sheaf.model import (
    EMPTY,
    Container,
    Job,
    Profiles,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
    file_url_path,
    merge_profiles,
    url_scheme,
)
from sheaf.planner._naming import safe
from sheaf.planner._options import Options
from sheaf.planner._requests import check_requests
from sheaf.planner._sites import SiteSelector, check_known, local_site_layer

TKey = tuple[str | None, str, str | None]
Layers = Mapping[str, Mapping[str, str]]


@dataclass(slots=True)
class JobTable:
    jobs: list[Job]
    sites: list[str]
    tkeys: list[TKey | None]
    fqns: list[str]
    executables: list[str]
    profiles: list[Profiles]
    aggregators: list[str]
    #: stageable executables: (site, transformation, source path or URL) -> file name in the site's
    #: working directory
    staged: dict[tuple[str, str, str], str] = field(default_factory=dict)
    #: containerized transformations: (site, transformation) -> the container its tasks run in
    containers: dict[tuple[str, str], Container] = field(default_factory=dict)
    #: compound transformations: (site, transformation) -> (source, file name) of each stageable
    #: executable it requires, staged beside its own
    required: dict[tuple[str, str], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: notes for -v (what was decided and why)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.jobs)


@dataclass(slots=True)
class _SiteResolver:
    tc: TransformationCatalog | None
    sc: SiteCatalog | None
    prop_layer: Profiles
    options: Options
    selected: tuple[str, ...]
    selector: SiteSelector
    #: where a job runs when no selected site has its transformation (``local`` without ``--sites``)
    fallback: tuple[str, ...] = ()
    _transformations: dict[TKey, Transformation | None] = field(default_factory=dict)
    _candidates: dict[TKey, tuple[str, ...]] = field(default_factory=dict)
    _upper: dict[tuple[TKey | None, str], tuple[Profiles, str, str, str]] = field(default_factory=dict)
    _profiles: dict[tuple[TKey | None, str, object], tuple[Profiles, str]] = field(default_factory=dict)
    #: (site, transformation, source) -> the file name a stageable executable gets in the site's
    #: working directory
    staged: dict[tuple[str, str, str], str] = field(default_factory=dict)
    containers: dict[tuple[str, str], Container] = field(default_factory=dict)
    required: dict[tuple[str, str], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def transformation(self, job: Job, key: TKey) -> Transformation | None:
        if key in self._transformations:
            return self._transformations[key]
        found = self.tc.lookup(*key) if self.tc is not None else None
        if found is None and hinted_pfn(job):
            return None  # the job names its executable; not cached: other jobs may not
        if self.tc is not None and found is None:
            many = self.tc.candidates(*key)
            why = (f"ambiguous: {', '.join(t.fqn for t in many)} all match" if many
                   else "not in the transformation catalog")
            raise PlanningError(f"job '{job.id}' uses transformation '{job.transformation}', {why}",
                                rule="every compute job's transformation is in the catalog",
                                value=job.transformation, anchor=job.id)
        self._transformations[key] = found
        return found

    def candidates(self, job: Job, key: TKey) -> tuple[str, ...]:
        cached = self._candidates.get(key)
        if cached is not None:
            return cached
        t = self.transformation(job, key)
        found = self.selected if t is None else tuple(s for s in self.selected if self.runs_on(t, s))
        if not found and t is not None:
            found = tuple(s for s in self.fallback if self.runs_on(t, s))
        if not found:
            raise PlanningError(
                f"no selected site can run job '{job.id}': transformation '{job.transformation}' is not "
                f"installed on {', '.join(self.selected)}{self._mismatch(t)}",
                rule="a job runs on a selected site that has its transformation", value=job.id)
        self._candidates[key] = found
        return found

    def system(self, site: str) -> SystemInfo:
        found = self.sc.get(site) if self.sc is not None else None
        if found is None:
            return DEFAULT_SYSTEM
        return system_info(found.arch, found.os_type, found.os_release, found.os_version)

    def runs_on(self, t: Transformation, site: str) -> bool:
        return site_entry_of(t, site, self.system(site)) is not None

    def _mismatch(self, t: Transformation | None) -> str:
        """What a message adds when entries exist whose system does not match their site's."""
        if t is None:
            return ""
        for entry in t.sites:
            if entry.name in self.selected and _system_of(entry) != self.system(entry.name):
                pair = (_system_of(entry), self.system(entry.name))
                built, site = ("/".join(filter(None, info)) for info in pair)
                return f" (its entry for '{entry.name}' is built for {built}, the site is {site})"
        return ""

    def site_of(self, job: Job, key: TKey) -> str:
        pinned = None if job.profiles is EMPTY else job.profiles.get("selector", EMPTY).get("execution.site")
        pfn = hinted_pfn(job)
        if pinned:
            if self.options.submit_host_only and pinned != "local":
                raise PlanningError(
                    f"job '{job.id}' is pinned to site '{pinned}', but pegasus.code.generator = Shell runs "
                    "every job on the submit host (site local)",
                    rule="under the Shell code generator every job runs on site local", value=job.id)
            check_known(pinned, self.sc, f"the execution.site profile of job '{job.id}'")
            t = self.transformation(job, key)
            if t is not None and not pfn and not self.runs_on(t, pinned):
                raise PlanningError(
                    f"job '{job.id}' is pinned to site '{pinned}', where transformation "
                    f"'{job.transformation}' is not installed{self._mismatch(t)}",
                    rule="a job runs on a site that has its transformation", value=job.id)
            return str(pinned)
        if pfn:  # the selected sites with its transformation, else any (per job: not cached)
            t = self.transformation(job, key)
            found = tuple(site for site in self.selected if t is not None and self.runs_on(t, site))
            found = found or self.selected
            return found[0] if len(found) == 1 else self.selector.select(job, found)
        found = self.candidates(job, key)
        return found[0] if len(found) == 1 else self.selector.select(job, found)

    def upper(self, job: Job, key: TKey | None, site: str) -> tuple[Profiles, str, str, str]:
        """(site + transformation layers merged, executable, TC's aggregator, site's aggregator)."""
        cached = self._upper.get((key, site))
        if cached is not None:
            return cached
        site_entry = self.sc.get(site) if self.sc is not None else None
        site_layer = site_entry.profiles if site_entry is not None else EMPTY
        if site == "local":
            site_layer = local_site_layer(site_layer, os.environ)
        t = self.transformation(job, key) if key is not None else None
        t_layer = t.profiles if t is not None else EMPTY
        entry = (site_entry_of(t, site, self.system(site)) if t is not None and not job.is_subworkflow
                 else None)
        entry_layer = entry.profiles if entry is not None else EMPTY
        executable = _executable(job, t, entry, site, self.staged)
        if entry is not None and entry.type == "stageable" and t is not None and t.requires:
            self.required[(site, job.transformation)] = self._required(t, site)
        if entry is not None and entry.container is not None and t is not None:
            self.containers[(site, job.transformation)] = self.container(t, entry)
        tc_agg = _agg(entry_layer) or _agg(t_layer)
        result = (merge_profiles(site_layer, t_layer, entry_layer), executable, tc_agg, _agg(site_layer))
        self._upper[(key, site)] = result
        return result

    def _required(self, t: Transformation, site: str) -> tuple[tuple[str, str], ...]:
        """(source, file name) of each executable the staged transformation ``t`` requires on ``site``
        (module docstring)."""
        out = []
        for fqn in t.requires:
            namespace, _, rest = fqn.rpartition("::")
            name, _, version = rest.partition(":")
            found = self.tc.lookup(namespace or None, name, version or None) if self.tc is not None else None
            entry = site_entry_of(found, site, self.system(site)) if found is not None else None
            if found is None or entry is None or entry.type != "stageable":
                self.notes.append(f"transformation '{t.fqn}' requires '{fqn}', which has no stageable entry "
                                  f"for site '{site}': not staged beside it")
                continue
            staged = safe("-".join(p for p in (found.namespace, found.name, found.version) if p))
            out.append((file_url_path(entry.pfn) or entry.pfn, staged))
        return tuple(out)

    def container(self, t: Transformation, entry: TransformationSite) -> Container:
        found = self.tc.containers.get(entry.container or "") if self.tc is not None else None
        if found is None:
            raise PlanningError(f"transformation '{t.fqn}' on site '{entry.name}' names container "
                                f"'{entry.container}', which the transformation catalog does not define",
                                rule="a transformation's container is in the catalog's containers",
                                value=entry.container)
        return found

    def profiles_of(self, job: Job, key: TKey | None, site: str) -> tuple[Profiles, str, str]:
        """(effective profiles, executable, aggregator) of ``job`` on ``site``."""
        upper, executable, tc_agg, site_agg = self.upper(job, key, site)
        own = job.profiles
        # Jobs without profiles share EMPTY (keyed by identity); jobs with their own dicts are keyed by
        # content, so the 10^6 jobs of a generated workflow that all say runtime=30 share one merge.
        cache_key = (key, site, 0 if own is EMPTY else _frozen(own))
        cached = self._profiles.get(cache_key)
        if cached is None:
            merged = self.glite_resource(merge_profiles(self.prop_layer, own, upper), site)
            check_requests(merged, job.id)  # once per distinct merge: what `sheaf run` would refuse
            agg = tc_agg or _agg(own) or site_agg or self.options.aggregator
            cached = (merged, agg.strip().lower())  # checked when a cluster uses it (aggregator_for)
            self._profiles[cache_key] = cached
        return cached[0], executable, cached[1]


    def glite_resource(self, merged: Profiles, site: str) -> Profiles:
        """``merged`` with condor ``grid_resource`` from the site's grid gateway when pegasus ``style``
        is ``glite`` and no ``grid_resource`` is given, or ``ssh`` (module docstring)."""
        style = ((merged.get("pegasus") or EMPTY).get("style") or "").strip().lower()
        if style not in ("glite", "ssh") or (style == "glite" and "grid_resource" in (merged.get("condor")
                                                                                     or EMPTY)):
            return merged
        entry = self.sc.get(site) if self.sc is not None else None
        grids = entry.grids if entry is not None else ()
        wanted = ((merged.get("selector") or EMPTY).get("grid.jobtype") or "compute").strip().lower()
        gateway = next((g for g in grids if (g.job_type or "").lower() == wanted), None) or next(
            (g for g in grids if not g.job_type), None) or (grids[0] if grids else None)
        rule = (f"a job of pegasus style {style}"
                + (" with no condor grid_resource" if style == "glite" else "")
                + " runs through a grid gateway of its site with a contact and a batch scheduler")
        if gateway is None or not gateway.contact:
            raise PlanningError(f"site '{site}' has no grid gateway with a contact for its {style} style's "
                                f"{wanted} jobs", rule=rule, value=site)
        scheduler = (gateway.scheduler or "").strip().lower()
        if scheduler in ("", "fork", "unknown"):
            raise PlanningError(f"site '{site}': the grid gateway for its {style} style's {wanted} jobs "
                                "names no batch scheduler", rule=rule, value=gateway.scheduler or "")
        resource = f"{gateway.type.lower()} {scheduler} {gateway.contact}"
        return {**merged, "condor": {**(merged.get("condor") or EMPTY), "grid_resource": resource}}


def hinted_pfn(job: Job) -> str | None:
    """The job's selector ``pfn`` profile (Pegasus 4's ``hints.pfn``): the installed executable it runs,
    over any transformation-catalog entry (module docstring)."""
    if job.profiles is EMPTY:
        return None
    return job.profiles.get("selector", EMPTY).get("pfn") or None


def _frozen(profiles: Layers) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    return tuple([(ns, tuple(entries.items())) for ns, entries in profiles.items()])


def _agg(layer: Layers) -> str:
    return str(layer.get("pegasus", EMPTY).get("job.aggregator", ""))


#: a site's or an entry's system, as Pegasus compares them: architecture, OS, OS release and version
SystemInfo = tuple[str, str, str, str]
#: Pegasus's default system information, for a site or an entry that gives none
DEFAULT_SYSTEM: SystemInfo = ("x86_64", "linux", "", "")


def system_info(arch: str | None, os_type: str | None, release: str | None, version: str | None
                ) -> SystemInfo:
    return ((arch or "x86_64").lower(), (os_type or "linux").lower(), (release or "").lower(),
            (version or "").lower())


def _system_of(entry: TransformationSite) -> SystemInfo:
    return system_info(entry.arch, entry.os_type, entry.os_release, entry.os_version)


def site_entry_of(t: Transformation, site: str, system: SystemInfo) -> TransformationSite | None:
    """The entry a job on ``site`` (of ``system``) uses: the site's own, else a stageable one, else a
    containerized one (both usable anywhere, module docstring) -- of the site's system each, as Pegasus's
    transformation mapper matches an entry's architecture, OS, release and version to the site's."""
    fits = [e for e in t.sites if _system_of(e) == system]
    entry = next((e for e in fits if e.name == site), None)
    if entry is None:
        entry = next((e for e in fits if e.type == "stageable"), None)
    if entry is None:
        entry = next((e for e in fits if e.container is not None), None)
    return entry


def _executable(job: Job, t: Transformation | None, entry: TransformationSite | None, site: str,
                staged: dict[tuple[str, str, str], str]) -> str:
    """What the job runs on ``site``: the catalog entry's path (a ``file://`` PFN as its path; inside
    the container for a containerized entry), or for a stageable entry its source, recorded in
    ``staged`` for codegen to transfer (module docstring)."""
    if job.is_subworkflow:
        return job.file or job.name
    if t is None or entry is None:
        return job.name
    if entry.type == "stageable":
        source = file_url_path(entry.pfn) or entry.pfn
        name = "-".join(p for p in (t.namespace, t.name, t.version) if p)
        staged[(site, job.transformation, source)] = safe(name)
        return source
    return installed_path(entry.pfn, f"transformation '{t.fqn}' on site '{entry.name}'")


def installed_path(pfn: str, what: str) -> str:
    """The path of an installed executable: a path as written, a ``file://`` URL's path; any other
    URL is a ``PlanningError`` naming its scheme (only stageable executables are fetched)."""
    scheme = url_scheme(pfn)
    if scheme is None:
        return pfn
    path = file_url_path(pfn)
    if path is None:
        why = "a file:// URL on another host" if scheme == "file" else f"a {scheme}:// URL"
        raise PlanningError(f"{what} is installed at {why}, which is not a path on that site",
                            rule="an installed executable's pfn is a path or a file:// URL on the site "
                                 "(type: stageable to have it transferred)", value=pfn)
    return path


def resolve_jobs(workflow: Workflow, *, tc: TransformationCatalog | None, sc: SiteCatalog | None,
                 prop_layer: Profiles, options: Options, selected: Sequence[str],
                 selector: SiteSelector, fallback: Sequence[str] = ()) -> JobTable:
    """Sites, profiles, executables and aggregators of every job (module docstring)."""
    resolver = _SiteResolver(tc, sc, prop_layer, options, tuple(selected), selector, tuple(fallback))
    table = JobTable([], [], [], [], [], [], [])
    # Fast path: a job that is not pinned, whose transformation has one candidate site, is settled by
    # its transformation and its own profiles' content (most jobs of large workflows).
    settled: dict[object, tuple[str, str, str, Profiles, str]] = {}
    single: dict[TKey, str] = {}  # transformations with one candidate site (jobs not pinned go there)
    fqn_of: dict[TKey, str] = {}
    add_job, add_site, add_tkey, add_fqn = (table.jobs.append, table.sites.append, table.tkeys.append,
                                            table.fqns.append)
    add_executable, add_profiles, add_agg = (table.executables.append, table.profiles.append,
                                             table.aggregators.append)
    for job in workflow.jobs.values():
        if job.is_subworkflow:
            merged, executable, agg = resolver.profiles_of(job, None, "local")
            known: tuple[str, str, str, Profiles, str] = ("local", job.name, executable, merged, agg)
            key: TKey | None = None
        else:
            key = (job.namespace, job.name, job.version)
            known = _settle(job, key, settled, single, fqn_of, resolver)
        add_job(job)
        add_tkey(key)
        add_site(known[0])
        add_fqn(known[1])
        add_executable(known[2])
        add_profiles(known[3])
        add_agg(known[4])
    table.staged = resolver.staged
    table.containers = resolver.containers
    table.required = resolver.required
    table.notes.extend(resolver.notes)
    return table


def _settle(job: Job, key: TKey, settled: dict[object, tuple[str, str, str, Profiles, str]],
            single: dict[TKey, str], fqn_of: dict[TKey, str],
            resolver: _SiteResolver) -> tuple[str, str, str, Profiles, str]:
    """(site, fqn, executable, profiles, aggregator) of a compute job, from the fast path if it can."""
    own = job.profiles
    ck = key if own is EMPTY else (None if "selector" in own else (key, _frozen(own)))
    known = settled.get(ck) if ck is not None else None
    if known is None:
        one = single.get(key) if ck is not None else None
        site = one if one is not None else resolver.site_of(job, key)
        merged, executable, agg = resolver.profiles_of(job, key, site)
        pfn = hinted_pfn(job)
        if pfn:
            executable = installed_path(pfn, f"the selector pfn profile of job '{job.id}'")
        fqn = fqn_of.setdefault(key, job.transformation)
        known = (site, fqn, executable, merged, agg)
        if ck is not None and key not in single:
            found = resolver.candidates(job, key)  # computed by site_of already: cached
            if len(found) == 1:
                single[key] = found[0]
        if ck is not None and key in single:
            settled[ck] = known
    return known
