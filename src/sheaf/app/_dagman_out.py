"""``<name>.dag.dagman.out``: the progress lines DAGMan writes, which Pegasus's tools read.

``Pegasus.api``'s ``wf.wait()``, ``wf.status()`` and ``wf.get_status()`` (``Pegasus.client.status``)
find every ``*.dag.dagman.out`` under the submit directory and read, from the last block in each,
DAGMan's node counts; the workflow is over when an ``EXITING WITH STATUS n`` line follows.  ``sheaf
run`` appends the same lines, in DAGMan's words and column order, beside the DAG it runs: a block
when the counts change (at most one a second, and always the last), and the exit line when the run
ends (0: the workflow succeeded; a resumed run appends after the earlier one's exit line, as DAGMan
does).  Each block starts with the ``DAG status`` line, which the readers need before the counts.
The first lines say where the run starts, as DAGMan's start-up does: the rescue DAG it combines with the DAG
file and how it was chosen (``Rescue DAG file specified``, ``Rescue DAG number N specified``, ``Found rescue
DAG number N``; then ``USING RESCUE DAG file``), or the save file it loads (``Loading saved progress from file
for DAG.``), or ``Running in RECOVERY mode...`` after a killed run; then ``Number of pre-completed nodes: N``.
After a killed run the recovery's end follows (``...done with RECOVERY mode``).
A node that is retried gets DAGMan's line, ``Retrying node NAME (retry #n of m)...``, and each warning of the
run a ``WARNING:`` line.  What happens to a node is written in DAGMan's words too, the lines people and
scripts look for (:func:`event_lines`): ``Submitting HTCondor Node A job(s)...``, an ``Event: ULOG_SUBMIT for
HTCondor Node A (12.0.0) {12/06/26 13:20:25}`` line for each job event, ``Node A job proc (12.0.0) completed
successfully.`` (or ``failed with status 3.``), ``Running PRE script of Node A...``, ``PRE Script of node A
completed successfully.`` (or ``PRE Script of Node A failed with status 1``), ``PRE_SKIP return value 2
indicates we are done (successfully) with node A``, and the same for POST scripts.

The engine's states map to DAGMan's columns: ``done``; ``pre`` (PRE script running); ``submitted``
(Queued); ``post_ready``/``post``/``post_deferred`` (Post); ``ready``/``pre_ready``/``pre_deferred``
(Ready: waiting for a slot or a PRE throttle); ``waiting`` (Un-Ready); ``failed``.  The same columns,
under pegasus-status's names, make its ``--jsonrv`` answer (:func:`pegasus_status`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from sheaf.engine import DagmanOptions, NodeEvent, Progress, dagman_id, rescue_dag_number

COLUMNS: dict[str, tuple[str, ...]] = {
    "Done": ("done",),
    "Pre": ("pre",),
    "Queued": ("submitted",),
    "Post": ("post_ready", "post", "post_deferred"),
    "Ready": ("ready", "pre_ready", "pre_deferred"),
    "Un-Ready": ("waiting",),
    "Failed": ("failed",),
}
# the counts block as DAGMan's print_status lays it out
_HEADER = " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile"
_RULE = "  ===     ===      ===     ===     ===        ===      ===      ==="
_ROW = "%5d   %5d    %5d   %5d   %5d      %5d    %5d    %5d"


#: pegasus-status's JSON keys for DAGMan's columns (``Pegasus.client.status``)
STATUS_KEYS = {"Done": "succeeded", "Pre": "pre", "Queued": "queued", "Post": "post", "Ready": "ready",
               "Un-Ready": "unready", "Failed": "failed"}
#: sheaf's workflow state (``sheaf.monitor``) -> pegasus-status's
STATES = {"succeeded": "Success", "failed": "Failure", "interrupted": "Failure"}


def pegasus_status(dag_name: str, state: str, total: int, counts: Mapping[str, int]) -> dict[str, object]:
    """What ``pegasus-status --jsonrv`` prints for a workflow without sub-workflows."""
    values = dict(zip(STATUS_KEYS.values(), columns(counts), strict=True))
    done = round(100.0 * values["succeeded"] / total, 2) if total else 0.0
    totals = {**values, "percent_done": done, "total": total}
    root = {**totals, "dagname": dag_name, "state": STATES.get(state, "Running")}
    return {"totals": totals, "dags": {"root": root}}


def dagman_out_path(dag_path: str) -> str:
    return f"{dag_path}.dagman.out"


def columns(counts: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(sum(counts.get(state, 0) for state in states) for states in COLUMNS.values())


#: DAGMan's ``DagStatus`` names, by number (``dag.h``)
DAG_STATUS_NAMES = ("DAG_STATUS_OK", "DAG_STATUS_ERROR", "DAG_STATUS_NODE_FAILED", "DAG_STATUS_ABORT",
                    "DAG_STATUS_RM", "DAG_STATUS_CYCLE", "DAG_STATUS_HALTED")


def block(stamp: str, total: int, counts: Mapping[str, int], dag_status: int | None = None, futile: int = 0,
          held: int = 0) -> str:
    """One progress block (the module docstring's lines), every line prefixed with ``stamp``; the
    DAG's status as the engine tells it, else 2 (a node failed) once a node has failed.  ``futile``
    of the waiting nodes can never run (DAGMan's Futile column, not in Un-Ready); ``held`` procs are
    on hold."""
    done, pre, queued, post, ready, unready, failed = columns(counts)
    if dag_status is None or not 0 <= dag_status < len(DAG_STATUS_NAMES):
        dag_status = 2 if failed else 0
    rows = [f"DAG status: {dag_status} ({DAG_STATUS_NAMES[dag_status]})", f"Of {total} nodes total:",
            _HEADER, _RULE,
            _ROW % (done, pre, queued, post, ready, unready - futile, failed, futile),
            f"{held} job proc(s) currently held"]
    return "".join(f"{stamp} {row}\n" for row in rows)


def exit_line(stamp: str, status: int) -> str:
    """DAGMan's last line, which its manual quotes as the one to check (``(condor_DAGMAN) pid 445
    EXITING WITH STATUS 0``): the run's DAGMan job id, as jobstate.log has it."""
    pid = dagman_id()
    return (f"{stamp} **** condor_scheduniv_exec.{pid}.0 (condor_DAGMAN) pid {pid} "
            f"EXITING WITH STATUS {status}\n")


def stamp_now() -> str:
    return time.strftime("%m/%d/%y %H:%M:%S")


#: node events that are HTCondor job events (DAGMan's ``Event:`` lines), by their ULOG names
_ULOG = {kind: f"ULOG_{kind}" for kind in (
    "SUBMIT", "EXECUTE", "JOB_EVICTED", "JOB_TERMINATED", "JOB_ABORTED", "JOB_HELD", "JOB_RELEASED",
    "POST_SCRIPT_TERMINATED", "PRESKIP", "SUBMIT_FAILURE")}


def _local_stamp(t: float) -> str:
    return time.strftime("%m/%d/%y %H:%M:%S", time.localtime(t))


#: node events after which the node may be retried
_FAILURES = frozenset({"JOB_ABORTED", "SUBMIT_FAILURE", "PRE_SCRIPT_FAILURE", "POST_SCRIPT_FAILURE"})


def event_lines(stamp: str, events: tuple[NodeEvent, ...] | list[NodeEvent],
                when: Callable[[float], str] = _local_stamp,
                retried: tuple[tuple[str, int, int], ...] = ()) -> str:
    """DAGMan's lines for ``events`` (the module docstring), each prefixed with ``stamp``; the
    ``Retrying node`` line of each of ``retried`` (node, retry number, RETRY's count) where DAGMan
    writes it, as it restarts the node: before its PRE script starts or its job is submitted again
    (at the end when neither is among ``events``)."""
    out: list[str] = []
    pre: dict[str, int | None] = {}  # a node's failed PRE script's value, for its PRE_SKIP line
    pending: dict[str, list[str]] = {}
    for node, number, most in retried:
        pending.setdefault(node, []).append(f"Retrying node {node} (retry #{number} of {most})...")
    # a retried node's restart follows a failure of it among the events, if one is there
    armed = {node: not any(e.node == node and _failed(e) for e in events) for node in pending}
    for event in events:
        kind, node = event.kind, event.node
        if node in pending:
            if _failed(event):
                armed[node] = True
            elif armed[node] and pending[node] and (
                    kind == "PRE_SCRIPT_STARTED" or (kind == "SUBMIT" and event.proc == 0)):
                out.append(pending[node].pop(0))
                armed[node] = False
        e = event._replace(value=pre.get(node)) if kind == "PRESKIP" and event.value is None else event
        if kind == "PRE_SCRIPT_FAILURE":
            pre[node] = e.value
        if kind == "SUBMIT" and e.proc == 0:
            out.append(f"Submitting HTCondor Node {node} job(s)...")
        ulog = _ULOG.get(kind)
        if ulog is not None:
            ids = f"{e.cluster}.{e.proc}.{e.subproc}" if e.cluster != -1 else "-1.-1.-1"
            line = f"Event: {ulog} for HTCondor Node {node} ({ids}) {{{when(e.time)}}}"
            if kind == "SUBMIT_FAILURE" and e.reason:  # DAGMan's line ends with the error, on one line
                line += " " + e.reason.replace("\n", " ")
            out.append(line)
        if kind in ("PRE_SCRIPT_FAILURE", "POST_SCRIPT_FAILURE") and e.reason:  # it could not be started
            out.append(f"Error: Failed to execute {kind[:kind.index('_')]} for Node {node}: "
                       + e.reason.replace("\n", " "))
        line = _outcome(e)
        if line:
            out.append(line)
    out.extend(line for lines in pending.values() for line in lines)
    return "".join(f"{stamp} {line}\n" for line in out)


def _failed(e: NodeEvent) -> bool:
    return e.kind in _FAILURES or (e.kind == "JOB_TERMINATED" and bool(e.value or e.signal is not None))


def _outcome(e: NodeEvent) -> str:
    """The line DAGMan writes as it acts on ``e`` (empty for none)."""
    kind, node = e.kind, e.node
    if kind == "JOB_TERMINATED":
        ids = f"({e.cluster}.{e.proc}.{e.subproc})"
        if e.signal is not None:
            return f"Node {node} job proc {ids} failed with signal {e.signal}."
        if e.value:
            return f"Node {node} job proc {ids} failed with status {e.value}."
        return f"Node {node} job proc {ids} completed successfully."
    if kind in ("PRE_SCRIPT_STARTED", "POST_SCRIPT_STARTED"):
        return f"Running {kind[:kind.index('_')]} script of Node {node}..."
    if kind in ("PRE_SCRIPT_SUCCESS", "POST_SCRIPT_SUCCESS"):
        return f"{kind[:kind.index('_')]} Script of node {node} completed successfully."
    if kind in ("PRE_SCRIPT_FAILURE", "POST_SCRIPT_FAILURE"):
        which = kind[:kind.index("_")]
        if e.signal is not None:
            return f"{which} Script of node {node} died on signal {e.signal}"
        return f"{which} Script of {'Node' if which == 'PRE' else 'node'} {node} failed with status {e.value}"
    if kind == "PRESKIP":
        return f"PRE_SKIP return value {e.value} indicates we are done (successfully) with node {node}"
    return ""


def start_lines(stamp: str, source: str, pre_done: int, options: DagmanOptions, dag_path: str) -> str:
    """DAGMan's start-up lines for a run of the DAG ``dag_path`` that starts from ``source`` with
    ``pre_done`` nodes done (module docstring)."""
    lines = []
    if source == "recovery":
        lines += ["Running in RECOVERY mode... >>>>>>>>>>>>>>>>>>>>>>>>>>>>>>",
                  "...done with RECOVERY mode <<<<<<<<<<<<<<<<<<<<<<<<<<<<<<"]
    elif source.startswith("rescue:") and options.load_save is not None:
        lines.append(f"Loading saved progress from {options.load_save} for DAG.")
    elif source.startswith("rescue:"):
        name = source[len("rescue:"):]
        number = rescue_dag_number(os.path.join(os.path.dirname(dag_path), name), dag_path,
                                   len(options.dag_files) > 1)
        how = ("Rescue DAG file specified" if options.rescue_file is not None
               else f"Rescue DAG number {options.rescue_from} specified" if options.rescue_from is not None
               else f"Found rescue DAG number {number}")
        several = "s" if len(options.dag_files) > 1 else ""
        lines += [f"{how}; running {name} in combination with normal DAG file{several}",
                  f"USING RESCUE DAG {name}"]
    lines.append(f"Number of pre-completed nodes: {pre_done}")
    return "".join(f"{stamp} {line}\n" for line in lines)


class DagmanOut:
    """A progress callback appending blocks to ``<dag>.dagman.out`` (module docstring)."""

    def __init__(self, dag_path: str, *, clock: Callable[[], float] = time.monotonic,
                 stamp: Callable[[], str] = stamp_now, options: DagmanOptions | None = None) -> None:
        self.path, self.dag_path = dagman_out_path(dag_path), dag_path
        self.options = options or DagmanOptions()
        self.clock, self.stamp = clock, stamp
        self.started = False
        self._last: tuple[int, ...] | None = None  # the counts and the DAG status last written
        self._when = -1e18

    def __call__(self, progress: Progress) -> None:
        if progress.start is not None:
            self._append(start_lines(self.stamp(), *progress.start, self.options, self.dag_path))
        if progress.events or progress.retried:
            self._append(event_lines(self.stamp(), progress.events, retried=progress.retried))
        values = (*columns(progress.counts), progress.dag_status or 0, progress.futile, progress.held)
        now = self.clock()
        if not progress.finished and (values == self._last or now - self._when < 1.0):
            return
        self._last, self._when = values, now
        if progress.finished and progress.dag_status == DAG_STATUS_NAMES.index("DAG_STATUS_CYCLE"):
            stamp = self.stamp()  # DAGMan's words when nodes are left waiting with no failure
            self._append(f"{stamp} ERROR: DAG finished but not all nodes are complete -- checking for a "
                         f"cycle...\n{stamp} ... ERROR: a cycle exists in the dag, please check input\n")
        self._append(block(self.stamp(), progress.total, progress.counts, progress.dag_status,
                           progress.futile, progress.held))

    def warn(self, text: str) -> None:
        """A warning of the run, as DAGMan writes its warnings into the file."""
        self._append(f"{self.stamp()} WARNING: {text}\n")

    def finish(self, status: int) -> None:
        """The exit line, when a block was written (a run refused before it started writes none)."""
        if self.started:
            self._append(exit_line(self.stamp(), status))

    def _append(self, text: str) -> None:
        try:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(text)
            self.started = True
        except OSError:
            pass  # a record for other tools: a full disk must not stop the run (its journal reports it)
