"""What waits to start, in which order, and the throttles that let it start: DAGMan's queues.

Policy (``_state``'s docstring, "Scheduling", says why): ready nodes wait in heaps keyed ``(-effective
priority, seq, name)`` - one heap per CATEGORY, DAGMan's ``DagPriorityQ`` - where ``seq`` grows as
nodes are queued (first ready, first submitted: breadth first) or, with ``DAGMAN_SUBMIT_DEPTH_FIRST``
or while a retried node is queued with ``DAGMAN_RETRY_NODE_FIRST`` (:attr:`ReadyQueues.retry_first`),
shrinks (last ready, first submitted).  PRE and POST scripts wait in first-come queues keyed ``(0,
seq, name)``, whatever the priority (DAGMan's script queues).  The next ready node is the best head
of the category heaps whose throttles allow it: maxjobs and maxidle, and its CATEGORY's MAXJOBS; a
NOOP node needs no token.  A CATEGORY whose MAXJOBS is 0 is *closed*, not unlimited: DAGMan defers a
node while its category's running count is not below the limit, so none of its nodes -- NOOP nodes
included, which DAGMan queues as any -- is ever taken off its heap.  A script starts when maxpre or
maxpost lends a token.

Invariants (checked by ``_invariants``): a node is queued at most once, under its current key; the
throttles lend one token per node holding one (``Node.token`` for a job, a running script).

A :class:`ReadyQueues` belongs to one state machine (``DagState.queues``), which queues a node as it
enters ``pre_ready``, ``ready`` or ``post_ready`` (the transition table) and takes nodes off the
queues as it dispatches; the queues hold node names, the nodes are the state machine's.
"""

from __future__ import annotations

__all__ = ["Key", "ReadyQueues"]

import heapq
from collections.abc import Iterator, Mapping

from sheaf.engine._nodes import Node, NodeState
from sheaf.engine._throttle import IdleThrottle, Limits, Throttle, ThrottleStatistics

Key = tuple[int, int, str]


