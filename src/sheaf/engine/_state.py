"""DAGMan semantics as a pure state machine: events in, (journal changes, instructions) out.

Nothing here touches a process, a file or a clock of its own: the loop (``_loop.py``) feeds
past-tense events (:class:`JobExited`, :class:`JobHeld`, :class:`ScriptExited`,
:class:`DeferElapsed`, :class:`Interrupted`) to :meth:`DagState.advance` and gets back a
:class:`Step`: the state *changes* to journal durably first, then the imperative *instructions*
(:class:`Submit`, :class:`RunScript`, :class:`Defer`, :class:`Cancel`, :class:`KillScript`,
:class:`WriteRescue`, :class:`Finish`) to carry out; these records live in ``_events.py``.
Time comes from an injected clock.

Node states (a ``Literal``) and the life of one attempt::

    waiting ─► pre_ready ─► pre ─► ready ─► submitted ─► post_ready ─► post ─► done
                  ▲          │ └► pre_deferred ─┘   │                  │ └► post_deferred ─┘
                  └── retry ─┴──────────────────────┴──────────────────┴──► failed

Every transition is a small function in ``_TRANSITIONS[(start, finish)]``; any pair not in the
table raises :class:`InvalidTransition` carrying the node's history.

Success rules (HTCondor "Node Success/Failure"): the last component that ran decides.  A POST
script, when present, always runs after the job and its exit code is the node's; ``$RETURN`` is the
job's exit code, ``-signal`` when killed, -1001 when the job could never run (held), -1004 when
the PRE script failed (with ``DAGMAN_ALWAYS_RUN_POST``).  ``PRE_SKIP`` marks the node done.  A
failed node is retried (whole node: PRE, job, POST) while retries remain, unless its exit value
is the ``UNLESS-EXIT`` value.  ``ABORT-DAG-ON`` is checked against the PRE script's value, the
job's value when there is no POST script, and the POST script's value; an abort overrides retries,
cancels everything in flight, still runs the FINAL node, and exits with ``RETURN`` (or the node's
value).  With a FINAL node, the DAG succeeds iff the FINAL node does.

Scheduling: ready nodes wait in heaps keyed ``(-priority, declaration order)`` - one heap per
CATEGORY, plus one for PRE and one for POST scripts - so each event costs O(log n) and nothing is
ever rescanned; children are released by in-degree counters.  Throttles (maxjobs, maxidle, maxpre,
maxpost, per-category MAXJOBS) are :mod:`._throttle` objects; a NOOP node takes no job token.
"""

from __future__ import annotations

__all__ = [
    "ACTIVE_STATES",
    "STATES",
    "Cancel",
    "Change",
    "DagState",
    "Defer",
    "DeferElapsed",
    "EngineEvent",
    "Finish",
    "Instruction",
    "Interrupted",
    "InvalidTransition",
    "JobExited",
    "JobHeld",
    "KillScript",
    "Limits",
    "NodeState",
    "RunScript",
    "ScriptExited",
    "Step",
    "Submit",
    "WriteRescue",
]

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sheaf.engine._dagfile import Dag, NodeSpec, Script
from sheaf.engine._events import (
    Cancel,
    Change,
    Defer,
    DeferElapsed,
    EngineEvent,
    Finish,
    Instruction,
    Interrupted,
    JobExited,
    JobHeld,
    KillScript,
    RunScript,
    ScriptExited,
    Step,
    Submit,
    WriteRescue,
)
from sheaf.engine._throttle import IdleThrottle, Throttle

NodeState = Literal["waiting", "pre_ready", "pre", "pre_deferred", "ready", "submitted",
                    "post_ready", "post", "post_deferred", "done", "failed"]
STATES: tuple[NodeState, ...] = get_args(NodeState)
ACTIVE_STATES = frozenset({"pre_ready", "pre", "pre_deferred", "ready", "submitted", "post_ready",
                           "post", "post_deferred"})

RETURN_HELD = -1001
RETURN_PRE_FAILED = -1004
DAG_OK, DAG_NODES_FAILED, DAG_ABORTED, DAG_REMOVED = 0, 2, 3, 4


