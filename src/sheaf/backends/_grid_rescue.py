"""Resuming a group DAG on a new site after backing out of the old one.

Backing out of a site means no longer trusting it: the intermediate files its nodes left in its
working area are out of reach (the site stalls, fails, or is gone).  So the group does not simply
resume from its journal there (that is for a crash of our own engine, when the site's files are
still reachable); it restarts from a *rescue DAG* of its own making:

* A node done at the old site is kept done (a ``DONE`` line) when every child of it inside the group
  is done too: its outputs were consumed, or delivered (staged out), already.
* A done node that some node still to run depends on -- directly, or through other such done
  nodes -- runs again on the new site, which needs its outputs.  Walking up from the nodes not done,
  through done parents only, finds them (iteratively, each node once).

The rescue is a new DAG file ``<group>.gdag.rN`` (the group's own lines plus the ``DONE`` lines) with
its own journal, so the old journal stays as it was (never rewritten).  Numbering goes on from the
highest rescue present, so a group that backs out twice starts from its latest state.
"""

from __future__ import annotations

import os
from pathlib import Path

from sheaf.engine import read_journal, state_paths
from sheaf.formats._dagman import parse_dag

__all__ = ["rescue_group", "to_rerun"]


def to_rerun(done: set[str], parents: dict[str, list[str]], nodes: list[str]) -> set[str]:
    """The done nodes a node not done depends on through done nodes only."""
    rerun: set[str] = set()
    stack = [node for node in nodes if node not in done]
    while stack:
        node = stack.pop()
        for parent in parents.get(node, ()):
            if parent in done and parent not in rerun:
                rerun.add(parent)
                stack.append(parent)
    return rerun


def rescue_group(directory: str, current: str, original: str) -> tuple[str, set[str]]:
    """Write the next rescue of group DAG ``current`` (a file of ``directory``; ``original`` is the
    group DAG it came from); returns the file name and the nodes kept done."""
    path = os.path.join(directory, current)
    dag = parse_dag(path)
    replay = read_journal(state_paths(path)["journal"])
    done = {name for name, spec in dag.nodes.items() if spec.done}
    done |= {name for name, record in replay.nodes.items() if record.state == "done"}
    keep = done - to_rerun(done, dag.parents, list(dag.nodes))
    number = 1 + max((int(p.suffix[2:]) for p in Path(directory).glob(f"{original}.r*")
                      if p.suffix[2:].isdigit()), default=0)
    name = f"{original}.r{number}"
    text = Path(directory, original).read_text(encoding="utf-8")
    lines = [f"DONE {node}" for node in dag.nodes if node in keep]
    Path(directory, name).write_text(text + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return name, keep