class ReadyQueues:
    """The ready queues and script queues of one DAG's nodes, and their throttles."""

    __slots__ = ("_generation", "_nodes", "_post", "_pre", "_ready", "categories", "closed", "depth_first",
                 "maxidle", "maxjobs", "maxpost", "maxpre", "retry_first")

    def __init__(self, nodes: Mapping[str, Node], limits: Limits, categories: Mapping[str, int]) -> None:
        self._nodes = nodes
        self.maxjobs = Throttle("maxjobs", limits.maxjobs)
        self.maxidle = IdleThrottle("maxidle", limits.maxidle)
        self.maxpre = Throttle("maxpre", limits.maxpre)
        self.maxpost = Throttle("maxpost", limits.maxpost)
        self.categories = {name: Throttle(f"category {name}", n) for name, n in categories.items()}
        self.closed = frozenset(name for name, n in categories.items() if n == 0)  # MAXJOBS cat 0
        self.depth_first = limits.depth_first
        self.retry_first = False  # set while a retried node is queued (DAGMAN_RETRY_NODE_FIRST)
        self._pre: list[Key] = []
        self._post: list[Key] = []
        self._ready: dict[str | None, list[Key]] = {}
        self._generation = 0

    # -- queueing -------------------------------------------------------------------------------

    def queue_ready(self, node: Node) -> None:
        """Queue a node behind the others of its priority (breadth first) or, depth first or a retry
        with ``DAGMAN_RETRY_NODE_FIRST``, before them (DAGMan's ``append``/``prepend``)."""
        self._generation += 1
        front = self.retry_first or self.depth_first
        node.seq = -self._generation if front else self._generation
        heapq.heappush(self._ready.setdefault(node.spec.category, []), node.key())

    def queue_pre(self, node: Node) -> None:
        self._queue_script(self._pre, node)

    def queue_post(self, node: Node) -> None:
        self._queue_script(self._post, node)

    def _queue_script(self, heap: list[Key], node: Node) -> None:
        """Scripts wait first come, first served, whatever the priority (DAGMan's script queue)."""
        self._generation += 1
        node.seq = self._generation
        heapq.heappush(heap, (0, node.seq, node.name))

    # -- taking nodes off -----------------------------------------------------------------------

    def next_pre(self) -> Node | None:
        """The first node waiting for its PRE script, off its queue with a maxpre token; None when
        none waits or maxpre lends no more."""
        return self._next_script(self._pre, self.maxpre)

    def next_post(self) -> Node | None:
        """As :meth:`next_pre`, for POST scripts and maxpost."""
        return self._next_script(self._post, self.maxpost)

    def _next_script(self, heap: list[Key], throttle: Throttle) -> Node | None:
        if heap and throttle.try_acquire():
            return self._nodes[heapq.heappop(heap)[2]]
        return None

    def observe_idle(self, idle: int) -> None:
        """The backend's count of idle attempts, as a dispatch round starts (maxidle)."""
        self.maxidle.observe(idle)

    def next_ready(self) -> Node | None:
        """The highest-priority ready node whose throttles allow it, taken off its queue (its tokens
        are taken by :meth:`take_job_tokens`)."""
        if not self._ready:  # a dispatch round asks after every script it starts: the common answer, cheaply
            return None
        best = self._best_ready()
        if best is None:
            return None
        heapq.heappop(self._ready[best[1]])
        return self._nodes[best[0][2]]

    def closed_waiting(self) -> bool:
        """Whether a ready node waits in a closed category (MAXJOBS 0): it waits for ever."""
        return any(self._ready.get(category) for category in self.closed)

    def has_ready(self) -> bool:
        """Whether a ready node is queued that the throttles allow now."""
        return self._best_ready() is not None

    def _best_ready(self) -> tuple[Key, str | None] | None:
        """(key, category) of the highest-priority ready node whose throttles allow it (a NOOP needs
        no token); empty queues are dropped on the way."""
        best: Key | None = None
        best_cat: str | None = None
        job_ok = self.maxjobs.available() and self.maxidle.available()
        for category, heap in list(self._ready.items()):
            if not heap:
                del self._ready[category]
                continue
            if category in self.closed:
                continue
            top = heap[0]
            needs_token = not self._nodes[top[2]].spec.noop
            cat = self.categories.get(category or "")
            if needs_token and (not job_ok or (cat is not None and not cat.available())):
                continue
            if best is None or top < best:
                best, best_cat = top, category
        return None if best is None else (best, best_cat)

    # -- tokens ---------------------------------------------------------------------------------

    def take_job_tokens(self, node: Node) -> None:
        """The tokens of a job submitted for ``node``: maxjobs, maxidle and its CATEGORY's."""
        self.maxjobs.try_acquire()
        self.maxidle.try_acquire()
        category = self.categories.get(node.spec.category or "")
        if category is not None:
            category.try_acquire()
        node.token = True

    def return_job_tokens(self, node: Node) -> None:
        """The node's job ended or was cancelled: its maxjobs and CATEGORY tokens come back (maxidle's
        count is the backend's, observed each round)."""
        if node.token:
            node.token = False
            self.maxjobs.release()
            category = self.categories.get(node.spec.category or "")
            if category is not None:
                category.release()

    def return_pre_token(self) -> None:
        self.maxpre.release()

    def return_post_token(self) -> None:
        self.maxpost.release()

    # -- a halt, a stop -------------------------------------------------------------------------

    def starts_pending(self) -> bool:
        """Whether a node waits for a PRE script slot or a submission (a halt sends them back)."""
        return bool(self._pre or self._ready)

    def clear(self, *, post: bool) -> None:
        """Empty the PRE and ready queues, and the POST queue too when ``post`` (a stop; a halt lets
        POST scripts run)."""
        self._pre.clear()
        if post:
            self._post.clear()
        self._ready.clear()

    # -- read-only views ------------------------------------------------------------------------

    def queued(self) -> Iterator[tuple[NodeState, Key]]:
        """Every queued key with the state its queue holds (``pre_ready``, ``post_ready``, ``ready``)."""
        yield from (("pre_ready", key) for key in self._pre)
        yield from (("post_ready", key) for key in self._post)
        for heap in self._ready.values():
            yield from (("ready", key) for key in heap)

    def statistics(self) -> list[ThrottleStatistics]:
        out = [t.statistics() for t in (self.maxjobs, self.maxpre, self.maxpost)]
        out.append(self.maxidle.statistics())
        out.extend(t.statistics() for t in self.categories.values())
        return out
