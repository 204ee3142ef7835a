"""What a submit directory says about its jobs before they run: plan.json, braindump.yml and the DAG.

The loader fills the ``workflow``, ``job``, ``job_edge`` and ``task`` tables from these once, when a
database is created.  A DAG that ``sheaf plan`` did not write (no plan.json) still loads: every
node is a ``compute`` job of no transformation, SUBDAG EXTERNAL nodes are ``subdag`` jobs.

A plan ``sheaf plan --group-size`` wrote (``grid/groups.json``) is a two-level run, as DAGMan sees
it: the outer DAG's jobs are its group DAG jobs, each a ``subdag`` whose DAG is the group's
``.gdag`` file (so the views walk into them as into SUBDAGs), and a group DAG's jobs (or its
rescue's) are the plan.json jobs of that group only.
"""

from __future__ import annotations

__all__ = ["SUBWORKFLOW_TRANSFORMATION", "JobMeta", "Plan", "PlanJob", "PlanProfiles", "RunMeta", "braindump",
           "plan_json", "read_hooks", "read_meta", "run_ids"]

import getpass
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from sheaf.engine import Dag

#: what a sub-workflow job's runs are recorded under, as pegasus-statistics names a DAG's
SUBWORKFLOW_TRANSFORMATION = "condor::dagman"


@dataclass(frozen=True, slots=True)
class JobMeta:
    name: str
    type_desc: str
    transformation: str | None = None
    site: str | None = None
    tasks: tuple[str, ...] = ()
    aggregator: str | None = None
    retries: int = 0
    subwf_dir: str | None = None  # a SUBDAG's DAG file, a sub-workflow job's submit directory


@dataclass(slots=True)
class RunMeta:
    label: str
    dax_file: str | None
    user: str
    hostname: str
    planner_arguments: str | None
    wf_uuid: str = ""  # the plan's, as Pegasus's tools name a workflow (empty: a DAG sheaf did not plan)
    jobs: list[JobMeta] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)


def braindump(directory: str) -> dict[str, str]:
    """``braindump.yml`` of a submit directory as key -> value text (empty when absent)."""
    out: dict[str, str] = {}
    try:
        with open(os.path.join(directory, "braindump.yml"), encoding="utf-8") as handle:
            for line in handle:
                key, sep, value = line.partition(":")
                if sep:
                    out[key.strip()] = value.strip().strip('"')
    except OSError:
        pass
    return out


class PlanProfiles(msgspec.Struct):
    """The profile namespaces read of a plan.json job: the others (``env``: most of the file) are
    skipped unread."""

    pegasus: Any = None
    condor: Any = None


class PlanJob(msgspec.Struct):
    """What sheaf reads back of a plan.json job (the monitor, ``sheaf predict``); its other keys are
    skipped unread.  Values are as the file has them (``Any``): readers convert."""

    id: Any = None
    type: Any = None
    transformation: Any = None
    site: Any = None
    tasks: Any = None
    aggregator: Any = None
    hooks: Any = None
    level: Any = 0
    runtimes: Any = None
    bytes: Any = None
    unknown_sizes: Any = None
    profiles: PlanProfiles | None = None


class Plan(msgspec.Struct):
    jobs: list[PlanJob] | None = None
    edges: Any = None
    hooks: Any = None
    options: Any = None  # the command line's options and where registration writes (``replica_output``)


_plan_decoder = msgspec.json.Decoder(Plan)
_JOB_KEYS = frozenset(PlanJob.__struct_fields__)

# the last plan.json decoded, by (path, inode, size, mtime): the loader reads it twice as it starts
# (the hooks, the jobs); callers only read what it returns
_LAST_PLAN: list[tuple[tuple[object, ...], Plan | None]] = []


def plan_json(directory: str) -> Plan | None:
    """plan.json's jobs, edges and hooks (None when absent or unreadable).  Decoded into
    :class:`Plan`, which skips what the monitor does not read, most of a job's record being its
    profiles (its environment)."""
    path = os.path.join(directory, "plan.json")
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
            if _LAST_PLAN and _LAST_PLAN[0][0] == key:
                return _LAST_PLAN[0][1]
            data = handle.read()
        try:
            plan: Plan | None = _plan_decoder.decode(data)
        except msgspec.ValidationError:  # not the shape sheaf plan writes: keep what can be read
            plan = _lenient(msgspec.json.decode(data))
    except (OSError, msgspec.DecodeError):
        return None
    _LAST_PLAN[:] = [(key, plan)]
    return plan


