"""Files the engine writes for people and tools: jobstate.log, the rescue DAG, DOT, node status.

* ``jobstate.log`` (Pegasus/DAGMan format) is appended to and flushed once per loop turn, after the
  journal commit: ``<unix time> <node> <EVENT> <condor id|exit code|-> <site|-> - <attempt+1>``,
  plus ``INTERNAL *** DAGMAN_STARTED <id> ***`` / ``*** DAGMAN_FINISHED <exit> ***`` lines.
  It is a history, not state: the journal is what a restart reads.
* A rescue DAG ``<dag>.rescueNNN`` (NNN = one more than the newest) is a *new* file, written to a
  temporary name, fsync'd and renamed into place: ``DONE`` lines for finished nodes and ``RETRY``
  lines with the retries left, as DAGMan's partial rescue DAG.
  Comment lines name each failed node with its reason.
* The DOT file and the NODE_STATUS_FILE are snapshots, replaced atomically (write, fsync, rename);
  nothing is rewritten in place.

Storage failures (a full disk, an I/O error) raise :class:`StorageError` naming the file: the loop
stops the run, which resumes from the journal.  An atomic write that fails removes its temporary
file (``<file>.tmp<pid>``); one left by a killed engine (its pid no longer runs) is removed by the
next run (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

__all__ = [
    "JobstateLog",
    "dot_text",
    "newest_rescue",
    "node_status_text",
    "remove_stale_temporaries",
    "write_atomic",
    "write_rescue",
]

import glob
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import IO

from sheaf.engine._state import Change
from sheaf.errors import StorageError
from sheaf.formats._dagman import Dag
from sheaf.model._runlock import pid_alive

_RESCUE_RE = re.compile(r"\.rescue(\d{3,})$")
_TMP_RE = re.compile(r"\.tmp(\d+)$")
_RESUME = "the run stopped and its jobs were stopped; run `sheaf run` again to resume once the disk has room"


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` (write a temporary, fsync, rename); on failure the temporary is
    removed and :class:`StorageError` raised."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise StorageError.of(exc, path, _RESUME) from None
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself is durable too
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_stale_temporaries(patterns: Iterable[str]) -> list[str]:
    """Remove ``<file>.tmp<pid>`` files, ``<file>`` matching one of the glob ``patterns``, whose
    writer (``pid``) no longer runs; returns them."""
    removed = []
    for pattern in patterns:
        for path in glob.glob(pattern + ".tmp*"):
            match = _TMP_RE.search(path)
            if match and not pid_alive(int(match.group(1))):
                _unlink(path)
                removed.append(path)
    return removed


def newest_rescue(dag_path: str) -> str | None:
    found = [(int(m.group(1)), p) for p in glob.glob(glob.escape(dag_path) + ".rescue*")
             if (m := _RESCUE_RE.search(p))]
    return max(found)[1] if found else None


def write_rescue(dag_path: str, done: Iterable[str], retries_left: Iterable[tuple[str, int]],
                 failed: int, when: str, reasons: Mapping[str, str | None] | None = None) -> str:
    newest = newest_rescue(dag_path)
    number = int(_RESCUE_RE.search(newest).group(1)) + 1 if newest else 1  # type: ignore[union-attr]
    path = f"{dag_path}.rescue{number:03d}"
    done = list(done)
    lines = [f"# Rescue DAG file, created by sheaf {when}", f"# From DAG {os.path.basename(dag_path)}",
             f"# Nodes done: {len(done)}", f"# Nodes failed: {failed}"]
    lines += [f"# FAILED {name}: {' '.join((reason or 'unknown').split())}"
              for name, reason in (reasons or {}).items()]
    lines.append("")
    lines += [f"DONE {name}" for name in done]
    lines += [f"RETRY {name} {max(0, left)}" for name, left in retries_left]
    write_atomic(path, "\n".join(lines) + "\n")
    return path


class JobstateLog:
    """Translates journaled changes into Pegasus ``jobstate.log`` lines."""

    def __init__(self, path: str, site_of: Callable[[str], str | None]) -> None:
        self.path = path
        self.site_of = site_of
        try:
            self._handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise StorageError.of(exc, path, _RESUME) from None
        self._clusters: dict[str, int] = {}

    def internal(self, time: float, text: str) -> None:
        self._write([f"{int(time)} INTERNAL *** {text} ***\n"])

    def changes(self, changes: Iterable[Change]) -> None:
        self._write([line for c in changes for line in self._lines(c)])

    def _write(self, lines: list[str]) -> None:
        try:
            self._handle.writelines(lines)
        except OSError as exc:  # the buffer spilled onto a full disk
            raise StorageError.of(exc, self.path, _RESUME) from None

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
        try:
            self._handle.flush()
        except OSError as exc:
            raise StorageError.of(exc, self.path, _RESUME) from None

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError:
            pass  # a history file: what could not be written was reported by flush already


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
