"""DAGMan semantics as a pure state machine: events in, (journal changes, instructions) out.

Nothing here touches a process, a file or a clock of its own: the loop (``_loop.py``) feeds
past-tense events (:class:`JobExited`, :class:`JobHeld`, :class:`SubmitFailed`,
:class:`ScriptExited`, :class:`DeferElapsed`, :class:`Interrupted`) to :meth:`DagState.advance` and
gets back a :class:`Step`: the state *changes* to journal durably first, then the imperative
*instructions* (:class:`Submit`, :class:`RunScript`, :class:`Defer`, :class:`Cancel`,
:class:`KillScript`, :class:`WriteRescue`, :class:`Finish`) to carry out; these records live in
``_events.py``, the node record and its story in ``_nodes.py``.  DagState owns two objects with
public methods: its :class:`ReadyQueues` (``_queues.py``: the ready and script queues and the
throttles) and its :class:`Ending` (``_ending.py``: abort, stop, halt, rescue DAG, FINAL, outcome).
Time comes from an injected clock.

Node states (a ``Literal``) and the life of one attempt::

    waiting ─► pre_ready ─► pre ─► ready ─► submitted ─► post_ready ─► post ─► done
                  ▲          │ └► pre_deferred ─┘   │                  │ └► post_deferred ─┘
                  └── retry ─┴──────────────────────┴──────────────────┴──► failed

Every transition is a small function in ``TRANSITIONS[(start, finish)]`` (``_transitions.py``), which
uses DagState's public steps (:meth:`DagState.transition`, :meth:`DagState.emit`,
:meth:`DagState.release_children`) and its ready queues' methods; any pair not in the table raises
:class:`InvalidTransition` carrying the node's story.
:meth:`DagState.validate_state` checks the invariants (counters against node states, queues against
ready nodes, throttle tokens against nodes in flight); the tests call it after every step.

Success rules (HTCondor "Node Success/Failure"): the last component that ran decides.  A POST
script, when present, always runs after the job - a NOOP node's "job" included, with ``$RETURN`` 0 -
and its exit code is the node's; ``$RETURN`` is the job's exit code, ``-signal`` when killed, -1001
when the job could not be submitted (a missing submit file, possibly one a PRE script or an earlier
node was to write: DAGMan's submit failure, which also cancels the node's retries) or could never
run (held), -1004 when the PRE script failed (with ``DAGMAN_ALWAYS_RUN_POST``).  ``PRE_SKIP`` marks
the node done.  A failed node is retried (whole node: PRE, job, POST) while retries remain, unless
its exit value is the ``UNLESS-EXIT`` value.  ``ABORT-DAG-ON`` is checked against the PRE script's
value, the job's value when there is no POST script, and the POST script's value; an abort
overrides retries and cancels everything in flight; the DAG then exits with ``RETURN r`` (status
``DAG_STATUS_OK`` when r is 0), else with the node's value.

The end of a run, as ``main_shutdown_rescue`` in DAGMan's ``dagman_main.cpp``: once nothing is in
flight, a DAG that failed (a node failed, an abort with a non-zero value, a stop by SIGTERM/SIGINT,
or nodes that can never become ready because of a cycle: ``DAG_STATUS_CYCLE``) gets its rescue DAG
*before* the FINAL node starts - so a rescue DAG exists even when FINAL then succeeds; FINAL runs in
every case (also after a stop: a second stop ends it too), sees ``$DAG_STATUS``/``$FAILED_COUNT``,
and decides the DAG's outcome: exit 0 when it succeeds, 1 when it fails.  Without FINAL a failed
DAG exits 1 (an abort: its value).

Holds (dag.cpp ``ProcessHeldEvent``/``ProcessReleasedEvent``): a proc put on hold or released
leaves its node submitted; the change is journaled as a note (start = finish) so that
``jobstate.log``, the node job event log and the node status file show it, and the HOLD script
runs.  The node's holds are counted over its attempts; once they reach ``DAGMAN_MAX_JOB_HOLDS``
(default 100, 0 = no limit) the job is removed and the attempt ends as an aborted job (-1002).

Scheduling (DAGMan's ``DagPriorityQ``): ready nodes wait in heaps keyed ``(-effective priority,
seq)`` - one heap per CATEGORY - where ``seq`` grows as nodes become ready (first ready, first
submitted: breadth first) or, with ``DAGMAN_SUBMIT_DEPTH_FIRST``, shrinks (last ready, first
submitted); a retried node goes first with ``DAGMAN_RETRY_NODE_FIRST``.  The effective priority
is the node's PRIORITY plus the DAG's (``DAGMAN_DEFAULT_PRIORITY``, or the SUBDAG node's effective
priority passed down).  PRE and POST scripts wait in first-come queues, as DAGMan's script queues.
Each event costs O(log n); children are released by in-degree counters.  Throttles (maxjobs,
maxidle, maxpre, maxpost, per-category MAXJOBS) are :mod:`._throttle` objects the ready queues hold;
a NOOP node takes no job token.  A step emits at most ``DAGMAN_MAX_SUBMITS_PER_INTERVAL`` Submit
instructions (DAGMan's submissions "in a row before it services other requests"; one interval is one
step here): the rest go in the next steps in the same order, and ``Step.more`` tells the loop to
take the next step at once rather than wait for events.
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
    "Details",
    "EngineEvent",
    "Finish",
    "Halted",
    "Instruction",
    "Interrupted",
    "InvalidTransition",
    "JobExited",
    "JobHeld",
    "JobReleased",
    "JobRemoved",
    "JobRequeued",
    "JobSuspended",
    "KillScript",
    "Limits",
    "NodeState",
    "ProvisionerReady",
    "RunScript",
    "ScriptExited",
    "Step",
    "Submit",
    "SubmitFailed",
    "WriteRescue",
    "WriteSavePoint"
]

from collections.abc import Callable, Iterable, Mapping

from sheaf.condor import Dag, Script
from sheaf.engine._ending import Abort, Ending
from sheaf.engine._events import (
    Cancel,
    Change,
    Defer,
    DeferElapsed,
    Details,
    EngineEvent,
    Finish,
    Halted,
    Instruction,
    Interrupted,
    JobExited,
    JobHeld,
    JobReleased,
    JobRemoved,
    JobRequeued,
    JobSuspended,
    KillScript,
    ProvisionerReady,
    RunScript,
    ScriptExited,
    Step,
    Submit,
    SubmitFailed,
    WriteRescue,
    WriteSavePoint,
)
from sheaf.engine._invariants import check_invariants
from sheaf.engine._nodes import (
    ACTIVE_STATES,
    RETURN_ABORTED,
    RETURN_HELD,
    RETURN_PRE_FAILED,
    RETURN_SUBMIT_FAILED,
    STATES,
    SUBMIT_FAILED_TEXT,
    InvalidTransition,
    Node,
    NodeState,
    expected_state,
    job_error_text,
    post_error_text,
    signal_text,
    unmet_parents,
)
from sheaf.engine._queues import ReadyQueues
from sheaf.engine._scriptmacros import script_argv
from sheaf.engine._throttle import Limits, ThrottleStatistics
from sheaf.engine._transitions import TRANSITIONS


def _value(exit_code: int | None, signal: int | None) -> int:
    return exit_code if exit_code is not None else -(signal or 0)


class DagState:
    """The whole DAG's state.  Build it, call :meth:`start`, then :meth:`advance` per loop turn."""

    def __init__(self, dag: Dag, limits: Limits, clock: Callable[[], float], *,
                 done: Iterable[str] = (), failed: Iterable[str] = (),
                 attempts: Mapping[str, int] | None = None, next_cluster: int = 1,
                 reasons: Mapping[str, str | None] | None = None,
                 retry_limits: Mapping[str, tuple[int, int | None]] | None = None) -> None:
        self.dag = dag
        self.clock = clock
        self.limits = limits
        self.nodes: dict[str, Node] = {n: Node(s, i, limits.dag_priority)
                                       for i, (n, s) in enumerate(dag.nodes.items())}
        self.queues = ReadyQueues(self.nodes, limits, dag.maxjobs)
        self.ending = Ending()
        self.counts: dict[str, int] = dict.fromkeys(STATES, 0)
        self._step = Step()
        self._next_cluster = next_cluster
        self._submits_left = limits.max_submits_per_interval  # this step's (DAGMAN_MAX_SUBMITS_PER_INTERVAL)
        self.active = 0
        self.failed_count = 0
        self.retries = 0
        self.held_procs = 0  # procs of the nodes' jobs on hold now (DAGMan's "job proc(s) currently held")
        self.retried: list[tuple[str, int, int]] = []  # (node, retry number, RETRY's count) since taken
        self.job_time = 0.0
        self.aborted: Abort | None = None
        self.interrupted = False
        self.halted = False  # DAGMan's halt: nothing new starts but POST scripts (and FINAL)
        self.halt_deferred: set[str] = set()  # nodes whose PRE script the halt deferred (still PRERUN)
        # nodes failed by an abort or a stop that cancelled their job or script: DAGMan writes its rescue
        # DAG before it removes them, so it counts them neither failed nor done
        self.cancelled: set[str] = set()
        self.cycle = False  # nodes left waiting with no failure to explain it
        self.finished: Finish | None = None
        self.dag_id = 0  # DAGMan's job id of this run ($DAGID), set by the loop
        self.provisioning = False  # the other nodes wait for the PROVISIONER's job to run
        for name, (limit, unless_exit) in (retry_limits or {}).items():  # a rescue DAG's RETRY lines
            self.nodes[name].max_retries = limit
            if unless_exit is not None:
                self.nodes[name].unless_exit = unless_exit
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
            node.unmet = unmet_parents(self.dag, self.nodes, name)

    def start(self, idle: int = 0) -> Step:
        """Release the nodes that can start (:meth:`_start_nodes`), then dispatch."""
        self._start_nodes()
        return self._finish_step(idle)

    # -- the core -------------------------------------------------------------------------------

    def advance(self, events: Iterable[EngineEvent], idle: int = 0) -> Step:
        for event in events:
            self._handle(event)
        return self._finish_step(idle)

    def _finish_step(self, idle: int) -> Step:
        if self.finished is None:
            if self.halted:
                self.ending.halt(self)
            self._dispatch(idle)
            if self.active == 0:
                self._end()
        step, self._step = self._step, Step()
        return step

    # -- the rules' steps (the transition table and the ending use them) ---------------------------

    def transition(self, node: Node, finish: NodeState, info: Details | None = None) -> None:
        """Move ``node`` to ``finish``: record the change (the node's story, the step's changes to
        journal), then do what the table says entering ``finish`` entails."""
        start = node.state
        fn = TRANSITIONS.get((start, finish))
        if fn is None:
            raise InvalidTransition(node.name, start, finish, node.history, attempt=node.attempt,
                                    reason=node.reason)
        now = self.clock()
        node.state = finish
        self.counts[start] -= 1
        self.counts[finish] += 1
        self.active += (finish in ACTIVE_STATES) - (start in ACTIVE_STATES)
        change = Change(now, node.name, start, finish, node.attempt, info)
        node.history.append(change)  # the node's story holds the record the step journals
        self._step.changes.append(change)
        fn(self, node)  # after the record: children released here come later in the log

    def emit(self, instruction: Instruction) -> None:
        """Add an instruction to the step, after those emitted before it."""
        self._step.instructions.append(instruction)

    def release_children(self, node: Node, weak_only: bool = False) -> None:
        """``node`` finished: each child has one parent less to wait for, and starts when none is
        left; a failed node releases only its WEAK children (``weak_only``)."""
        if node.name == self.dag.provisioner:
            self._provisioned()
        dag = self.dag
        for child_name in dag.children[node.name]:
            if weak_only and (node.name, child_name) not in dag.weak:
                continue
            child = self.nodes[child_name]
            child.unmet -= 1
            if child.unmet == 0 and child.state == "waiting" and self.aborted is None \
                    and not self.interrupted:
                self._make_ready(child)

    # -- readiness ------------------------------------------------------------------------------
    # A node starts (DAGMan's ``StartNode``: _make_ready) when it has no parent left to wait for; a
    # retry does not start it again.  Its SAVE_POINT_FILE is written first.  With a PROVISIONER node
    # not done yet, the run starts that node alone and every other node waits until its job runs
    # (_provisioned, DAGMan's ``_provisioner_ready``) - or until it is done, if its job ended before
    # the engine saw it running.

    def _make_ready(self, node: Node) -> None:
        if node.spec.save_point is not None:
            self.emit(WriteSavePoint(node.name, self._named("done"), self._named("failed")))
        self.transition(node, "pre_ready" if node.spec.pre is not None else "ready")

    def _named(self, state: NodeState) -> tuple[str, ...]:
        return tuple(n for n, node in self.nodes.items() if node.state == state)

    def _may_start(self, node: Node) -> bool:
        return node.state == "waiting" and node.unmet == 0 and not node.spec.final \
            and self.aborted is None and not self.interrupted

    def _start_nodes(self) -> None:
        """As the run starts: every node whose parents are all done, in declaration order (the
        PROVISIONER alone while it is not done)."""
        provisioner = self.nodes.get(self.dag.provisioner or "")
        self.provisioning = provisioner is not None and provisioner.state == "waiting"
        for node in [provisioner] if provisioner is not None and self.provisioning else self.nodes.values():
            if self._may_start(node):
                self._make_ready(node)

    def _provisioned(self) -> None:
        if self.provisioning:
            self.provisioning = False
            for node in self.nodes.values():
                if self._may_start(node):
                    self._make_ready(node)

    # -- dispatch -------------------------------------------------------------------------------

    def _dispatch(self, idle: int) -> None:
        """Start scripts and submit jobs until nothing more can start: a NOOP node's POST script
        becomes ready during the submissions and must start in the same step.  At most
        ``max_submits_per_interval`` Submit instructions per step; the step says whether a ready
        node the cap held back could have been submitted (``Step.more``)."""
        queues = self.queues
        queues.observe_idle(idle)
        self._submits_left = self.limits.max_submits_per_interval
        while self._start_scripts() + self._submit_ready():
            pass
        self._step.more = self._submits_left <= 0 and queues.has_ready()

    def _start_scripts(self) -> int:
        started = 0
        for next_node, kind in ((self.queues.next_pre, "PRE"), (self.queues.next_post, "POST")):
            while (node := next_node()) is not None:
                self.transition(node, "pre" if kind == "PRE" else "post")
                script = node.spec.pre if kind == "PRE" else node.spec.post
                self.emit(RunScript(node.name, "PRE" if kind == "PRE" else "POST", node.attempt,
                                    self._script_argv(node, script), node.spec.directory,
                                    script.debug if script is not None else None))
                started += 1
        return started

    def _submit_ready(self) -> int:
        submitted = 0
        while self._submits_left > 0:
            ready = self.queues.next_ready()
            if ready is None:
                break
            self._submit(ready)
            submitted += 1
        return submitted

    @property
    def next_cluster(self) -> int:
        """The cluster id the next job gets."""
        return self._next_cluster

    def take_cluster(self) -> int:
        """The next cluster id, for a job outside the DAG's nodes (a SERVICE node's)."""
        self._next_cluster += 1
        return self._next_cluster - 1

    def _submit(self, node: Node) -> None:
        if node.spec.noop:
            self.transition(node, "submitted", {"noop": True})
            self._job_finished(node, 0, {"noop": True})
            return
        self.queues.take_job_tokens(node)
        node.cluster = self._next_cluster
        self._next_cluster += 1
        self.transition(node, "submitted", {"cluster": node.cluster})
        self._submits_left -= 1
        self.emit(Submit(node.name, node.attempt, node.cluster, node.prio, self.dag_status(),
                          self.failed_count))

    # -- events ---------------------------------------------------------------------------------

    def _handle(self, event: EngineEvent) -> None:
        if isinstance(event, Interrupted):
            self.ending.interrupt(self, event.reason)
            return
        if isinstance(event, Halted):
            self.halted = True
            return
        if isinstance(event, ScriptExited) and event.kind == "HOLD":
            return  # DAGMan ignores what a HOLD script returns
        if isinstance(event, ProvisionerReady):
            self._provisioned()
            return
        node = self.nodes.get(event.node)
        if node is None:
            raise KeyError(f"event for unknown node {event.node!r}")
        expected = expected_state(event)
        if event.attempt != node.attempt or node.state != expected:
            if self.aborted is not None or self.interrupted or self.halted:
                return  # a late report about an attempt already cancelled (abort, interrupt, halt)
            raise InvalidTransition(node.name, node.state, f"{type(event).__name__} (expects {expected}, "
                                    f"attempt {event.attempt})", node.history, attempt=node.attempt,
                                    reason=node.reason)
        match event:
            case JobExited():
                self._on_job_exited(node, event)
            case JobHeld(reason=reason):
                node.reason = reason
                self._job_finished(node, RETURN_HELD, {"reason": reason})
            case JobSuspended(reason=reason, proc=proc, code=code, subcode=subcode):
                self._on_hold(node, reason, proc, code, subcode)
            case JobReleased(proc=proc, reason=reason):
                self._on_release(node, proc, reason)
            case JobRequeued(proc=proc, exit_code=code, signal=sig, reason=reason):
                info: Details = {"requeued": reason, "proc": proc}
                if code is not None:
                    info["exit"] = code
                if sig is not None:
                    info["signal"] = sig
                self._note(node, info)
            case JobRemoved(reason=reason, procs=procs):
                self._removed(node, reason, procs)
            case SubmitFailed(reason=reason):
                node.reason = f"submit failed: {reason}"
                node.error_text = SUBMIT_FAILED_TEXT
                node.poisoned = True  # DAGMan: a submit failure short-circuits the node's retries
                self._job_finished(node, RETURN_SUBMIT_FAILED, {"reason": node.reason, "submit_failed": True})
            case ScriptExited():
                self._on_script(node, event)
            case DeferElapsed(kind=kind):
                self.transition(node, "pre_ready" if kind == "PRE" else "post_ready")

    def _note(self, node: Node, info: Details) -> None:
        """Journal what happened to a node that stays in its state (a hold, a release)."""
        now = self.clock()
        change = Change(now, node.name, node.state, node.state, node.attempt, info)
        node.history.append(change)
        self._step.changes.append(change)

    def _on_hold(self, node: Node, reason: str, proc: int, code: int = 3, subcode: int = 0) -> None:
        """dag.cpp ``ProcessHeldEvent``: the job stays queued (submitted) until released or removed,
        and the node's HOLD script runs.  Once the node's jobs went on hold ``DAGMAN_MAX_JOB_HOLDS``
        times (the manual: "as the job goes on hold this number of times, it is removed"), its
        procs are removed: the attempt ends as an aborted job (-1002)."""
        if proc in node.held_procs:
            return  # already on hold: DAGMan ignores a second hold event
        node.held_procs.add(proc)
        self.held_procs += 1
        node.times_held += 1
        self._note(node, {"held": reason, "proc": proc, "hold_code": code, "hold_subcode": subcode})
        hold = node.spec.hold
        if hold is not None:
            self.emit(RunScript(node.name, "HOLD", node.attempt, self._script_argv(node, hold),
                                 node.spec.directory, hold.debug))
        limit = self.limits.max_job_holds
        if limit and node.times_held >= limit:
            self.emit(Cancel(node.name, node.attempt))
            self._removed(node, "DAG Limit: Max number of held jobs was reached.")

    def _on_release(self, node: Node, proc: int, reason: str = "") -> None:
        if proc in node.held_procs:  # else not on hold: nothing to release (DAGMan warns)
            node.held_procs.discard(proc)
            self.held_procs -= 1
            self._note(node, {"released": True, "proc": proc, "release_reason": reason})

    def _removed(self, node: Node, reason: str, procs: tuple[int | None, ...] = ()) -> None:
        node.reason = f"removed: {reason}"
        proc = next((i for i, code in enumerate(procs) if code is None), 0)
        node.error_text = f"HTCondor reported ULOG_JOB_ABORTED event for job proc ({node.cluster}.{proc}.0)"
        self._job_finished(node, RETURN_ABORTED, {"reason": node.reason, "removed": True}, procs=procs)

    def _on_job_exited(self, node: Node, event: JobExited) -> None:
        if event.ended > event.started:
            self.job_time += event.ended - event.started
        own = _value(event.exit_code, event.signal)  # a job list's: 0, or its first failure's
        info: Details = {"started": event.started, "ended": event.ended}
        if event.exit_code is not None:
            info["exit"] = event.exit_code
        if event.signal is not None:
            info["signal"] = event.signal
        if event.reason is not None:
            info["reason"] = event.reason
        if event.slot is not None:
            info["slot"] = event.slot
        node.reason = event.reason or (f"exit code {own}" if own else None)
        if own:  # the proc that failed first (the first of the list with that value)
            proc = next((i for i, code in enumerate(event.procs) if code == own), 0)
            node.error_text = job_error_text(node.cluster, proc, event.exit_code, event.signal)
        # a job list's success and its return value are apart (a tolerated failure may be returned)
        value = own if event.returned is None else event.returned
        self._job_finished(node, value, info, own != 0, event.procs)

    def _job_finished(self, node: Node, value: int, info: Details, failed: bool | None = None,
                      procs: tuple[int | None, ...] = ()) -> None:
        """The node's job ended with DAGMan's return ``value``; ``failed``: whether it failed (by
        default whether ``value`` is not 0; a job list's own, see ``_procs``)."""
        if node.held_procs:  # a held job that is removed gets no release event
            self.held_procs -= len(node.held_procs)
            node.held_procs.clear()
        node.job_return = value
        node.job_failed = value != 0 if failed is None else failed
        node.procs = procs
        details: Details = {"return": value, **info}
        if node.spec.post is not None:
            self.transition(node, "post_ready", details)
        elif self.ending.abort_matches(self, node, value):
            self.ending.abort(self, node, value, details, done=not node.job_failed)
        elif not node.job_failed:
            node.value = 0
            self.transition(node, "done", details)
        else:
            self._failed(node, value, details)

    def _on_script(self, node: Node, event: ScriptExited) -> None:
        value = _value(event.exit_code, event.signal)
        kind = event.kind
        assert kind != "HOLD"  # ignored by _handle
        script = node.spec.pre if kind == "PRE" else node.spec.post
        assert script is not None
        info: Details = {"script": kind, "return": value}
        if event.error is not None:
            info["error"] = event.error
        if script.defer_status is not None and value == script.defer_status:
            self.transition(node, "pre_deferred" if kind == "PRE" else "post_deferred", info)
            self.emit(Defer(node.name, kind, node.attempt, script.defer_time))
        elif kind == "PRE":
            self._on_pre(node, value, info)
        else:
            self._on_post(node, value, info)

    def _on_pre(self, node: Node, value: int, info: Details) -> None:
        node.pre_return = value
        if value:
            node.error_text = f"PRE Script died on {signal_text(-value)}" if value < 0 \
                else f"PRE Script failed with status {value}"
        if value != 0 and value == node.spec.pre_skip:  # a PRE script that succeeds is no skip (dag.cpp)
            node.value = 0
            self.transition(node, "done", {**info, "skipped": True})
        elif self.ending.abort_matches(self, node, value):
            self.ending.abort(self, node, value, info)
        elif value == 0:
            self.transition(node, "ready", info)
        elif self.limits.always_run_post and node.spec.post is not None:
            node.job_return, node.job_failed, node.procs = RETURN_PRE_FAILED, True, ()
            self.transition(node, "post_ready", info)
        else:
            node.reason = f"PRE script exited with {value}"
            self._failed(node, value, info)

    def _on_post(self, node: Node, value: int, info: Details) -> None:
        if value:  # DAGMan's words use the node's value before the script: the PRE script's if it failed
            before = node.pre_return if node.job_return == RETURN_PRE_FAILED and node.pre_return else \
                node.job_return or 0
            node.error_text = post_error_text(before, value if value >= 0 else None,
                                              -value if value < 0 else None)
        if self.ending.abort_matches(self, node, value):
            self.ending.abort(self, node, value, info, done=value == 0)
        elif value == 0:
            node.value = 0
            self.transition(node, "done", info)
        else:
            node.reason = f"POST script exited with {value}" + (
                f" (job: {node.reason})" if node.reason else "")
            self._failed(node, value, info)

    def _failed(self, node: Node, value: int, info: Details) -> None:
        node.value = value
        spec = node.spec
        if node.attempt < node.max_retries and value != node.unless_exit and not self.interrupted \
                and not node.poisoned:
            node.attempt += 1
            self.retries += 1
            self.retried.append((node.name, node.attempt, node.max_retries))
            why: Details = {"why": node.reason} if node.reason else {}
            node.error_text = None  # the next attempt's failure has its own words
            target: NodeState = "pre_ready" if spec.pre is not None else "ready"
            self.queues.retry_first = self.limits.retry_node_first
            try:
                self.transition(node, target, {**info, "retry": node.attempt, **why})
            finally:
                self.queues.retry_first = False
            return
        node.poisoned = False
        if node.max_retries > 0 and node.error_text and node.error_text != SUBMIT_FAILED_TEXT:
            node.error_text += f" (after {node.attempt} node retries)"
        self.failed_count += 1
        self.transition(node, "failed", {**info, "why": node.reason or f"exit value {value}"})
        if self.dag.weak:
            self.release_children(node, weak_only=True)

    # -- the end (``_ending``) ------------------------------------------------------------------

    def _end(self) -> None:
        """Nothing in flight: write the rescue DAG of a failed DAG, then run FINAL, or conclude."""
        final = self.ending.begin(self)
        if final is not None:
            self._make_ready(final)
            self._dispatch(0)
            if self.active:
                return
        self.ending.conclude(self)

    def dag_status(self) -> int:
        """DAGMan's ``$DAG_STATUS`` now (``DAG_OK`` while nothing went wrong)."""
        return self.ending.dag_status(self)

    # -- script macros --------------------------------------------------------------------------

    def _script_argv(self, node: Node, script: Script | None) -> tuple[str, ...]:
        assert script is not None
        return script_argv(self, node, script)

    # -- read-only views ------------------------------------------------------------------------

    def node_state(self, name: str) -> NodeState:
        return self.nodes[name].state

    def node_reason(self, name: str) -> str | None:
        return self.nodes[name].reason

    def throttle_statistics(self) -> list[ThrottleStatistics]:
        return self.queues.statistics()

    def validate_state(self) -> None:
        """Raise ``AssertionError`` naming every broken invariant (see ``_invariants``)."""
        check_invariants(self)
