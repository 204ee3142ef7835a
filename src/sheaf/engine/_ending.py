"""How a run ends: ABORT-DAG-ON, a stop (SIGTERM/SIGINT), a halt, the rescue DAG, FINAL and the outcome.

The policy is in ``_state``'s docstring ("The end of a run"), after DAGMan's ``main_shutdown_rescue``:
once nothing is in flight, a failed DAG gets its rescue DAG before FINAL starts; FINAL runs in every
case and its outcome is the DAG's.  :class:`Ending` is the state machine's (``DagState.ending``): it
keeps what only the end needs (whether FINAL's turn came, whether the rescue DAG was written) and
changes the nodes through the state machine's public steps (``transition``, ``emit``).  The state
machine hands itself to each call rather than being held: a machine and its ending in a reference
cycle would outlive the run until the cyclic collector found them.
"""

from __future__ import annotations

__all__ = ["Abort", "Ending"]

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sheaf.engine._events import Cancel, Details, Finish, KillScript, WriteRescue
from sheaf.engine._nodes import (
    ACTIVE_STATES,
    DAG_ABORTED,
    DAG_CYCLE,
    DAG_HALTED,
    DAG_NODES_FAILED,
    DAG_OK,
    DAG_REMOVED,
    Node,
)

if TYPE_CHECKING:
    from sheaf.engine._state import DagState


#: DAGMan's exit value on ``condor_rm`` (``EXIT_ABORT``): in its jobstate log, metrics and dagman.out
REMOVED_EXIT = 2


#: the reasons DAGMan gives condor_rm for the jobs it removes as it stops (``main_shutdown_rescue``)
STOP_REMOVAL = "DAG Removed: User removed scheduler job from queue."
ABORT_REMOVAL = "DAG Abort: DAG is exiting and writing rescue file."


@dataclass(frozen=True, slots=True)
class Abort:
    node: str
    value: int  # the node's value that matched ABORT-DAG-ON
    returns: int | None  # its RETURN value

    @property
    def exit_code(self) -> int:
        return self.returns if self.returns is not None else self.value