def _lenient(data: object) -> Plan | None:
    """A plan.json of another shape, as far as it reads: its jobs that are objects, if "jobs" is a list."""
    if not isinstance(data, dict):
        return None
    jobs = data.get("jobs")
    kept = [_lenient_job(j) for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else None
    return Plan(kept, data.get("edges"), data.get("hooks"), data.get("options"))


def _lenient_job(job: dict[str, Any]) -> PlanJob:
    fields = {k: v for k, v in job.items() if k in _JOB_KEYS}
    profiles = fields.pop("profiles", None)
    if isinstance(profiles, dict):
        fields["profiles"] = PlanProfiles(profiles.get("pegasus"), profiles.get("condor"))
    return PlanJob(**fields)


def _dag_lines(dag_path: str) -> tuple[dict[str, str], dict[str, int]]:
    """``(SUBDAG EXTERNAL node -> DAG file, RETRY node -> retries)``: a scan of the DAG's lines, a
    tenth of what parsing it costs (the loader runs beside the engine: it spends little)."""
    subdags: dict[str, str] = {}
    retries: dict[str, int] = {}
    base = os.path.dirname(dag_path)
    with open(dag_path, "rb") as handle:
        for raw in handle:
            if raw.startswith((b"RETRY ", b"SUBDAG ")):
                words = raw.decode("utf-8", "replace").split()
                if words[0] == "RETRY" and len(words) >= 3 and words[2].isdigit():
                    retries[words[1]] = int(words[2])
                elif len(words) >= 4 and words[1].upper() == "EXTERNAL":
                    subdags[words[2]] = os.path.join(base, words[3])
    return subdags, retries


def _planned_job(raw: PlanJob, subdags: dict[str, str], retries: dict[str, int],
                 directory: str) -> JobMeta:
    name = str(raw.id)
    kind = str(raw.type or "compute")
    sub: str | None = subdags.get(name)
    if sub is None and kind == "subworkflow":
        sub = os.path.join(directory, "jobs", "*", name + ".plan")  # where the nested plan goes
    agg, tr, site = raw.aggregator, raw.transformation, raw.site
    return JobMeta(name, kind, str(tr) if tr else None, str(site) if site else None,
                   tuple(map(str, raw.tasks or ())), str(agg) if agg else None, retries.get(name, 0), sub)


def _dag_jobs(dag: Dag) -> list[JobMeta]:
    return [JobMeta(n, "subdag" if s.subdag else "compute", retries=s.retries,
                    subwf_dir=s.submit if s.subdag else None) for n, s in dag.nodes.items()]


def read_meta(dag_path: str, directory: str, parse: Callable[[], Dag | None]) -> RunMeta:
    """The run's identity, jobs and edges: from plan.json and a scan of the DAG when ``sheaf plan``
    wrote them, else from the DAG (``parse``); with no jobs when neither can be read (the journal's
    records then name the nodes)."""
    brain = braindump(directory)
    label = brain.get("dax_label") or os.path.basename(dag_path).removesuffix(".dag")
    meta = RunMeta(label, brain.get("dax"), brain.get("user") or getpass.getuser(),
                   brain.get("submit_hostname") or socket.gethostname(), brain.get("planner_arguments"),
                   brain.get("wf_uuid") or "")
    plan = plan_json(directory)
    groups = _read_groups(directory)
    if groups is not None:
        from sheaf.codegen import group_of

        if os.path.basename(dag_path) == groups.get("dag"):
            return _outer_meta(meta, dag_path, groups, parse)
        plan = _group_plan(plan, groups["groups"].get(group_of(dag_path) or ""))
    if plan is not None and plan.jobs is not None and os.path.isfile(dag_path):
        subdags, retries = _dag_lines(dag_path)
        meta.jobs = [_planned_job(j, subdags, retries, directory) for j in plan.jobs if j.id is not None]
        meta.edges = [(str(p), str(c)) for p, c in plan.edges or ()]
        return meta
    dag = parse()
    if dag is not None:
        meta.jobs = _dag_jobs(dag)
        meta.edges = [(p, c) for p, children in dag.children.items() for c in children]
    return meta


def _read_groups(directory: str) -> dict[str, Any] | None:
    """The grouped plan's record (``grid/groups.json``), None for a plan of one DAG.  Its reader is
    imported only when the file is there: importing it loads the codegen package, at the start of
    the loader beside every run, and few plans are grouped."""
    if not os.path.exists(os.path.join(directory, "grid", "groups.json")):
        return None
    from sheaf.codegen import read_groups

    return read_groups(directory)


def _group_plan(plan: Plan | None, members: object) -> Plan | None:
    """plan.json as a group DAG sees it: the jobs of the group (``members``) and the edges among them."""
    if plan is None or not isinstance(members, list) or plan.jobs is None:
        return plan
    kept = set(members)
    return Plan([j for j in plan.jobs if j.id in kept],
                [(p, c) for p, c in plan.edges or () if p in kept and c in kept])


def _outer_meta(meta: RunMeta, dag_path: str, groups: dict[str, Any],
                parse: Callable[[], Dag | None]) -> RunMeta:
    """A grouped plan's outer DAG: one ``subdag`` job per group, its DAG the group's ``.gdag``."""
    from sheaf.codegen import group_dag

    dag = parse()
    if dag is None:
        return meta
    stem = dag_path.removesuffix(".dag")
    meta.jobs = [JobMeta(name, "subdag", retries=spec.retries,
                         subwf_dir=group_dag(stem, name) if name in groups["groups"] else None)
                 for name, spec in dag.nodes.items()]
    meta.edges = [(p, c) for p, children in dag.children.items() for c in children]
    return meta


def _hook_list(raw: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        return ()
    return tuple((str(h["when"]), str(h["cmd"])) for h in raw
                 if isinstance(h, dict) and "when" in h and "cmd" in h)


def read_hooks(directory: str) -> tuple[tuple[tuple[str, str], ...], dict[str, tuple[tuple[str, str], ...]]]:
    """plan.json's hooks: the workflow's, and each job's that has any."""
    plan = plan_json(directory)
    if plan is None:
        return (), {}
    jobs = {str(j.id): _hook_list(j.hooks) for j in plan.jobs or () if j.id is not None and j.hooks}
    return _hook_list(plan.hooks), jobs


def run_ids(directory: str, fallback_label: str) -> tuple[str, str]:
    """``(wf_uuid, wf_id)`` as pegasus-monitord gives them to hooks: braindump's uuid, and its
    label and index (``blackdiamond-0``)."""
    brain = braindump(directory)
    label = brain.get("dax_label") or fallback_label
    return brain.get("wf_uuid", ""), f"{label}-{brain.get('dax_index', '0')}"