class InvalidTransition(RuntimeError):
    def __init__(self, node: str, start: str, finish: str, history: list[tuple[float, str, str]]):
        self.node, self.start, self.finish, self.history = node, start, finish, history
        trail = "; ".join(f"{t:.3f} {a}->{b}" for t, a, b in history[-20:])
        super().__init__(f"node {node!r}: impossible transition {start} -> {finish} (history: {trail})")


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-workflow throttles (DAGMan's knobs); 0 means unlimited."""

    maxjobs: int = 0
    maxidle: int = 1000
    maxpre: int = 20
    maxpost: int = 20
    always_run_post: bool = False


# ---- the node record ---------------------------------------------------------------------------

class _Node:
    __slots__ = (
        "attempt",
        "cluster",
        "history",
        "job_return",
        "name",
        "order",
        "pre_return",
        "reason",
        "spec",
        "state",
        "token",
        "unmet",
        "value",
    )

    def __init__(self, spec: NodeSpec, order: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.order = order
        self.state: NodeState = "waiting"
        self.attempt = 0
        self.unmet = 0
        self.history: list[tuple[float, str, str]] = []
        self.job_return: int | None = None
        self.pre_return: int | None = None
        self.cluster = 0
        self.reason: str | None = None
        self.token = False  # holds a maxjobs/category token while submitted
        self.value: int | None = None  # the node's exit value (the last component's)

    def key(self) -> tuple[int, int, str]:
        return (-self.spec.priority, self.order, self.name)


Transition = Callable[["DagState", _Node, Mapping[str, Any]], None]


def _noop(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    return None


def _enqueue_pre(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    heapq.heappush(machine._pre_heap, node.key())


def _enqueue_ready(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    heapq.heappush(machine._ready_heaps.setdefault(node.spec.category, []), node.key())


def _enqueue_post(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    heapq.heappush(machine._post_heap, node.key())


def _release_pre(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    machine.maxpre.release()


def _release_post(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    machine.maxpost.release()


def _release_job(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    if node.token:
        node.token = False
        machine.maxjobs.release()
        category = machine._categories.get(node.spec.category or "")
        if category is not None:
            category.release()


def _then(*steps: Transition) -> Transition:
    def run(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
        for one in steps:
            one(machine, node, info)
    return run


def _done(machine: DagState, node: _Node, info: Mapping[str, Any]) -> None:
    machine._release_children(node)


_TRANSITIONS: dict[tuple[NodeState, NodeState], Transition] = {
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


def _expected_state(event: JobExited | JobHeld | ScriptExited | DeferElapsed) -> NodeState:
    if isinstance(event, JobExited | JobHeld):
        return "submitted"
    if isinstance(event, ScriptExited):
        return "pre" if event.kind == "PRE" else "post"
    return "pre_deferred" if event.kind == "PRE" else "post_deferred"


class DagState:
    """The whole DAG's state.  Build it, call :meth:`start`, then :meth:`advance` per loop turn."""

    def __init__(self, dag: Dag, limits: Limits, clock: Callable[[], float], *,
                 done: Iterable[str] = (), failed: Iterable[str] = (),
                 attempts: Mapping[str, int] | None = None, next_cluster: int = 1,
                 reasons: Mapping[str, str | None] | None = None) -> None:
        self.dag = dag
        self.clock = clock
        self.limits = limits
        self.maxjobs = Throttle("maxjobs", limits.maxjobs)
        self.maxidle = IdleThrottle("maxidle", limits.maxidle)
        self.maxpre = Throttle("maxpre", limits.maxpre)
        self.maxpost = Throttle("maxpost", limits.maxpost)
        self._categories = {name: Throttle(f"category {name}", n) for name, n in dag.maxjobs.items()}
        self.nodes: dict[str, _Node] = {n: _Node(s, i) for i, (n, s) in enumerate(dag.nodes.items())}
        self.counts: dict[str, int] = {s: 0 for s in STATES}
        self._pre_heap: list[tuple[int, int, str]] = []
        self._post_heap: list[tuple[int, int, str]] = []
        self._ready_heaps: dict[str | None, list[tuple[int, int, str]]] = {}
        self._step = Step()
        self._next_cluster = next_cluster
        self.active = 0
        self.failed_count = 0
        self.retries = 0
        self.job_time = 0.0
        self.aborted: tuple[str, int, int | None] | None = None
        self.interrupted = False
        self.finished: Finish | None = None
        self._final_started = False
        self._restore(set(done), set(failed), attempts or {}, reasons or {})

    # -- set-up ---------------------------------------------------------------------------------

    def _restore(self, done: set[str], failed: set[str], attempts: Mapping[str, int],
                 reasons: Mapping[str, str | None]) -> None:
        for name, node in self.nodes.items():
            node.attempt = attempts.get(name, 0)
            if node.spec.done or name in done:
                node.state = "done"
            elif name in failed:
                node.state = "failed"
                node.reason = reasons.get(name)  # a recovered failure keeps the reason journaled
                self.failed_count += 1
            self.counts[node.state] += 1
        for name, node in self.nodes.items():
            node.unmet = sum(1 for p in self.dag.parents[name] if self.nodes[p].state != "done")

    def start(self, idle: int = 0) -> Step:
        """Release every node whose parents are all done, then dispatch."""
        for node in self.nodes.values():
            if node.state == "waiting" and node.unmet == 0 and not node.spec.final:
                self._make_ready(node)
        return self._finish_step(idle)

    # -- the core -------------------------------------------------------------------------------

    def advance(self, events: Iterable[EngineEvent], idle: int = 0) -> Step:
        for event in events:
            self._handle(event)
        return self._finish_step(idle)

    def _finish_step(self, idle: int) -> Step:
        if self.finished is None:
            self._dispatch(idle)
            if self.active == 0:
                self._end()
        step, self._step = self._step, Step()
        return step

    def _transition(self, node: _Node, finish: NodeState, info: Mapping[str, Any] | None = None) -> None:
        start = node.state
        fn = _TRANSITIONS.get((start, finish))
        if fn is None:
            raise InvalidTransition(node.name, start, finish, node.history)
        now = self.clock()
        node.state = finish
        self.counts[start] -= 1
        self.counts[finish] += 1
        self.active += (finish in ACTIVE_STATES) - (start in ACTIVE_STATES)
        node.history.append((now, start, finish))
        self._step.changes.append(Change(now, node.name, start, finish, node.attempt, info))
        fn(self, node, info or {})  # after the record: children released here come later in the log

    def _emit(self, instruction: Instruction) -> None:
        self._step.instructions.append(instruction)

    def _make_ready(self, node: _Node) -> None:
        self._transition(node, "pre_ready" if node.spec.pre is not None else "ready")

    def _release_children(self, node: _Node) -> None:
        for child_name in self.dag.children[node.name]:
            child = self.nodes[child_name]
            child.unmet -= 1
            if child.unmet == 0 and child.state == "waiting" and self.aborted is None \
                    and not self.interrupted:
                self._make_ready(child)

    # -- dispatch -------------------------------------------------------------------------------

    def _dispatch(self, idle: int) -> None:
        while self._pre_heap and self.maxpre.try_acquire():
            node = self.nodes[heapq.heappop(self._pre_heap)[2]]
            self._transition(node, "pre")
            self._emit(RunScript(node.name, "PRE", node.attempt, self._script_argv(node, node.spec.pre),
                                 node.spec.directory))
        while self._post_heap and self.maxpost.try_acquire():
            node = self.nodes[heapq.heappop(self._post_heap)[2]]
            self._transition(node, "post")
            self._emit(RunScript(node.name, "POST", node.attempt, self._script_argv(node, node.spec.post),
                                 node.spec.directory))
        self.maxidle.observe(idle)
        while self._ready_heaps:
            ready = self._next_ready()
            if ready is None:
                break
            self._submit(ready)

    def _next_ready(self) -> _Node | None:
        """The highest-priority ready node whose throttles allow it (a NOOP needs no token)."""
        best: tuple[int, int, str] | None = None
        best_cat: str | None = None
        job_ok = self.maxjobs.available() and self.maxidle.available()
        for category, heap in list(self._ready_heaps.items()):
            if not heap:
                del self._ready_heaps[category]
                continue
            top = heap[0]
            needs_token = not self.nodes[top[2]].spec.noop
            cat = self._categories.get(category or "")
            if needs_token and (not job_ok or (cat is not None and not cat.available())):
                continue
            if best is None or top < best:
                best, best_cat = top, category
        if best is None:
            return None
        heapq.heappop(self._ready_heaps[best_cat])
        return self.nodes[best[2]]

    def _submit(self, node: _Node) -> None:
        if node.spec.noop:
            self._transition(node, "submitted", {"noop": True})
            self._job_finished(node, 0, None)
            return
        self.maxjobs.try_acquire()
        self.maxidle.try_acquire()
        category = self._categories.get(node.spec.category or "")
        if category is not None:
            category.try_acquire()
        node.token = True
        node.cluster = self._next_cluster
        self._next_cluster += 1
        self._transition(node, "submitted", {"cluster": node.cluster})
        self._emit(Submit(node.name, node.attempt, node.cluster, node.spec.priority))

    # -- events ---------------------------------------------------------------------------------

    def _handle(self, event: EngineEvent) -> None:
        if isinstance(event, Interrupted):
            self._interrupt(event.reason)
            return
        node = self.nodes.get(event.node)
        if node is None:
            raise KeyError(f"event for unknown node {event.node!r}")
        expected = _expected_state(event)
        if event.attempt != node.attempt or node.state != expected:
            if self.aborted is not None or self.interrupted:
                return  # a late report about an attempt already cancelled (abort, interrupt)
            raise InvalidTransition(node.name, node.state, f"{type(event).__name__} (expects {expected}, "
                                    f"attempt {event.attempt})", node.history)
        if isinstance(event, JobExited):
            self._on_job_exited(node, event)
        elif isinstance(event, JobHeld):
            node.reason = event.reason
            self._job_finished(node, RETURN_HELD, event.reason)
        elif isinstance(event, ScriptExited):
            self._on_script(node, event)
        else:
            self._transition(node, "pre_ready" if event.kind == "PRE" else "post_ready")

    def _on_job_exited(self, node: _Node, event: JobExited) -> None:
        if event.ended > event.started:
            self.job_time += event.ended - event.started
        value = event.exit_code if event.exit_code is not None else -(event.signal or 0)
        info = {"exit": event.exit_code, "signal": event.signal, "reason": event.reason,
                "started": event.started, "ended": event.ended, "slot": event.slot}
        node.reason = event.reason or (f"exit code {value}" if value else None)
        self._job_finished(node, value, info)

    def _job_finished(self, node: _Node, value: int, info: Mapping[str, Any] | str | None) -> None:
        node.job_return = value
        details: dict[str, Any] = {"return": value}
        if isinstance(info, Mapping):
            details.update({k: v for k, v in info.items() if v is not None})
        elif info is not None:
            details["reason"] = info
        if node.spec.post is not None:
            self._transition(node, "post_ready", details)
        elif self._abort_matches(node, value):
            self._abort(node, value, details)
        elif value == 0:
            node.value = 0
            self._transition(node, "done", details)
        else:
            self._failed(node, value, details)

    def _on_script(self, node: _Node, event: ScriptExited) -> None:
        value = event.exit_code if event.exit_code is not None else -(event.signal or 0)
        script = node.spec.pre if event.kind == "PRE" else node.spec.post
        assert script is not None
        info: dict[str, Any] = {"script": event.kind, "return": value}
        if script.defer_status is not None and value == script.defer_status:
            self._transition(node, "pre_deferred" if event.kind == "PRE" else "post_deferred", info)
            self._emit(Defer(node.name, event.kind, node.attempt, script.defer_time))
        elif event.kind == "PRE":
            self._on_pre(node, value, info)
        else:
            self._on_post(node, value, info)

    def _on_pre(self, node: _Node, value: int, info: dict[str, Any]) -> None:
        node.pre_return = value
        if node.spec.pre_skip is not None and value == node.spec.pre_skip:
            node.value = 0
            self._transition(node, "done", {**info, "skipped": True})
        elif self._abort_matches(node, value):
            self._abort(node, value, info)
        elif value == 0:
            self._transition(node, "ready", info)
        elif self.limits.always_run_post and node.spec.post is not None:
            node.job_return = RETURN_PRE_FAILED
            self._transition(node, "post_ready", info)
        else:
            node.reason = f"PRE script exited with {value}"
            self._failed(node, value, info)

    def _on_post(self, node: _Node, value: int, info: dict[str, Any]) -> None:
        if self._abort_matches(node, value):
            self._abort(node, value, info)
        elif value == 0:
            node.value = 0
            self._transition(node, "done", info)
        else:
            node.reason = f"POST script exited with {value}" + (
                f" (job: {node.reason})" if node.reason else "")
            self._failed(node, value, info)

    def _failed(self, node: _Node, value: int, info: Mapping[str, Any]) -> None:
        node.value = value
        spec = node.spec
        if node.attempt < spec.retries and value != spec.unless_exit and not self.interrupted:
            node.attempt += 1
            self.retries += 1
            self._transition(node, "pre_ready" if spec.pre is not None else "ready",
                             {**info, "retry": node.attempt, "why": node.reason})
            return
        self.failed_count += 1
        self._transition(node, "failed", {**info, "why": node.reason})

    # -- abort, interrupt, end ------------------------------------------------------------------

    def _abort_matches(self, node: _Node, value: int) -> bool:
        return node.spec.abort_on is not None and node.spec.abort_on[0] == value and self.aborted is None

    def _abort(self, node: _Node, value: int, info: Mapping[str, Any]) -> None:
        node.value = value
        node.reason = f"ABORT-DAG-ON: exit value {value}"
        self.failed_count += 1
        self._transition(node, "failed", {**info, "why": node.reason, "abort": True})
        self.aborted = (node.name, value, node.spec.abort_on[1] if node.spec.abort_on else None)
        self._stop_everything("DAG aborted by ABORT-DAG-ON")

    def _interrupt(self, reason: str) -> None:
        if self.interrupted or self.finished is not None:
            return
        self.interrupted = True
        self._final_started = True  # a removed DAG stops now; the FINAL node is not started
        self._stop_everything(reason)

    def _stop_everything(self, reason: str) -> None:
        self._pre_heap.clear()
        self._post_heap.clear()
        self._ready_heaps.clear()
        for node in self.nodes.values():
            state = node.state
            if state == "submitted":
                node.reason = reason
                if node.token:
                    self._emit(Cancel(node.name, node.attempt))
                self.failed_count += 1
                self._transition(node, "failed", {"why": reason, "cancelled": True})
            elif state in ("pre", "post"):
                node.reason = reason
                self._emit(KillScript(node.name, "PRE" if state == "pre" else "POST"))
                self.failed_count += 1
                self._transition(node, "failed", {"why": reason, "cancelled": True})
            elif state in ACTIVE_STATES:
                self._transition(node, "waiting", {"why": reason})

    def _end(self) -> None:
        final = self.dag.final
        if final is not None and not self._final_started:
            self._final_started = True
            node = self.nodes[final]
            if node.state == "waiting":
                self._make_ready(node)
                self._dispatch(0)
                if self.active:
                    return
        self._conclude()

    def dag_status(self) -> int:
        if self.interrupted:
            return DAG_REMOVED
        if self.aborted is not None:
            return DAG_ABORTED
        return DAG_NODES_FAILED if self.failed_count else DAG_OK

    def _conclude(self) -> None:
        """With a FINAL node, its outcome is the DAG's (overriding failures and ABORT-DAG-ON)."""
        status = self.dag_status()
        final = self.dag.final
        if final is not None and not self.interrupted:
            succeeded = self.nodes[final].state == "done"
            exit_code = 0 if succeeded else 1
        else:
            succeeded = all(n.state == "done" for n in self.nodes.values())
            exit_code = 0 if succeeded else 1
            if self.aborted is not None:
                exit_code = self.aborted[2] if self.aborted[2] is not None else self.aborted[1]
                succeeded = exit_code == 0
        if not succeeded:
            self._emit(self._rescue())
        self.finished = Finish(succeeded, status, exit_code)
        self._emit(self.finished)

    def _rescue(self) -> WriteRescue:
        done = tuple(n for n, node in self.nodes.items() if node.state == "done" and not node.spec.final)
        left = tuple((n, node.spec.retries - node.attempt) for n, node in self.nodes.items()
                     if node.state != "done" and node.spec.retries)
        return WriteRescue(done, left, self.failed_count)

    # -- script macros --------------------------------------------------------------------------

    def _script_argv(self, node: _Node, script: Script | None) -> tuple[str, ...]:
        assert script is not None
        macros = {
            "$JOB": node.name, "$RETRY": str(node.attempt), "$MAX_RETRIES": str(node.spec.retries),
            "$DAG_STATUS": str(self.dag_status()), "$FAILED_COUNT": str(self.failed_count),
        }
        if script.kind == "POST":
            macros["$RETURN"] = str(node.job_return if node.job_return is not None else -1)
            macros["$PRE_SCRIPT_RETURN"] = str(node.pre_return if node.pre_return is not None else -1)
            macros["$JOBID"] = f"{node.cluster}.0"
        return tuple(macros.get(word, word) for word in script.argv)

    # -- read-only views ------------------------------------------------------------------------

    def node_state(self, name: str) -> NodeState:
        return self.nodes[name].state

    def node_reason(self, name: str) -> str | None:
        return self.nodes[name].reason

    def node_history(self, name: str) -> list[tuple[float, str, str]]:
        return list(self.nodes[name].history)

    def throttle_statistics(self) -> list[Any]:
        out = [t.statistics() for t in (self.maxjobs, self.maxpre, self.maxpost)]
        out.append(self.maxidle.statistics())
        out.extend(t.statistics() for t in self._categories.values())
        return out
