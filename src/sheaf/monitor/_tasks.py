"""The task records of a clustered job's stdout (``[cluster-task ...]``), as pegasus-monitord reads them.

seqexec (``sheaf-cluster``) names a task by its position (``id=N``, 1-based, ``id=setup`` for the
setup command); PMC (``sheaf-mpi-cluster``) by the Pegasus task id (``id=...``, when the DAG
carries it) and always by its DAG task name (``name=...``), with the host it ran on.  ``status`` is
the raw ``wait()`` status: exit code * 256, or the signal number.  A line that is not a complete
record (a job killed while printing) is skipped: the records are a report, not state.
"""

from __future__ import annotations

__all__ = ["TaskRecord", "parse_task_records", "read_task_records"]

import re
from dataclasses import dataclass
from datetime import datetime

_RECORD = re.compile(r"^\[cluster-task (.*)\]\s*$")
_FIELD = re.compile(r'(\w+)=("[^"]*"|[^,\s]*)')
_MAX_BYTES = 64 << 20  # a runaway stdout: read its first 64 MB only


@dataclass(frozen=True, slots=True)
class TaskRecord:
    ident: str | None  # seqexec: the position ("1", "2", ..., "setup"); PMC: the Pegasus id, if any
    name: str | None  # PMC's task name
    start: float
    duration: float
    exitcode: int  # the exit code, or -signal
    app: str
    hostname: str | None


def _exitcode(status: int) -> int:
    return status >> 8 if status & 0x7F == 0 else -(status & 0x7F)


def _record(fields: dict[str, str]) -> TaskRecord | None:
    try:
        start = datetime.fromisoformat(fields["start"]).timestamp()
        duration = float(fields["duration"])
        status = int(fields["status"])
    except (KeyError, ValueError):
        return None
    return TaskRecord(fields.get("id"), fields.get("name"), start, duration, _exitcode(status),
                      fields.get("app", ""), fields.get("hostname"))


def parse_task_records(text: str) -> list[TaskRecord]:
    """Every complete ``[cluster-task ...]`` record of ``text``, in order."""
    out: list[TaskRecord] = []
    for line in text.splitlines():
        if not line.startswith("[cluster-task "):
            continue
        match = _RECORD.match(line)
        if match is None:
            continue
        fields = {k: v.strip('"') for k, v in _FIELD.findall(match.group(1))}
        record = _record(fields)
        if record is not None:
            out.append(record)
    return out


def read_task_records(path: str | None) -> list[TaskRecord]:
    if not path:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse_task_records(handle.read(_MAX_BYTES))
    except OSError:
        return []
