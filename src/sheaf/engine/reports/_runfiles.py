"""The files a run writes for people and tools, as DAGMan writes them, kept by one object per run.

* ``jobstate.log`` (``_jobstate``): the ``JOBSTATE_LOG`` file, only when the DAG declares one, as
  DAGMan writes it (a planned DAG declares it, as Pegasus's do); what the monitor and ``sheaf status``
  know of a run comes from the journal, never from this file;
* ``<primary dag>.nodes.log`` (``_nodelog``): the node jobs' events in HTCondor's event log format;
* the ``NODE_STATUS_FILE`` (``_nodestatus``) and the ``DOT`` file (``_dot``), when the DAG names them;
* the rescue DAG (``_rescue``), when the state machine asks for one, and a
  ``SAVE_POINT_FILE`` (the same format, retries reset, DAGMan's header) when a node with a save point
  starts for the first time - a file already there is kept as ``<file>.old``, as DAGMan keeps it;
* ``<primary dag>.metrics`` (``_metrics``) when the run ends.

Order within a loop turn (``record``): the turn's changes are journaled first (by the loop), its
instructions carried out, then the node events of the turn are appended to jobstate.log and the node
log - after the submissions, so that a submission that failed is written as ``SUBMIT_FAILURE``
rather than ``SUBMIT`` - and both files flushed.  None of these files is read back to resume a run:
the journal is.

The DAGMan job id of a run, written in the ``DAGMAN_STARTED`` line and the metrics, is ``_dagid``'s.
A killed engine's temporaries of the files replaced atomically are removed as the next run starts
(:func:`remove_stale_files`), before the run writes any.
"""

from __future__ import annotations

__all__ = ["RunFiles", "remove_stale_files"]

import glob
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from sheaf.condor import Dag
from sheaf.engine._dagid import PARENT_ID_VARIABLE, PARENT_NODE_VARIABLE, dagman_id
from sheaf.engine._events import Change, Finish, WriteSavePoint
from sheaf.engine._jobad import OWNER
from sheaf.engine._nodes import SERVICE_REMOVED, futile_nodes
from sheaf.engine._paths import MAX_RESCUE_DEFAULT, rescue_dag_number
from sheaf.engine._runconfig import MAX_RESCUE_NUM, config_clamped, node_log_pattern
from sheaf.engine.reports._dot import DotFile
from sheaf.engine.reports._files import remove_stale_temporaries, write_atomic
from sheaf.engine.reports._jobstate import JobstateLog
from sheaf.engine.reports._metrics import RunCounts, metrics_text
from sheaf.engine.reports._nodelog import NodesLog, nodes_log_path
from sheaf.engine.reports._nodestatus import StatusSnapshot, dag_outcome, node_status_text
from sheaf.engine.reports._rescue import RescueNode, rescue_text, write_rescue, write_save_point
from sheaf.engine.reports._runevents import EventTranslator, JobStart, NodeEvent, ProcEnd

if TYPE_CHECKING:
    from sheaf.engine._state import DagState

def remove_stale_files(dag: Dag) -> list[str]:
    """The temporaries a killed engine left of the files it replaces atomically; returns them."""
    files = [glob.escape(p) for p in (dag.dot, dag.node_status_file[0] if dag.node_status_file else None,
                                      dag.path + ".metrics") if p]
    if dag.dot and not dag.dot_options.overwrite:
        files.append(glob.escape(dag.dot) + ".[0-9]*")  # DOT ... DONT-OVERWRITE: numbered files
    rescues = [glob.escape(dag.path) + suffix + ".rescue[0-9][0-9][0-9]*" for suffix in ("", "_multi")]
    return remove_stale_temporaries(rescues + files)


def _weak_only(dag: Dag, name: str) -> bool:
    """DAGMan's ``AllChildrenWeak``: the node has children and every one is a WEAK child."""
    children = dag.children[name]
    return bool(dag.weak) and bool(children) and all((name, c) in dag.weak for c in children)


