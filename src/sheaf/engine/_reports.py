"""Files the engine writes for people and tools: jobstate.log, the rescue DAG, DOT, node status.

* ``jobstate.log`` (Pegasus/DAGMan format) is appended to and flushed once per loop turn, after the
  journal commit: ``<unix time> <node> <EVENT> <condor id|exit code|-> <site|-> - <attempt+1>``,
  plus ``INTERNAL *** DAGMAN_STARTED <id> ***`` / ``*** DAGMAN_FINISHED <exit> ***`` lines.
  It is a history, not state: the journal is what a restart reads.
* A rescue DAG ``<dag>.rescueNNN`` (NNN = one more than the newest) is a *new* file, written to a
  temporary name, fsync'd and renamed into place: ``DONE`` lines for finished nodes and ``RETRY``
  lines with the retries left, as DAGMan's partial rescue DAG.
* The DOT file and the NODE_STATUS_FILE are snapshots, replaced atomically (write, fsync, rename);
  nothing is rewritten in place.
"""

from __future__ import annotations

__all__ = [
    "JobstateLog",
    "dot_text",
    "newest_rescue",
    "node_status_text",
    "write_atomic",
    "write_rescue",
]

import glob
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import IO

from sheaf.engine._dagfile import Dag
from sheaf.engine._state import Change

_RESCUE_RE = re.compile(r"\.rescue(\d{3,})$")


def write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself is durable too
    finally:
        os.close(fd)


def newest_rescue(dag_path: str) -> str | None:
    found = [(int(m.group(1)), p) for p in glob.glob(glob.escape(dag_path) + ".rescue*")
             if (m := _RESCUE_RE.search(p))]
    return max(found)[1] if found else None


def write_rescue(dag_path: str, done: Iterable[str], retries_left: Iterable[tuple[str, int]],
                 failed: int, when: str) -> str:
    newest = newest_rescue(dag_path)
    number = int(_RESCUE_RE.search(newest).group(1)) + 1 if newest else 1  # type: ignore[union-attr]
    path = f"{dag_path}.rescue{number:03d}"
    done = list(done)
    lines = [f"# Rescue DAG file, created by sheaf {when}", f"# From DAG {os.path.basename(dag_path)}",
             f"# Nodes done: {len(done)}", f"# Nodes failed: {failed}", ""]
    lines += [f"DONE {name}" for name in done]
    lines += [f"RETRY {name} {max(0, left)}" for name, left in retries_left]
    write_atomic(path, "\n".join(lines) + "\n")
    return path


class JobstateLog:
    """Translates journaled changes into Pegasus ``jobstate.log`` lines."""

    def __init__(self, path: str, site_of: Callable[[str], str | None]) -> None:
        self.path = path
        self.site_of = site_of
        self._handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._clusters: dict[str, int] = {}

    def internal(self, time: float, text: str) -> None:
        self._handle.write(f"{int(time)} INTERNAL *** {text} ***\n")

    def changes(self, changes: Iterable[Change]) -> None:
        write = self._handle.write
        for c in changes:
            for line in self._lines(c):
                write(line)

    def _lines(self, c: Change) -> list[str]:
        info: Mapping[str, object] = c.info or {}
        if info.get("cancelled"):
            return []
        # a retry transition carries the *next* attempt number; its job/script lines are the old one's
        t, node, seq = int(c.time), c.node, c.attempt + (0 if "retry" in info else 1)
        site = self.site_of(node) or "-"
        jid = f"{self._clusters.get(node, 0)}.0"

        def line(event: str, ident: str = "-", when: int | None = None) -> str:
            return f"{when if when is not None else t} {node} {event} {ident} {site} - {seq}\n"

        out: list[str] = []
        if c.finish in ("pre", "post"):
            out.append(line(f"{c.finish.upper()}_SCRIPT_STARTED", jid if c.finish == "post" else "-"))
        elif c.finish == "submitted" and not info.get("noop"):
            self._clusters[node] = int(info.get("cluster", 0))  # type: ignore[call-overload]
            out.append(line("SUBMIT", f"{self._clusters[node]}.0"))
        if c.start in ("pre", "post") and "return" in info:
            kind = c.start.upper()
            ok = info.get("return") == 0 or bool(info.get("skipped"))
            out.append(line(f"{kind}_SCRIPT_TERMINATED", jid if kind == "POST" else "-"))
            out.append(line(f"{kind}_SCRIPT_{'SUCCESS' if ok else 'FAILURE'}", jid if kind == "POST" else "-"))
        elif c.start == "submitted" and "return" in info and not info.get("noop"):
            started = info.get("started")
            if isinstance(started, float | int) and started:
                out.append(line("EXECUTE", jid, int(started)))
            out.append(line("JOB_TERMINATED", jid))
            code = info.get("return")
            out.append(line("JOB_SUCCESS" if code == 0 else "JOB_FAILURE", str(code)))
        return out

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def dot_text(dag: Dag) -> str:
    lines = [f'digraph "{os.path.basename(dag.path)}" {{']
    for name in dag.nodes:
        lines.append(f'    "{name}";')
    for name, children in dag.children.items():
        for child in children:
            lines.append(f'    "{name}" -> "{child}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


_STATUS_NAMES = {"waiting": "STATUS_NOT_READY", "pre_ready": "STATUS_READY", "ready": "STATUS_READY",
                 "pre": "STATUS_PRERUN", "pre_deferred": "STATUS_PRERUN", "submitted": "STATUS_SUBMITTED",
                 "post_ready": "STATUS_POSTRUN", "post": "STATUS_POSTRUN", "post_deferred": "STATUS_POSTRUN",
                 "done": "STATUS_DONE", "failed": "STATUS_ERROR"}


def node_status_text(states: Mapping[str, str], reasons: Mapping[str, str | None], time: float) -> str:
    """A NODE_STATUS_FILE snapshot (ClassAd-like blocks, as DAGMan writes them)."""
    counts: dict[str, int] = {}
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    lines = ["[", '  Type = "DagStatus";', f"  Timestamp = {int(time)};",
             f"  NodesTotal = {len(states)};", f"  NodesDone = {counts.get('done', 0)};",
             f"  NodesFailed = {counts.get('failed', 0)};", "]"]
    for name, state in states.items():
        reason = (reasons.get(name) or "").replace('"', "'")
        lines += ["[", '  Type = "NodeStatus";', f'  Node = "{name}";',
                  f'  NodeStatus = "{_STATUS_NAMES.get(state, state)}";',
                  f'  StatusDetails = "{reason}";', "]"]
    return "\n".join(lines) + "\n"
