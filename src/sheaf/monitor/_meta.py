"""What a submit directory says about its jobs before they run: plan.json, braindump.yml and the DAG.

The loader fills the ``workflow``, ``job``, ``job_edge`` and ``task`` tables from these once, when a
database is created.  A DAG that ``sheaf plan`` did not write (no plan.json) still loads: every
node is a ``compute`` job of no transformation, SUBDAG EXTERNAL nodes are ``subdag`` jobs.
"""

from __future__ import annotations

__all__ = ["JobMeta", "RunMeta", "read_hooks", "read_meta", "run_ids"]

import getpass
import json
import os
import socket
from dataclasses import dataclass, field

from sheaf.engine import Dag


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
    jobs: list[JobMeta] = field(default_factory=list)
    task_transformations: dict[str, str] = field(default_factory=dict)


def _braindump(directory: str) -> dict[str, str]:
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


def _plan(directory: str) -> dict[str, dict[str, object]]:
    try:
        with open(os.path.join(directory, "plan.json"), encoding="utf-8") as handle:
            data = json.load(handle)
        return {str(j["id"]): j for j in data.get("jobs", []) if isinstance(j, dict) and "id" in j}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _job(dag: Dag, name: str, planned: dict[str, object] | None, directory: str) -> JobMeta:
    spec = dag.nodes[name]
    if planned is None:
        return JobMeta(name, "subdag" if spec.subdag else "compute", retries=spec.retries,
                       subwf_dir=spec.submit if spec.subdag else None)
    kind = str(planned.get("type") or "compute")
    tasks = tuple(str(t) for t in planned.get("tasks") or ())  # type: ignore[attr-defined]
    sub: str | None = None
    if spec.subdag:
        sub = spec.submit
    elif kind == "subworkflow":
        sub = os.path.join(directory, "jobs", "*", name + ".plan")  # where the nested plan goes
    agg = planned.get("aggregator")
    tr = planned.get("transformation")
    site = planned.get("site")
    return JobMeta(name, kind, str(tr) if tr else None, str(site) if site else None, tasks,
                   str(agg) if agg else None, spec.retries, sub)


def read_meta(dag: Dag, directory: str) -> RunMeta:
    brain = _braindump(directory)
    planned = _plan(directory)
    label = brain.get("dax_label") or os.path.basename(dag.path).removesuffix(".dag")
    meta = RunMeta(label, brain.get("dax"), brain.get("user") or getpass.getuser(),
                   brain.get("submit_hostname") or socket.gethostname(), brain.get("planner_arguments"))
    for name in dag.nodes:
        job = _job(dag, name, planned.get(name), directory)
        meta.jobs.append(job)
        if job.type_desc in ("compute", "cluster") and job.transformation:
            for task in job.tasks:
                meta.task_transformations[task] = job.transformation
    return meta


def _hook_list(raw: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        return ()
    return tuple((str(h["when"]), str(h["cmd"])) for h in raw
                 if isinstance(h, dict) and "when" in h and "cmd" in h)


def read_hooks(directory: str) -> tuple[tuple[tuple[str, str], ...], dict[str, tuple[tuple[str, str], ...]]]:
    """plan.json's hooks: the workflow's, and each job's that has any."""
    try:
        with open(os.path.join(directory, "plan.json"), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return (), {}
    if not isinstance(data, dict):
        return (), {}
    jobs = {str(j["id"]): _hook_list(j.get("hooks")) for j in data.get("jobs", [])
            if isinstance(j, dict) and j.get("hooks")}
    return _hook_list(data.get("hooks")), jobs


def run_ids(directory: str, fallback_label: str) -> tuple[str, str]:
    """``(wf_uuid, wf_id)`` as pegasus-monitord gives them to hooks: braindump's uuid, and its
    label and index (``blackdiamond-0``)."""
    brain = _braindump(directory)
    label = brain.get("dax_label") or fallback_label
    return brain.get("wf_uuid", ""), f"{label}-{brain.get('dax_index', '0')}"
