"""When nodes may start: the parts of the state machine that release nodes.

A node starts (DAGMan's ``StartNode``: :func:`make_ready`) when it has no parent left to wait for;
a retry does not start it again.  Its ``SAVE_POINT_FILE`` is written first.  A parent done releases
its children; a parent failed releases only its WEAK children, which need it finished, not
successful (:func:`release_children`; its other children become futile).  With a ``PROVISIONER``
node not done yet, the run starts that node alone and every other node waits until its job runs
(:func:`provisioned`, DAGMan's ``_provisioner_ready``) - or until it is done, if its job ended
before the engine saw it running.  These functions belong to :class:`DagState` (bound as its
methods) and use its state as its own methods do.
"""

from __future__ import annotations

__all__ = ["make_ready", "provisioned", "release_children", "start_nodes"]

from typing import TYPE_CHECKING

from sheaf.engine._events import WriteSavePoint
from sheaf.engine._nodes import Node, NodeState

if TYPE_CHECKING:
    from sheaf.engine._state import DagState


def _named(machine: DagState, state: NodeState) -> tuple[str, ...]:
    return tuple(n for n, node in machine.nodes.items() if node.state == state)


def make_ready(machine: DagState, node: Node) -> None:
    if node.spec.save_point is not None:
        machine._emit(WriteSavePoint(node.name, _named(machine, "done"), _named(machine, "failed")))
    machine._transition(node, "pre_ready" if node.spec.pre is not None else "ready")


def _may_start(machine: DagState, node: Node) -> bool:
    return node.state == "waiting" and node.unmet == 0 and not node.spec.final \
        and machine.aborted is None and not machine.interrupted


def start_nodes(machine: DagState) -> None:
    """As the run starts: every node whose parents are all done, in declaration order (the
    PROVISIONER alone while it is not done)."""
    provisioner = machine.nodes.get(machine.dag.provisioner or "")
    machine.provisioning = provisioner is not None and provisioner.state == "waiting"
    for node in [provisioner] if provisioner is not None and machine.provisioning else machine.nodes.values():
        if _may_start(machine, node):
            make_ready(machine, node)


def provisioned(machine: DagState) -> None:
    if machine.provisioning:
        machine.provisioning = False
        for node in machine.nodes.values():
            if _may_start(machine, node):
                make_ready(machine, node)


def release_children(machine: DagState, node: Node, weak_only: bool = False) -> None:
    if node.name == machine.dag.provisioner:
        provisioned(machine)
    for child_name in machine.dag.children[node.name]:
        if weak_only and (node.name, child_name) not in machine.dag.weak:
            continue
        child = machine.nodes[child_name]
        child.unmet -= 1
        if child.unmet == 0 and child.state == "waiting" and machine.aborted is None \
                and not machine.interrupted:
            make_ready(machine, child)
