"""Group DAGs: a planned DAG cut into groups whose steps run at one site, plus an outer DAG of group jobs.

The USCMS report's recipe: jobs are batched into *group DAGs* (stage-in, run, stage-out, clean up:
all at one site), and an outer DAG's nodes are the group DAG jobs, each matched to a site as a
whole.  ``write_groups(directory, size)`` turns a directory ``sheaf plan`` wrote into that shape;
``sheaf plan --group-size`` runs it in ``write_plan``'s staging directory, before that directory is
renamed into place, so a grouped plan is written in one go (nothing half-written on an error or a kill).

Cutting (horizontal slices respecting dependencies):

* Compute and cluster jobs (``plan.json`` types) sorted by (level, DAG order) are cut every ``size``
  jobs: group numbers never decrease along an edge between compute jobs.
* A job before compute work (create-dir, stage-in) gets a copy in every group it feeds: each site
  makes its own directories and stages its own inputs, and no group waits for another's set-up.
* A job after it (stage-out, cleanup, register) joins the latest group among its parents (the
  first group when it has none).  So every edge between groups runs from an earlier group to a
  later one, and the outer DAG is acyclic by construction.

Written, beside the planned files:

* ``<wf>.group_NNNN.gdag`` per group: the group's lines of the planned DAG (its JOB/VARS/RETRY/
  SCRIPT/PRIORITY/CATEGORY lines, every SUBMIT-DESCRIPTION block and CONFIG/MAXJOBS line), the
  edges inside the group, and for every node ``VARS node +SheafSite="$ENV(SheafSite)"`` (and
  ``SheafSite=$ENV(SheafSite)`` in the shared descriptions' environment): node descriptions stay
  generic and learn their site from the group DAG's environment, as in the report.  Each group DAG
  names its own ``JOBSTATE_LOG <gdag>.jobstate.log`` (and ``<gdag>.status`` / ``<gdag>.dot`` when
  the planned DAG names a NODE_STATUS_FILE / DOT file), as DAGMan writes one of each per
  (sub-)DAG: group DAGs run at once beside the outer DAG's run, which keeps the planned DAG's
  ``JOBSTATE_LOG`` line (DAGMan writes a jobstate log only where the command is declared).
* ``grid/group_NNNN.sub``: the group DAG job with the report's ad (``+WANT_USCMS_MATCHMAKER``,
  ``Requirements = Is_USCMS_Site =?= True``, ``Rank = -CurMatches/MaxMatches``, ``environment =
  $$(SiteEnvironment);...``); with a group size of 1 also ``+SiteGatekeeper = "$$(GatekeeperURL)"``
  (the report's per-job binding).  ``grid/group_NNNN.condor.sub`` is the same job for a real pool,
  and ``grid/matchmaker-monitor.sh`` the report's monitor for it (``condor_q -l`` in, site ads out).
* ``<wf>.dag`` becomes the outer DAG (one node per group, edges between groups); the planned DAG is
  kept as ``<wf>.dag.flat``; ``grid/groups.json`` records the cut (and the collector's file when
  the property ``sheaf.collector.file`` named one, for ``sheaf run``).

A DAG with a FINAL node, splices or sub-DAGs is refused (``PlanningError``): their semantics do
not survive being cut.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sheaf.codegen._gridsubmit import condor_group_submit, group_submit, monitor_script
from sheaf.codegen._group_record import GROUPS_RECORD, group_dag
from sheaf.condor import Dag, parse_dag
from sheaf.errors import PlanningError
from sheaf.model import Graph

__all__ = ["GROUP_PROPERTY", "cut_groups", "write_groups"]

GROUP_PROPERTY = "sheaf.group.size"
_COMPUTE = frozenset({"compute", "cluster"})
_NODE_COMMANDS = frozenset({"JOB", "VARS", "RETRY", "PRIORITY", "CATEGORY", "ABORT-DAG-ON", "PRE_SKIP",
                            "DONE", "SAVE_POINT_FILE"})
_DROPPED = frozenset({"PARENT"})
# files DAGMan writes one of per (sub-)DAG: each group DAG names its own, after its file name
_PER_GROUP = {"JOBSTATE_LOG": "jobstate.log", "NODE_STATUS_FILE": "status", "DOT": "dot"}
_REFUSED = frozenset({"FINAL", "SPLICE", "SUBDAG", "INCLUDE", "PROVISIONER", "SERVICE"})


def cut_groups(names: Sequence[str], parents: Sequence[Sequence[int]], compute: Sequence[bool],
               size: int) -> list[frozenset[int]]:
    """The groups each node belongs to (see the module docstring); nodes are ``0..n-1`` in DAG order.

    A compute node is in one group; a job before compute work is in every group it feeds; a job
    after it in the latest group it follows."""
    graph = Graph(list(names), parents)
    order = graph.topological_order()
    if order is None:
        raise PlanningError("the DAG has a cycle", rule="the job graph is acyclic",
                            value=" -> ".join(graph.find_cycle() or []))
    level = graph.levels(order)
    member: list[frozenset[int]] = [frozenset()] * len(names)
    work = sorted((i for i in range(len(names)) if compute[i]), key=lambda i: (level[i], i))
    for rank, node in enumerate(work):
        member[node] = frozenset((rank // size,))
    for node in reversed(order):  # before compute work: a copy in every group it feeds
        if not compute[node]:
            member[node] = frozenset().union(*(member[c] for c in graph.children(node)))
    for node in order:  # after it: the latest group it follows
        if not member[node]:
            member[node] = frozenset((max((max(member[p]) for p in graph.parents(node)), default=0),))
    return member


def write_groups(directory: str | os.PathLike[str], size: int, *, dag_name: str | None = None,
                 collector: str | None = None, staging: str | os.PathLike[str] | None = None) -> list[str]:
    """Cut the planned DAG in ``directory`` into group DAGs of about ``size`` jobs; the group names.
    ``collector`` (the property ``sheaf.collector.file``) is recorded for ``sheaf run``.  With
    ``staging`` the planned files are read from and rewritten in that directory (``write_plan``'s,
    before it is renamed to ``directory``), while the files written name ``directory``."""
    if size < 1:
        raise PlanningError("the group size must be at least 1", rule="sheaf.group.size >= 1", value=size)
    root = Path(directory).resolve()
    work = Path(staging) if staging is not None else root
    plan = json.loads((work / "plan.json").read_text(encoding="utf-8"))
    name = dag_name or f"{plan['workflow']}.dag"
    dag = parse_dag(str(work / name))
    _refuse(dag, root / name)
    names = list(dag.nodes)
    index = {node: i for i, node in enumerate(names)}
    types = {job["id"]: job["type"] for job in plan["jobs"]}
    groups = cut_groups(names, [[index[p] for p in dag.parents.get(n, ())] for n in names],
                        [types.get(n, "compute") in _COMPUTE for n in names], size)
    members: dict[int, list[str]] = {}
    for node, where in zip(names, groups, strict=True):
        for g in where:
            members.setdefault(g, []).append(node)
    labels = [f"group_{g + 1:04d}" for g in sorted(members)]
    text = (work / name).read_text(encoding="utf-8")
    (work / "grid").mkdir(exist_ok=True)
    stem = name.removesuffix(".dag")
    for g, label in enumerate(labels):
        gdag = group_dag(stem, label)
        (work / gdag).write_text(_group_text(text, dag, set(members[g]), label, gdag), encoding="utf-8")
        argv = (sys.executable, "-m", "sheaf.backends.grid._group", str(root), gdag)
        (work / "grid" / f"{label}.sub").write_text(group_submit(argv, label, len(members[g]), size == 1))
        (work / "grid" / f"{label}.condor.sub").write_text(condor_group_submit(root, gdag, label))
    script = work / "grid" / "matchmaker-monitor.sh"
    script.write_text(monitor_script(sys.executable), encoding="utf-8")
    script.chmod(0o755)
    os.replace(work / name, work / f"{name}.flat")
    (work / name).write_text(_outer_text(labels, dag, names, groups, text), encoding="utf-8")
    record = {"size": size, "dag": name,
              "collector": os.path.abspath(collector) if collector else None,
              "groups": {label: members[g] for g, label in enumerate(labels)}}
    (work / GROUPS_RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return labels


def _refuse(dag: Dag, path: Path) -> None:
    bad = next((n for n in dag.nodes.values() if n.final or n.subdag), None)
    if bad is not None or dag.final is not None:
        raise PlanningError("group DAGs cannot be cut from a DAG with a FINAL node or a sub-DAG",
                            rule="--group-size needs a plain DAG", path=str(path),
                            value=bad.name if bad is not None else dag.final)


def _with_site(line: str) -> str:
    """A description line, with ``SheafSite=$ENV(SheafSite)`` added to a new-syntax environment."""
    key, eq, value = line.partition("=")
    if eq and key.strip().lower() == "environment" and value.strip().startswith('"'):
        return f'{key}= "SheafSite=$ENV(SheafSite) {value.strip()[1:]}'
    return line


def _node_of(words: list[str]) -> str | None:
    head = words[0].upper()
    if head in _NODE_COMMANDS and len(words) > 1:
        return words[1]
    if head == "SCRIPT":
        rest = words[1:]
        while rest and rest[0].upper() in ("DEFER", "DEBUG"):
            rest = rest[3:]
        return rest[1] if len(rest) > 1 else None
    return None


def _group_text(text: str, dag: Dag, members: set[str], label: str, gdag: str) -> str:
    out = [f"# group DAG {label}: its nodes run at the site the group DAG job was matched to",
           f"JOBSTATE_LOG {gdag}.{_PER_GROUP['JOBSTATE_LOG']}"]
    block = False
    for line in text.splitlines():
        words = line.split()
        if block:
            out.append(_with_site(line))
            block = line.strip() != "}"
            continue
        if not words or words[0].startswith("#"):
            continue
        head = words[0].upper()
        if head == "SUBMIT-DESCRIPTION":
            out.append(line)
            block = line.rstrip().endswith("{")
            continue
        if head in _REFUSED:
            raise PlanningError(f"group DAGs cannot be cut from a DAG using {head}",
                                rule="--group-size needs a plain DAG", path=dag.path, value=line)
        if head in _PER_GROUP:
            if head != "JOBSTATE_LOG" and len(words) > 1:
                out.append(" ".join([words[0], f"{gdag}.{_PER_GROUP[head]}", *words[2:]]))
            continue
        node = _node_of(words)
        if (node is None and head not in _DROPPED) or node in members:
            out.append(line)
    for name in sorted(members, key=list(dag.nodes).index):
        out.append(f'VARS {name} +SheafSite="$ENV(SheafSite)"')
        kids = [c for c in dag.children.get(name, ()) if c in members]
        if kids:
            out.append(f"PARENT {name} CHILD {' '.join(kids)}")
    return "\n".join(out) + "\n"


def _outer_text(labels: list[str], dag: Dag, names: list[str], groups: list[frozenset[int]],
                text: str) -> str:
    """One node per group; an edge where a node of one group follows a node of another that has
    no copy in it; the planned DAG's JOBSTATE_LOG line, so the run's jobstate log stays where it was."""
    out = ["# outer DAG: one node per group DAG job, matched to grid sites (sheaf plan --group-size)"]
    out += [line for line in text.splitlines() if line.split()[:1] == ["JOBSTATE_LOG"]][:1]
    out += [f"JOB {label} grid/{label}.sub" for label in labels]
    group_of = dict(zip(names, groups, strict=True))
    edges = sorted({(a, b) for n, mine in group_of.items() for p in dag.parents.get(n, ())
                    for b in mine if b not in group_of[p] for a in group_of[p]})
    out += [f"PARENT {labels[a]} CHILD {labels[b]}" for a, b in edges]
    return "\n".join(out) + "\n"
