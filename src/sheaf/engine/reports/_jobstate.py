"""``jobstate.log``, as DAGMan's ``jobstate_log.cpp`` writes it (the file Pegasus' monitord reads).

One line per node event (``_runevents``)::

    <unix time> <node> <EVENT> <HTCondor id | value | -> <job tag | -> - <sequence number>

* the HTCondor id is ``cluster.proc`` (``-`` when no job was submitted); the JOB_SUCCESS and
  JOB_FAILURE lines carry the job's value instead;
* the job tag is the submit description's ``+pegasus_site`` (or the attribute its
  ``+job_tag_name`` names), quotes removed; ``-`` without one;
* the sequence number is DAG-wide: a node attempt takes the next number when its first line is
  written and keeps it until the node is retried (``Node::GetJobstateSequenceNum``).  A run that
  continues a DAG (rescue or recovery) starts after the largest number already in the file, as
  DAGMan's ``InitializeRescue`` does;
* ``INTERNAL *** DAGMAN_STARTED <id>.0 ***`` and ``INTERNAL *** DAGMAN_FINISHED <exit> ***`` lines
  bracket each run; a recovery run (after a killed one) has ``INTERNAL *** RECOVERY_STARTED ***`` and
  ``INTERNAL *** RECOVERY_FINISHED ***`` after its start line, as DAGMan's has around its reading of
  the node log (the journal's replay, here, done before the run starts).

Lines are appended in time order: an event that happened before the last line written (a job's
start, reported when it ends) is written with that line's time, so the file never goes back in
time (DAGMan's recovery reader relies on that).  The file is a history, not state: the journal is
what a restart reads.  It is flushed once per loop turn, after the journal commit.
"""

from __future__ import annotations

__all__ = ["JobstateLog", "last_sequence"]

from collections.abc import Callable, Iterable

from sheaf.engine.reports._files import AppendFile
from sheaf.engine.reports._runevents import NodeEvent

_VALUE_EVENTS = frozenset({"JOB_SUCCESS", "JOB_FAILURE"})


def last_sequence(path: str) -> int:
    """The largest sequence number in an existing jobstate.log (0 without one)."""
    best = 0
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                words = raw.split()
                if len(words) >= 7 and words[1] != b"INTERNAL" and words[6].isdigit():
                    best = max(best, int(words[6]))
    except OSError:
        return 0
    return best


class JobstateLog(AppendFile):
    """Appends jobstate.log lines for node events; ``tag_of(node)`` gives a node's job tag."""

    def __init__(self, path: str, tag_of: Callable[[str], str | None]) -> None:
        super().__init__(path)
        self.tag_of = tag_of
        self._next = last_sequence(path) + 1
        self._seq: dict[str, int] = {}
        self._tags: dict[str, str] = {}
        self._last = 0

    def internal(self, time: float, text: str) -> None:
        self.write([f"{self._clamp(time)} INTERNAL *** {text} ***\n"])

    def events(self, events: Iterable[NodeEvent]) -> None:
        self.write([self._line(e) for e in events])

    def _clamp(self, time: float) -> int:
        second = int(time)
        self._last = max(self._last, second)
        return self._last

    def _tag(self, node: str) -> str:
        tag = self._tags.get(node)
        if tag is None:
            tag = self._tags[node] = self.tag_of(node) or "-"
        return tag

    def _line(self, e: NodeEvent) -> str:
        seq = self._seq.get(e.node)
        if seq is None:
            seq = self._seq[e.node] = self._next
            self._next += 1
        if e.new_attempt:
            del self._seq[e.node]
        ident = str(e.value) if e.kind in _VALUE_EVENTS else e.condor_id
        return f"{self._clamp(e.time)} {e.node} {e.kind} {ident} {self._tag(e.node)} - {seq}\n"
