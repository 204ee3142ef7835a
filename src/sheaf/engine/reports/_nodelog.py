"""``<dag>.nodes.log``: the node jobs' events in HTCondor's job event log format.

DAGMan has every node job write its events to one log (``DAGMAN_DEFAULT_NODE_LOG``, by default
``<dag>.nodes.log`` beside the primary DAG file) and writes there itself the events it makes up:
a NOOP node's submit and terminate, PRE_SKIP, POST script terminated.  Tools read that file
(``condor_wait``, ``htcondor2.JobEventLog``, Pegasus); sheaf writes the same events, rendered as
``condor_event.cpp`` formats them (the ``ISO_DATE`` header, local time; the lines under the
header start with a tab, shown here as spaces)::

    005 (042.000.000) 2024-05-01 12:00:03 Job terminated.
            (1) Normal termination (return value 1)
            ...
    ...

Events come from ``_runevents`` (the ones with a number in ``ULOG``).  Resource usage is not
measured: the usage lines read zero, as for a job whose usage HTCondor did not collect.  The
submit and execute hosts are this machine (``<127.0.0.1:0>``); the slot is named when known.
"""

from __future__ import annotations

__all__ = ["NodesLog", "format_event", "nodes_log_path"]

import functools
import os
import re
import time
from collections.abc import Iterable, Mapping

from sheaf.engine.reports._files import AppendFile
from sheaf.engine.reports._runevents import ULOG, NodeEvent

HOST = "<127.0.0.1:0>"
_USAGE = "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  {}"


def nodes_log_path(primary_dag: str, pattern: str | None = None, values: Mapping[str, str] = {}) -> str:
    """DAGMan's node log: ``DAGMAN_DEFAULT_NODE_LOG`` (``pattern``) with its special variables
    ``@(DAG_DIR)``, ``@(DAG_FILE)`` and those of ``values`` (``CLUSTER``, ``OWNER``, ``NODE_NAME``) put
    in, a relative result from the DAG's directory; else ``@(DAG_DIR)/@(DAG_FILE).nodes.log``."""
    if not pattern:
        return primary_dag + ".nodes.log"
    known = {"DAG_DIR": os.path.dirname(os.path.abspath(primary_dag)),
             "DAG_FILE": os.path.basename(primary_dag), **values}
    path = re.sub(r"@\(([A-Za-z_]+)\)", lambda m: known.get(m.group(1).upper(), m.group(0)), pattern.strip())
    return os.path.join(os.path.dirname(os.path.abspath(primary_dag)), path)


@functools.lru_cache(maxsize=64)
def _stamp(second: int) -> str:
    """The event time as HTCondor writes it; cached by second (most events share theirs)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))


_NUMBERS = {kind: f"{number:03d}" for kind, number in ULOG.items()}  # an event's number as written


def _header(e: NodeEvent) -> str:
    stamp = _stamp(int(e.time))
    return f"{_NUMBERS[e.kind]} ({e.cluster:03d}.{e.proc:03d}.{e.subproc:03d}) {stamp} "


# a terminated event's usage and transfer lines: not measured, so the same for every job
_UNMEASURED = (*(_USAGE.format(f"{where} Usage")
                 for where in ("Run Remote", "Run Local", "Total Remote", "Total Local")),
               *(f"\t0  -  {what} By Job" for what in ("Run Bytes Sent", "Run Bytes Received",
                                                       "Total Bytes Sent", "Total Bytes Received")))


def _termination(e: NodeEvent, indent: str = "\t") -> list[str]:
    if e.signal is not None:
        return [f"{indent}(0) Abnormal termination (signal {e.signal})", f"{indent}(0) No core file"]
    return [f"{indent}(1) Normal termination (return value {e.value or 0})"]


def _body(e: NodeEvent) -> list[str]:
    notes = f"    DAG Node: {e.node}"
    match e.kind:
        case "SUBMIT":
            host = "<dummy-submit-for-noop-job>" if e.cluster == 0 else HOST
            return [f"Job submitted from host: {host}", notes]
        case "EXECUTE":
            return [f"Job executing on host: {HOST}"] + ([f"\tSlotName: {e.slot}"] if e.slot else [])
        case "JOB_TERMINATED":
            return ["Job terminated.", *_termination(e), *_UNMEASURED]
        case "JOB_EVICTED":
            usage = [_USAGE.format(f"Run {a} Usage") for a in ("Remote", "Local")]
            size = [f"\t0  -  Run Bytes {what} By Job" for what in ("Sent", "Received")]
            if e.requeued:  # the shadow's terminate-and-requeue: how it ended, and why it stays queued
                return ["Job was evicted.", "\t(0) Job terminated and was requeued", *usage, *size,
                        *_termination(e), *([f"\t{_one_line(e.reason)}"] if e.reason else [])]
            return ["Job was evicted.", "\t(0) Job was not checkpointed.", *usage, *size]
        case "JOB_ABORTED":
            return ["Job was aborted.", f"\t{_one_line(e.reason or 'removed by sheaf')}"]
        case "JOB_HELD":
            return ["Job was held.", f"\t{_one_line(e.reason or 'Reason unspecified')}",
                    f"\tCode {e.code} Subcode {e.subcode}"]
        case "JOB_RELEASED":
            return ["Job was released.", *([f"\t{_one_line(e.reason)}"] if e.reason else [])]
        case "POST_SCRIPT_TERMINATED":
            return ["POST Script terminated.", *_termination(e), notes]
        case _:  # PRESKIP
            return ["PRE script return value is PRE_SKIP value", notes]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_event(e: NodeEvent) -> str:
    """One event's text, ending with the ``...`` line."""
    return _header(e) + "\n".join(_body(e)) + "\n...\n"


class NodesLog(AppendFile):
    """Appends the job events among node events."""

    def events(self, events: Iterable[NodeEvent]) -> None:
        self.write([format_event(e) for e in events if e.kind in ULOG])
