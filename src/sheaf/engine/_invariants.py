"""The state machine's invariants, checked on demand (``DagState.validate_state``; tests call it after
every step, as distributed's ``WorkerState.validate_state``).

What must hold between two steps:

* ``counts`` is the tally of the nodes' states; ``active`` counts the nodes in an active state;
  ``failed_count`` counts the failed nodes;
* every queued key names a node in the state its queue holds (``pre_ready`` in the PRE queue,
  ``post_ready`` in the POST queue, ``ready`` in its CATEGORY's queue) with that node's current key,
  and every such node is queued exactly once - except that a stopped DAG has cleared its queues;
* the throttles lend exactly what the nodes hold: maxpre a token per running PRE script, maxpost
  per running POST script, maxjobs and each CATEGORY a token per submitted non-NOOP node;
* a waiting node's ``unmet`` is the number of its parents not done (a failed WEAK parent is met).

Checking is O(nodes + edges); it is for tests and debugging, never called by the loop.
"""

from __future__ import annotations

__all__ = ["check_invariants"]

from collections import Counter
from typing import TYPE_CHECKING

from sheaf.engine._nodes import ACTIVE_STATES, unmet_parents

if TYPE_CHECKING:
    from sheaf.engine._state import DagState


def check_invariants(machine: DagState) -> None:
    problems = [*_counters(machine), *_queues(machine), *_tokens(machine), *_unmet(machine)]
    if problems:
        raise AssertionError("state machine invariants broken:\n  " + "\n  ".join(problems))


def _counters(machine: DagState) -> list[str]:
    tally: Counter[str] = Counter(n.state for n in machine.nodes.values())
    out = [f"counts[{s!r}] = {c}, but {tally.get(s, 0)} nodes are {s}"
           for s, c in machine.counts.items() if c != tally.get(s, 0)]
    active = sum(1 for n in machine.nodes.values() if n.state in ACTIVE_STATES)
    if active != machine.active:
        out.append(f"active = {machine.active}, but {active} nodes are in an active state")
    if machine.failed_count != tally.get("failed", 0):
        out.append(f"failed_count = {machine.failed_count}, but {tally.get('failed', 0)} nodes failed")
    return out


def _queues(machine: DagState) -> list[str]:
    out: list[str] = []
    queued: Counter[str] = Counter()
    for state, key in machine.queues.queued():
        node = machine.nodes[key[2]]
        queued[node.name] += 1
        want = node.key() if state == "ready" else (0, node.seq, node.name)
        if node.state != state:
            out.append(f"{node.name} is queued for {state} but is {node.state}")
        elif key != want:
            out.append(f"{node.name} is queued under {key}, its key is {want}")
    stopped = machine.aborted is not None or machine.interrupted or machine.finished is not None
    for node in machine.nodes.values():
        times = queued.get(node.name, 0)
        if node.state in ("pre_ready", "post_ready", "ready") and times != 1 and not stopped:
            out.append(f"{node.name} is {node.state} and queued {times} times")
        elif times > 1:
            out.append(f"{node.name} is queued {times} times")
    return out


def _tokens(machine: DagState) -> list[str]:
    out: list[str] = []
    nodes = machine.nodes.values()
    held = [n for n in nodes if n.token]
    out.extend(f"{node.name} holds a job token while {node.state}"
               for node in held if node.state != "submitted" or node.spec.noop)
    expect = {"maxpre": sum(1 for n in nodes if n.state == "pre"),
              "maxpost": sum(1 for n in nodes if n.state == "post"), "maxjobs": len(held)}
    per_category = Counter(n.spec.category or "" for n in held)
    queues = machine.queues
    pools = (queues.maxpre, queues.maxpost, queues.maxjobs)
    lent = [(throttle, expect[throttle.name]) for throttle in pools]
    lent += [(throttle, per_category.get(name, 0)) for name, throttle in queues.categories.items()]
    out.extend(f"{throttle.name} lends {throttle.borrowed} tokens, nodes hold {holding}"
               for throttle, holding in lent if throttle.borrowed != holding)
    return out


def _unmet(machine: DagState) -> list[str]:
    out: list[str] = []
    for name, node in machine.nodes.items():
        if node.state != "waiting":
            continue
        want = unmet_parents(machine.dag, machine.nodes, name)
        if node.unmet != want:
            out.append(f"{name} counts {node.unmet} unmet parents, {want} are not finished")
    return out