class RunFiles:
    def __init__(self, dag: Dag, tag_of: Callable[[str], str | None], *, dag_files: tuple[str, ...],
                 multi: bool = False, source: str = "fresh", pre_done: Collection[str] = ()) -> None:
        self.dag = dag
        self.dag_files = dag_files
        self.multi = multi
        self.source = source
        self.pre_done = frozenset(pre_done)
        self.parent_id = os.environ.get(PARENT_ID_VARIABLE, "")
        self.jobstate = JobstateLog(dag.jobstate_log, tag_of) if dag.jobstate_log else None
        self.nodes_log = NodesLog(nodes_log_path(dag.path, node_log_pattern(dag), {
            "CLUSTER": str(dagman_id()), "OWNER": OWNER,
            "NODE_NAME": os.environ.get(PARENT_NODE_VARIABLE) or "undef"}))
        self.user_logs: dict[str, str] = {}  # node -> its job's own event log (the description's ``log``)
        self._user_files: dict[str, NodesLog] = {}
        self.translator = EventTranslator()
        self.counts = RunCounts()
        self.rescue: str | None = None
        self.started_keys: set[tuple[str, int]] = set()
        self._outdated = True
        self._last_status = -1e18
        self._final = False  # the final snapshots are written: nothing changes after them
        self.dot = DotFile(dag) if dag.dot else None
        self.start_time = 0.0

    # -- the run's life -------------------------------------------------------------------------

    def begin(self, now: float) -> None:
        self.start_time = now
        if self.jobstate is None:
            return
        self.jobstate.internal(now, f"DAGMAN_STARTED {dagman_id()}.0")
        if self.source == "recovery":  # the journal has replayed the killed run: recovery is over
            self.jobstate.internal(now, "RECOVERY_STARTED")
            self.jobstate.internal(now, "RECOVERY_FINISHED")

    def record(self, changes: Iterable[Change], failed_submits: frozenset[tuple[str, int]],
               starts: Iterable[JobStart] = (), ends: Iterable[ProcEnd] = (),
               proc_counts: Mapping[str, int] | None = None) -> list[NodeEvent]:
        """The node events of ``changes`` written to the logs; returned (``Progress.events``)."""
        events = self.translator.events(changes, failed_submits, starts, ends, proc_counts or {})
        if events:
            self._outdated = True
            if self.dot is not None:
                self.dot.changed()
        for event in events:
            if event.kind == "SUBMIT":  # one per proc, as the job event log has them
                self.counts.jobs_submitted += 1
            elif event.kind == "JOB_TERMINATED" and not event.value and event.signal is None:
                self.counts.jobs_succeeded += 1  # a proc that exited with 0
        if self.jobstate is not None:
            # DAGMan without a FINAL node exits after removing the jobs of an abort or a stop, before it
            # reads their removal: jobstate.log has no line for it (the pool's event log does)
            self.jobstate.events(events if self.dag.final is not None
                                 else [e for e in events if not e.cancelled])
        self.nodes_log.events(events)
        if self.user_logs:
            self._to_user_logs(events)
        return events

    def service_events(self, events: list[NodeEvent]) -> None:
        """Events of SERVICE nodes' jobs, which the DAG does not follow: to the node log and the jobs'
        own logs only."""
        self.nodes_log.events(events)
        if self.user_logs:
            self._to_user_logs(events)
        for event in events:  # counted in the metrics as DAGMan counts a SERVICE node's job
            if event.kind == "SUBMIT":
                self.counts.jobs_submitted += 1
            elif event.kind == "JOB_TERMINATED":
                ok = not event.value and event.signal is None
                self.counts.jobs_succeeded += ok
                self.counts.services_succeeded += ok
                self.counts.services_failed += not ok
            elif event.kind == "JOB_ABORTED" and event.reason != SERVICE_REMOVED:
                self.counts.services_failed += 1  # removed by its policy or by hand: the node failed

    def service_failed(self) -> None:
        """A SERVICE node could not be submitted: a failed one in the metrics, as DAGMan counts it."""
        self.counts.services_failed += 1

    def user_log(self, node: str, path: object) -> None:
        """The event log the node's job names (``log = FILE``, HTCondor's ``UserLog``), which gets that
        job's events besides the DAG's node log, as HTCondor writes both; None: it names none."""
        if isinstance(path, str) and path and path != self.nodes_log.path:
            if path not in self._user_files:  # opened now: a log that cannot be opened fails the submission
                self._user_files[path] = NodesLog(path)
            self.user_logs[node] = path
        else:
            self.user_logs.pop(node, None)

    def _to_user_logs(self, events: Iterable[NodeEvent]) -> None:
        by_path: dict[str, list[NodeEvent]] = {}
        for event in events:
            path = self.user_logs.get(event.node)
            if path is not None:
                by_path.setdefault(path, []).append(event)
        for path, chosen in by_path.items():
            self._user_files[path].events(chosen)

    def flush(self) -> None:
        if self.jobstate is not None:
            self.jobstate.flush()
        self.nodes_log.flush()
        for log in self._user_files.values():
            log.flush()

    def write_rescue(self, machine: DagState, now: float) -> str | None:
        """The rescue DAG written, or ``None`` under ``DAGMAN_MAX_RESCUE_NUM = 0`` (none is written)."""
        limit = config_clamped(self.dag, "DAGMAN_MAX_RESCUE_NUM", MAX_RESCUE_DEFAULT, MAX_RESCUE_NUM)
        if limit == 0:
            return None
        cancelled = machine.cancelled
        nodes = [RescueNode(name, node.state == "done", node.state == "failed" and name not in cancelled,
                            node.spec.final,
                            node.max_retries, min(node.attempt, node.max_retries), node.unless_exit,
                            node.reason, _weak_only(self.dag, name))
                 for name, node in machine.nodes.items()]
        reset = self.dag.flag("DAGMAN_RESET_RETRIES_UPON_RESCUE", True)
        text = rescue_text(self.dag_files, nodes, reset, now)
        self.rescue = write_rescue(self.dag.path, text, self.multi, self.rescue, limit)
        return self.rescue

    def draw(self, machine: DagState, now: float) -> None:
        """The DOT file as the run starts."""
        if self.dot is not None:
            self.dot.write(machine.node_state, now)

    def write_save_point(self, machine: DagState, save: WriteSavePoint, now: float) -> None:
        path = machine.nodes[save.node].spec.save_point
        assert path is not None
        done, failed = set(save.done), set(save.failed)
        nodes = [RescueNode(name, name in done, name in failed, node.spec.final, node.max_retries,
                            reason=node.reason)
                 for name, node in machine.nodes.items()]
        text = rescue_text(self.dag_files, nodes, True, now, f"# Save file written at Start Node {save.node}")
        write_save_point(path, text)

    def finish(self, machine: DagState, finish: Finish, now: float) -> None:
        self.status(machine, now, force=True)
        self._final = True
        write_atomic(self.dag.path + ".metrics", self._metrics(machine, finish, now))
        if self.jobstate is not None:
            self.jobstate.internal(now, f"DAGMAN_FINISHED {finish.exit_code}")

    def close(self) -> None:
        if self.jobstate is not None:
            self.jobstate.close()
        self.nodes_log.close()
        for log in self._user_files.values():
            log.close()

    # -- snapshots ------------------------------------------------------------------------------

    def status(self, machine: DagState, now: float, force: bool = False) -> None:
        """Write the node status file by DAGMan's rules (``_nodestatus``), the DOT file by ``_dot``'s;
        once more after :meth:`finish` would write the same again, as a stop ends."""
        if self._final:
            return
        if self.dot is not None:
            self.dot.update(machine.node_state, now, force)
        config = self.dag.node_status_file
        if config is None:
            return
        path, every = config
        due = self._outdated or self.dag.node_status_always
        if not force and (not due or now - self._last_status < every):
            return
        self._last_status, self._outdated = now, False
        write_atomic(path, node_status_text(self._snapshot(machine, every), now))

    def _snapshot(self, machine: DagState, every: float) -> StatusSnapshot:
        nodes = machine.nodes
        final = machine.dag.final
        final_pending = final is not None and nodes[final].state not in ("done", "failed")
        finished = machine.finished
        outcome = dag_outcome(finished.succeeded if finished else None, machine.dag_status(),
                              machine.interrupted, final_pending)
        started = {n for n, a in self.started_keys if n in nodes and nodes[n].attempt == a}
        return StatusSnapshot(
            self.dag_files, {n: "pre_ready" if node.state == "waiting" and n in machine.halt_deferred
                             else node.state for n, node in nodes.items()},
            {n: node.error_text or node.reason for n, node in nodes.items()},
            {n: node.attempt for n, node in nodes.items()},
            futile_nodes(machine.dag, machine.node_state), self.pre_done, started,
            {n for n, node in nodes.items() if node.spec.noop}, outcome, finished is not None, every,
            self.dag.job_attrs, {n: len(node.held_procs) for n, node in nodes.items() if node.held_procs})

    def _metrics(self, machine: DagState, finish: Finish, now: float) -> str:
        name = self.source[len("rescue:"):] if self.source.startswith("rescue:") else ""
        rescue = rescue_dag_number(os.path.join(os.path.dirname(self.dag.path), name), self.dag.path,
                                   self.multi) if name else 0
        raw = self.dag.config.get("DAGMAN_METRICS_FILE_VERSION", "2").strip()
        version = int(raw) if raw.isdigit() else 2
        graph = self.dag.flag("DAGMAN_REPORT_GRAPH_METRICS", False)
        return metrics_text(self.dag, {n: node.state for n, node in machine.nodes.items()}, self.counts,
                            start=self.start_time, end=now, exit_code=finish.exit_code,
                            dag_status=finish.dag_status, dagman_id=str(dagman_id()),
                            parent_id=self.parent_id, rescue_number=rescue,
                            version=version, graph=graph)
