"""``plan.json``: the machine-readable record of the executable workflow (docs/command-line.md).

Format ``sheaf-plan/1``: ``workflow``, ``jobs`` (id, type, site, transformation, level, tasks,
aggregator, profiles) and ``edges`` as ``[parent id, child id]`` pairs, in plan order.  Every job's
``profiles`` has the four namespaces ``pegasus``, ``condor``, ``dagman``, ``env`` (empty when
unused), plus any other namespace the job has (``globus``, ``selector``).  After the contract's keys
the record also names the ``sites``, ``output_sites`` and ``clustering`` the plan was made with, and
``options``: the pegasus-plan options that later passes act on (``staging_sites``, ``output_dir``,
``cleanup``, ``input_dirs``, ``force``, ``random_dir``, ``basename``, ``submit_dir``; additive keys);
each job that runs in a container has its ``container`` (``name``, ``type``, ``image`` as
catalogued, and ``image_site`` and ``bypass`` when the catalog sets them; the key is absent for
the others).  ``hooks``, at the top and on a job whose tasks have any: the shell hooks to run
(``{"when": start|on_error|on_success|at_end|all, "cmd": ...}``, the conditions of Pegasus's
notifications file), which ``sheaf.monitor`` runs while the DAG does -- none when the planner found
notifications turned off (``ExecutableWorkflow.notifications``).  ``runtimes``, on a job whose
tasks have a pegasus ``runtime`` profile: each task's, in ``tasks``' order (``null`` for a task without
one), what ``sheaf predict`` reads.  ``bytes``, on a stage-in, stage-out or inter-site job: what
its transfer list moves, the sum of its files' sizes as the workflow states them (a use's ``size`` or
its metadata's, WfCommons ``sizeInBytes``), and ``unknown_sizes``, when some of its files have none:
how many, each counted 0 bytes -- ``sheaf predict`` charges the bytes at the model's bandwidth.
``autocluster``, in a plan clustered automatically only: what was
chosen per group and the predicted makespans (docs/planning.md).

Encoded with msgspec from slotted structs: 10^6 jobs take about a second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from sheaf.model import Container
from sheaf.planner import Task

FORMAT = "sheaf-plan/1"
FOUR = ("pegasus", "condor", "dagman", "env")


class PlanJobRecord(msgspec.Struct, omit_defaults=True):  # a key with a default is absent when None
    id: str
    type: str
    site: str | None
    transformation: str | None
    level: int
    tasks: list[str]
    aggregator: str | None
    profiles: dict[str, dict[str, str]]
    container: dict[str, str | bool] | None = None
    hooks: list[dict[str, str]] | None = None
    runtimes: list[float | None] | None = None
    bytes: int | None = None
    unknown_sizes: int | None = None


class PlanRecord(msgspec.Struct, omit_defaults=False):
    format: str
    workflow: str
    jobs: list[PlanJobRecord]
    edges: list[tuple[str, str]]
    sites: list[str]
    output_sites: list[str]
    clustering: list[str]
    options: dict[str, object] = msgspec.field(default_factory=dict)
    hooks: list[dict[str, str]] = msgspec.field(default_factory=list)


# the 5.0 YAML's hook ``_on`` -> the condition Pegasus's notifications file (and pegasus-monitord) use
_WHEN = {"start": "start", "error": "on_error", "success": "on_success", "end": "at_end", "all": "all"}


def hook_records(*sources: Mapping[str, Any]) -> list[dict[str, str]]:
    """The shell hooks of ``sources`` (a workflow's or jobs' ``hooks``) as ``{"when", "cmd"}`` records,
    in Pegasus's notification vocabulary (``start``, ``on_error``, ``on_success``, ``at_end``,
    ``all``); ``never`` hooks and duplicates are dropped."""
    out: list[dict[str, str]] = []
    for hooks in sources:
        for hook in hooks.get("shell") or ():
            if isinstance(hook, Mapping) and hook.get("_on") in _WHEN and hook.get("cmd"):
                record = {"when": _WHEN[str(hook["_on"])], "cmd": str(hook["cmd"])}
                if record not in out:
                    out.append(record)
    return out


def task_runtimes(tasks: Sequence[Task]) -> list[float | None] | None:
    """Each task's pegasus ``runtime`` profile in seconds (None where absent or not a number >= 0);
    None when no task has one."""
    out: list[float | None] = []
    for task in tasks:
        text = task.profiles.get("pegasus", {}).get("runtime")
        try:
            value = float(text) if text is not None else None
        except ValueError:
            value = None
        out.append(value if value is not None and math.isfinite(value) and value >= 0 else None)
    return out if any(value is not None for value in out) else None


def container_record(container: Container | None) -> dict[str, str | bool] | None:
    """name, type, image; ``image_site`` and ``bypass`` only when the catalog sets them."""
    if container is None:
        return None
    record: dict[str, str | bool] = {"name": container.name, "type": container.type, "image": container.image}
    if container.image_site:
        record["image_site"] = container.image_site
    if container.bypass:
        record["bypass"] = True
    return record


def contract_profiles(profiles: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """The four namespaces always, then any other non-empty one (a copy: records never share)."""
    out: dict[str, dict[str, str]] = {ns: dict(profiles.get(ns) or {}) for ns in FOUR}
    for ns, entries in profiles.items():
        if ns not in out and entries:
            out[ns] = dict(entries)
    return out


def encode_plan(workflow: str, records: list[PlanJobRecord], ids: Sequence[str],
                edges: Sequence[tuple[int, int]], sites: Sequence[str], output_sites: Sequence[str],
                clustering: Sequence[str], options: Mapping[str, object] | None = None,
                hooks: list[dict[str, str]] | None = None,
                autocluster: Mapping[str, Any] | None = None) -> bytes:
    """plan.json's bytes (``ids``: the jobs' ids by index, which ``edges`` hold)."""
    record = PlanRecord(FORMAT, workflow, records, [(ids[p], ids[c]) for p, c in edges],
                        list(sites), list(output_sites), list(clustering), dict(options or {}), hooks or [])
    text = msgspec.json.encode(record)
    if autocluster:  # only a plan that clustered automatically has the key
        text = text[:-1] + b',"autocluster":' + msgspec.json.encode(autocluster) + b"}"
    return text + b"\n"
