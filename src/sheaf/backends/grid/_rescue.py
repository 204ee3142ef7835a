"""Where a group's nodes ran, and resuming a group DAG on a new site after backing out of the old one.

**Where nodes ran.**  Every group DAG file (``<group>.gdag`` and its rescues ``<group>.gdag.rN``) has
a site ledger beside its journal, ``.sheaf/<file>.sites``, appended to and fsynced before anything
depends on it (never rewritten):

* ``run <epoch> <site>`` -- written by the group DAG job before its engine starts: the journal's
  run ``epoch`` (its next "B" record) is at ``site``;
* ``kept <node> <site>`` -- written with a rescue DAG, before it: a node the rescue keeps done ran
  at ``site`` (so where it ran survives from one DAG file of the group to the next).

A node's site is that of the epoch whose run journaled it ``done`` (a node in flight when an engine
died runs again, so it is journaled done by the run that finished it), or its ``kept`` line.

**Backing out** means the group stops trusting the site for running jobs; whether the files its
nodes left there are still within reach is the back-out policy's call (``_backend``): a
stalled site -- it answers but starts nothing -- still serves its storage, as do all the local
pools of one machine; a site whose jobs fail, or that stopped answering, is *dead* and its files
are lost.  The group restarts from a *rescue DAG* of its own making:

* A done node is kept done (a ``DONE`` line) when its outputs are within reach: every child of it
  inside the group is done too (its outputs were consumed already), it delivered them (a
  ``stage_out`` or ``register`` job of plan.json: they are at the output site), or it ran at a site
  that is not dead.
* A done node whose outputs are lost and that some node still to run needs -- directly, or through
  other such nodes -- runs again on the new site.  Walking up from the nodes not done, through lost
  done parents only, finds exactly those (iteratively, each node once).  A ``cleanup`` job needs
  nothing of its parents (it runs after them only to delete their files), so the walk does not
  start from one.  A done node of no known site (a journal older than the ledger) counts as lost,
  unless the group DAG itself says DONE.

The rescue is a new DAG file ``<group>.gdag.rN`` (the group's own lines plus the ``DONE`` lines) with
its own journal and ledger, so the old ones stay as they were.  Numbering goes on from the highest
rescue present, so a group that backs out twice starts from its latest state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

from sheaf.condor import parse_dag
from sheaf.engine import BeginRecord, ChangeRecord, read_journal, read_records, state_paths

__all__ = ["node_sites", "record_site", "rescue_group", "to_rerun"]

_DELIVERING = frozenset({"stage_out", "register"})  # plan.json types whose outputs leave the site


def to_rerun(done: set[str], parents: dict[str, list[str]], nodes: list[str],
             lost: Collection[str] | None = None) -> set[str]:
    """The done nodes a node not done depends on through lost done nodes only (``lost``: the done
    nodes whose outputs are out of reach; every done node when not given)."""
    rerun: set[str] = set()
    stack = [node for node in nodes if node not in done]
    while stack:
        node = stack.pop()
        for parent in parents.get(node, ()):
            if parent in done and parent not in rerun and (lost is None or parent in lost):
                rerun.add(parent)
                stack.append(parent)
    return rerun


def _ledger(directory: str, dag_file: str) -> str:
    return state_paths(os.path.join(directory, dag_file))["journal"].removesuffix(".journal") + ".sites"


def _append(path: str, lines: list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))
        handle.flush()
        os.fsync(handle.fileno())


def record_site(directory: str, dag_file: str, site: str) -> None:
    """Journal first: the next run of ``dag_file`` (its journal's next epoch) is at ``site``."""
    epoch = read_journal(state_paths(os.path.join(directory, dag_file))["journal"]).epochs + 1
    _append(_ledger(directory, dag_file), [f"run {epoch} {site}"])


def _read_ledger(path: str) -> tuple[dict[int, str], dict[str, str]]:
    """``(epoch -> site, kept node -> site)``; a torn last line is skipped; a later line wins."""
    runs: dict[int, str] = {}
    kept: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return runs, kept
    for line in text.splitlines(keepends=True):
        words = line.split()
        if not line.endswith("\n") or len(words) != 3:
            continue
        if words[0] == "run" and words[1].isdigit():
            runs[int(words[1])] = words[2]
        elif words[0] == "kept":
            kept[words[1]] = words[2]
    return runs, kept


def node_sites(directory: str, dag_file: str) -> dict[str, str]:
    """The site each done node of ``dag_file``'s runs ran at (see the module docstring)."""
    runs, kept = _read_ledger(_ledger(directory, dag_file))
    sites = dict(kept)
    epoch = 0
    for record in read_records(state_paths(os.path.join(directory, dag_file))["journal"]):
        if isinstance(record, BeginRecord):
            epoch = record.epoch
        elif isinstance(record, ChangeRecord) and record.finish == "done" and epoch in runs:
            sites[record.node] = runs[epoch]
    return sites


def _job_types(directory: str) -> dict[str, str]:
    """Each planned job's ``type`` (plan.json); empty when the directory has no readable plan."""
    try:
        jobs = json.loads(Path(directory, "plan.json").read_text(encoding="utf-8")).get("jobs")
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(j["id"]): str(j.get("type")) for j in jobs or () if isinstance(j, dict) and "id" in j}


def rescue_group(directory: str, current: str, original: str,
                 dead: Collection[str] = ()) -> tuple[str, set[str], set[str]]:
    """Write the next rescue of group DAG ``current`` (a file of ``directory``; ``original`` is the
    group DAG it came from), the files of the ``dead`` sites being lost; returns the file name, the
    nodes kept done and the done nodes that run again."""
    path = os.path.join(directory, current)
    dag = parse_dag(path)
    replay = read_journal(state_paths(path)["journal"])
    planned = {name for name, spec in parse_dag(os.path.join(directory, original)).nodes.items() if spec.done}
    done = {name for name, spec in dag.nodes.items() if spec.done}
    done |= {name for name, record in replay.nodes.items() if record.state == "done"}
    sites = node_sites(directory, current)
    kinds = _job_types(directory)
    lost = {node for node in done - planned if kinds.get(node) not in _DELIVERING
            and (sites.get(node) is None or sites[node] in dead)}
    inputs = {node: parents for node, parents in dag.parents.items() if kinds.get(node) != "cleanup"}
    rerun = to_rerun(done, inputs, list(dag.nodes), lost)
    keep = done - rerun
    number = 1 + max((int(p.suffix[2:]) for p in Path(directory).glob(f"{original}.r*")
                      if p.suffix[2:].isdigit()), default=0)
    name = f"{original}.r{number}"
    _append(_ledger(directory, name), [f"kept {node} {sites[node]}" for node in dag.nodes
                                       if node in keep and node in sites])
    text = Path(directory, original).read_text(encoding="utf-8")
    lines = [f"DONE {node}" for node in dag.nodes if node in keep]
    Path(directory, name).write_text(text + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return name, keep, rerun
