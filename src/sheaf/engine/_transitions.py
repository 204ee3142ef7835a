"""The state machine's transition table: ``(start, finish) -> function``, as distributed's
``_TRANSITIONS_TABLE``.

Each function does what entering ``finish`` from ``start`` entails beyond the state itself - queue
the node, return a throttle token (the state machine's :class:`ReadyQueues`), release the children -
and nothing else; ``DagState.transition`` records the change first and raises
:class:`InvalidTransition` for a pair not in the table.
"""

from __future__ import annotations

__all__ = ["TRANSITIONS", "Transition"]

from collections.abc import Callable
from typing import TYPE_CHECKING

from sheaf.engine._nodes import Node, NodeState

if TYPE_CHECKING:
    from sheaf.engine._state import DagState

Transition = Callable[["DagState", Node], None]


def _noop(machine: DagState, node: Node) -> None:
    return None


def _enqueue_pre(machine: DagState, node: Node) -> None:
    machine.queues.queue_pre(node)


def _enqueue_ready(machine: DagState, node: Node) -> None:
    machine.queues.queue_ready(node)


def _enqueue_post(machine: DagState, node: Node) -> None:
    machine.queues.queue_post(node)


def _release_pre(machine: DagState, node: Node) -> None:
    machine.queues.return_pre_token()


def _release_post(machine: DagState, node: Node) -> None:
    machine.queues.return_post_token()


def _release_job(machine: DagState, node: Node) -> None:
    machine.queues.return_job_tokens(node)


def _then(*steps: Transition) -> Transition:
    def run(machine: DagState, node: Node) -> None:
        for one in steps:
            one(machine, node)
    return run


def _done(machine: DagState, node: Node) -> None:
    machine.release_children(node)


TRANSITIONS: dict[tuple[NodeState, NodeState], Transition] = {
    ("waiting", "pre_ready"): _enqueue_pre,
    ("waiting", "ready"): _enqueue_ready,
    ("pre_ready", "pre"): _noop,  # token taken by the dispatcher
    ("pre_ready", "waiting"): _noop,  # abort: never started
    ("pre", "ready"): _then(_release_pre, _enqueue_ready),
    ("pre", "pre_deferred"): _release_pre,
    ("pre", "done"): _then(_release_pre, _done),  # PRE_SKIP
    ("pre", "post_ready"): _then(_release_pre, _enqueue_post),  # DAGMAN_ALWAYS_RUN_POST
    ("pre", "pre_ready"): _then(_release_pre, _enqueue_pre),  # retry
    ("pre", "failed"): _release_pre,
    ("pre_deferred", "pre_ready"): _enqueue_pre,
    ("pre_deferred", "waiting"): _noop,
    ("ready", "submitted"): _noop,
    ("ready", "waiting"): _noop,
    ("submitted", "post_ready"): _then(_release_job, _enqueue_post),
    ("submitted", "done"): _then(_release_job, _done),
    ("submitted", "ready"): _then(_release_job, _enqueue_ready),  # retry
    ("submitted", "pre_ready"): _then(_release_job, _enqueue_pre),  # retry
    ("submitted", "failed"): _release_job,
    ("post_ready", "post"): _noop,
    ("post_ready", "waiting"): _noop,
    ("post", "done"): _then(_release_post, _done),
    ("post", "post_deferred"): _release_post,
    ("post", "ready"): _then(_release_post, _enqueue_ready),
    ("post", "pre_ready"): _then(_release_post, _enqueue_pre),
    ("post", "failed"): _release_post,
    ("post_deferred", "post_ready"): _enqueue_post,
    ("post_deferred", "waiting"): _noop,
}
