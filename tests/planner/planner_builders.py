"""Builders for planner tests: model objects made directly (no readers), and the real traces."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from sheaf.model import (
    Job,
    Properties,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
)
from sheaf.planner import ExecJob, ExecutableWorkflow, plan

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
TRACE_NAMES = (
    "montage-chameleon-2mass-005d-001.json",
    "seismology-chameleon-1000p-001.json",
    "1000genome-chameleon-22ch-250k-001.json",
    "bwa-chameleon-large-001.json",
    "epigenomics-chameleon-ilmn-6seq-50k-001.json",
)

Prof = Mapping[str, Mapping[str, str]]


def job(jid: str, name: str, *, ns: str | None = None, version: str | None = None,
        profiles: Prof | None = None, args: Sequence[str] = (), type_: str = "job") -> Job:
    kw = {} if profiles is None else {"profiles": {k: dict(v) for k, v in profiles.items()}}
    return Job(jid, name, ns, version, type_, tuple(args), **kw)  # type: ignore[arg-type]


def workflow(jobs: Iterable[Job], edges: Iterable[tuple[str, str]] = (), name: str = "wf") -> Workflow:
    wf = Workflow(name)
    for j in jobs:
        wf.jobs[j.id] = j
    for parent, child in edges:
        wf.add_dependency(parent, child)
    return wf


def catalog(*names: str | tuple[str | None, str, str | None], sites: Sequence[str] = ("condorpool",),
            profiles: Prof | None = None, site_profiles: Mapping[str, Prof] | None = None
            ) -> TransformationCatalog:
    tc = TransformationCatalog()
    for item in names:
        ns, name, version = (None, item, None) if isinstance(item, str) else item
        entries = tuple(TransformationSite(s, f"/opt/{s}/bin/{name}",
                                           profiles=(site_profiles or {}).get(s, {})) for s in sites)
        tc.add(Transformation(name, ns, version, entries, profiles=profiles or {}))
    return tc


def sites(*names: str, profiles: Mapping[str, Prof] | None = None, grid: Sequence[str] = ()) -> SiteCatalog:
    from sheaf.model import Grid

    sc = SiteCatalog()
    for n in names:
        grids = (Grid("batch", f"{n}.example.org", "slurm"),) if n in grid else ()
        sc.add(Site(n, grids=grids, profiles=(profiles or {}).get(n, {})))
    return sc


def props(**kw: str) -> Properties:
    return Properties({k.replace("__", "."): v for k, v in kw.items()})


def run(wf: Workflow, tc: TransformationCatalog | None = None, sc: SiteCatalog | None = None,
        properties: Properties | Mapping[str, str] | None = None, **kw: object) -> ExecutableWorkflow:
    p = properties if isinstance(properties, Properties) else Properties(dict(properties or {}))
    if sc is None:
        sc = sites("condorpool", "local")
    return plan(wf, tc=tc, sc=sc, rc=None, properties=p, **kw)  # type: ignore[arg-type]


def by_id(ew: ExecutableWorkflow) -> dict[str, ExecJob]:
    return {j.id: j for j in ew.jobs}


def tasks_of(ew: ExecutableWorkflow) -> list[list[str]]:
    return [j.task_ids for j in ew.jobs]


def blackdiamond(profiles: Prof | None = None) -> tuple[Workflow, TransformationCatalog]:
    ns, v = "diamond", "4.0"
    wf = workflow(
        [job("ID0000001", "preprocess", ns=ns, version=v, args=("-a", "preprocess")),
         job("ID0000002", "findrange", ns=ns, version=v),
         job("ID0000003", "findrange", ns=ns, version=v),
         job("ID0000004", "analyze", ns=ns, version=v)],
        [("ID0000001", "ID0000002"), ("ID0000001", "ID0000003"), ("ID0000002", "ID0000004"),
         ("ID0000003", "ID0000004")], name="blackdiamond")
    tc = catalog((ns, "preprocess", v), (ns, "findrange", v), (ns, "analyze", v), profiles=profiles)
    return wf, tc


def read_trace(name: str) -> Workflow:
    from sheaf.formats import read_workflow

    return read_workflow(TRACES / name)


def trace_catalog(wf: Workflow, *, sites_: Sequence[str] = ("condorpool",),
                  profiles: Prof | None = None) -> TransformationCatalog:
    keys = sorted({(j.namespace, j.name, j.version) for j in wf.jobs.values()}, key=repr)
    return catalog(*keys, sites=sites_, profiles=profiles)