class Ending:
    """The end of one DagState's run (see the module docstring)."""

    __slots__ = ("_final_started", "_rescued")

    def __init__(self) -> None:
        self._final_started = False  # nothing was in flight once: the rescue DAG and FINAL's turn came
        self._rescued = False

    # -- abort, stop, halt ----------------------------------------------------------------------

    def abort_matches(self, machine: DagState, node: Node, value: int) -> bool:
        return node.spec.abort_on is not None and node.spec.abort_on[0] == value and machine.aborted is None

    def abort(self, machine: DagState, node: Node, value: int, info: Details, *, done: bool = False) -> None:
        """Abort the DAG on ``node``'s value; ``done``: the value is a success (0 from the node's job or
        POST script), so the node is done -- as DAGMan finishes a node before it checks for an abort --
        and the rescue DAG says so."""
        node.value = value
        node.reason = f"ABORT-DAG-ON: exit value {value}"
        if done:
            machine.transition(node, "done", {**info, "why": node.reason, "abort": True})
        else:
            machine.failed_count += 1
            machine.transition(node, "failed", {**info, "why": node.reason, "abort": True})
        machine.aborted = Abort(node.name, value, node.spec.abort_on[1] if node.spec.abort_on else None)
        self._stop_everything(machine, "DAG aborted by ABORT-DAG-ON", ABORT_REMOVAL)

    def interrupt(self, machine: DagState, reason: str) -> None:
        """A stop (DAGMan's ``condor_rm``): cancel everything, then run FINAL; a second stop while
        FINAL runs ends that too."""
        if machine.finished is not None:
            return
        if machine.interrupted and not self._final_started:
            return
        machine.interrupted = True
        self._stop_everything(machine, reason, STOP_REMOVAL)

    def halt(self, machine: DagState) -> None:
        """A halted DAG (``Dag::Halt``) before FINAL's turn: the nodes waiting for a PRE script slot, a
        submission or a deferral go back to waiting - none starts; POST scripts still run and jobs
        in flight finish."""
        if self._final_started:
            return
        if not (machine.queues.starts_pending() or machine.counts["pre_deferred"]):
            return
        machine.queues.clear(post=False)
        for node in machine.nodes.values():
            if node.state in ("pre_ready", "ready", "pre_deferred"):
                if node.state != "ready":  # DAGMan defers its PRE script: it stays PRERUN for the record
                    machine.halt_deferred.add(node.name)
                machine.transition(node, "waiting", {"why": "DAG halted"})

    def _stop_everything(self, machine: DagState, reason: str, removal: str) -> None:
        """Cancel everything in flight for ``reason``; ``removal`` is the reason DAGMan gives condor_rm
        for its jobs, which their JOB_ABORTED events carry."""
        machine.queues.clear(post=True)
        for node in machine.nodes.values():
            state = node.state
            if state == "submitted":
                node.reason = reason
                machine.cancelled.add(node.name)
                if node.token:
                    machine.emit(Cancel(node.name, node.attempt))
                machine.failed_count += 1
                machine.transition(node, "failed", {"why": reason, "cancelled": True, "removal": removal})
            elif state in ("pre", "post"):
                node.reason = reason
                machine.cancelled.add(node.name)
                machine.emit(KillScript(node.name, "PRE" if state == "pre" else "POST"))
                machine.failed_count += 1
                machine.transition(node, "failed", {"why": reason, "cancelled": True})
            elif state in ACTIVE_STATES:
                machine.transition(node, "waiting", {"why": reason})

    # -- nothing in flight ----------------------------------------------------------------------

    def begin(self, machine: DagState) -> Node | None:
        """Nothing in flight, the first time: note a cycle, write the rescue DAG of a failed DAG;
        returns the FINAL node when it waits to start (the state machine starts it), else None."""
        if self._final_started:
            return None
        self._final_started = True
        machine.cycle = self._left_waiting(machine)
        if self._exit_value(machine) != 0:
            self._write_rescue(machine)
        final = machine.nodes[machine.dag.final] if machine.dag.final is not None else None
        return final if final is not None and final.state == "waiting" else None

    def _left_waiting(self, machine: DagState) -> bool:
        """Regular nodes that never became ready although no node failed: a cycle (DAGMan checks
        for one at this point and reports ``DAG_STATUS_CYCLE``)."""
        if machine.failed_count or machine.aborted is not None or machine.interrupted or machine.halted:
            return False
        return any(n.state != "done" for n in machine.nodes.values() if not n.spec.final)

    def _exit_value(self, machine: DagState) -> int:
        """The value DAGMan's shutdown would exit with before FINAL runs (non-zero: a rescue DAG)."""
        if machine.aborted is not None:
            return machine.aborted.exit_code
        if machine.interrupted:
            return REMOVED_EXIT
        if machine.failed_count or machine.cycle or machine.halted:
            return 1
        return 0

    def dag_status(self, machine: DagState) -> int:
        if machine.interrupted:
            return DAG_REMOVED
        if machine.aborted is not None:
            return DAG_OK if machine.aborted.returns == 0 else DAG_ABORTED
        if machine.halted:
            return DAG_HALTED
        if machine.failed_count:
            return DAG_NODES_FAILED
        return DAG_CYCLE if machine.cycle else DAG_OK

    def conclude(self, machine: DagState) -> None:
        """With a FINAL node that ran, its outcome is the DAG's, overriding failures and aborts - even an
        ABORT-DAG-ON ... RETURN 0 (the manual: FINAL's outcome "includes any status specified by any
        ABORT-DAG-ON specification that has taken effect"; a failed FINAL exits 1, ``DoneFailed``)."""
        final = machine.nodes[machine.dag.final] if machine.dag.final is not None else None
        if final is not None and final.state in ("done", "failed"):
            succeeded = final.state == "done"
            exit_code = 0 if succeeded else 1
        elif machine.aborted is not None and machine.aborted.returns == 0:
            succeeded, exit_code = True, 0  # ABORT-DAG-ON ... RETURN 0: DAGMan's DAG_STATUS_OK
        else:
            exit_code = self._exit_value(machine)
            succeeded = exit_code == 0
        if not succeeded:  # after a failed FINAL, again: DAGMan overwrites its rescue DAG with FINAL failed
            self._write_rescue(machine, again=final is not None and final.state == "failed")
        machine.finished = Finish(succeeded, self.dag_status(machine), exit_code)
        machine.emit(machine.finished)

    def _write_rescue(self, machine: DagState, again: bool = False) -> None:
        """One rescue DAG per run: written before FINAL starts, and ``again`` (overwritten, as DAGMan's
        ``Dag::Rescue`` keeps one file per execution) once a FINAL node failed, which it lists then."""
        if self._rescued and not again:
            return
        self._rescued = True
        done = tuple(n for n, node in machine.nodes.items() if node.state == "done" and not node.spec.final)
        left = tuple((n, node.max_retries - node.attempt) for n, node in machine.nodes.items()
                     if node.state != "done" and node.max_retries)
        machine.emit(WriteRescue(done, left, machine.failed_count))
