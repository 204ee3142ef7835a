"""The files through which a batch backend and its jobs talk: one state directory per run.

The Slurm backend and its job wrapper write them (the launch's spec: ``sheaf.backends.slurm._records``);
the Dask backend keeps its records in the same layout (``sheaf.backends.dask._records``).

Layout (``state`` is the backend's state directory; ``stem`` names one attempt, :func:`stem_of`)::

    state/specs/<stem>.json      the launch, written by the backend before ``sbatch`` (the wrapper's input)
    state/jobs/<stem>            "<slurm job id> <job name>", written by the backend once ``sbatch`` answered
    state/inbox/<stem>.start     the wrapper's start record: job id, host, pid, wall-clock start
    state/inbox/<stem>.exit      the wrapper's exit record: exit code or signal, reason, start and end
    state/taken/<stem>.start     a start record the backend has read
    state/taken/<stem>.exit      an exit record the backend has reported (kept for a resumed engine)

Invariants: every record is written to a temporary name in the same directory and renamed into
place, so a reader sees a whole record or none; the wrapper writes ``.exit`` only after ``.start``;
the inbox holds only records not yet seen (the backend moves ``.start`` away once read and ``.exit``
to ``taken/`` once reported), so a poll scans a directory as small as the number of jobs in flight,
not the run.  Records are JSON objects.  Nothing here depends on Slurm: the stems, not job ids,
name the files, so a record found after a crash is matched to its attempt without asking Slurm.
"""

from __future__ import annotations

import json
import os

# The job wrapper imports this module at the start of every job: nothing beyond json and os at run
# time (typing and dataclasses alone would cost more CPU than a short job); the rest is imported when needed.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["Paths", "read_record", "stem_of", "write_record"]


def stem_of(run_id: str, key: str) -> str:
    """A short file and job name for the attempt ``key`` of run ``run_id`` (the same after a crash)."""
    import hashlib  # here: the job wrapper, which imports this module, never needs it

    return hashlib.sha1(f"{run_id}/{key}".encode()).hexdigest()[:20]


class Paths:
    """The files of one state directory ``root`` (its subdirectories are made if missing)."""

    __slots__ = ("root",)

    def __init__(self, root: str) -> None:
        self.root = root
        for sub in ("specs", "jobs", "inbox", "taken"):
            os.makedirs(os.path.join(root, sub), exist_ok=True)

    def spec(self, stem: str) -> str:
        return os.path.join(self.root, "specs", stem + ".json")

    def job(self, stem: str) -> str:
        return os.path.join(self.root, "jobs", stem)

    @property
    def inbox(self) -> str:
        return os.path.join(self.root, "inbox")

    def start(self, stem: str) -> str:
        return os.path.join(self.root, "inbox", stem + ".start")

    def exit(self, stem: str) -> str:
        return os.path.join(self.root, "inbox", stem + ".exit")

    def seen(self, stem: str) -> str:
        """A start record the backend has read."""
        return os.path.join(self.root, "taken", stem + ".start")

    def taken(self, stem: str) -> str:
        return os.path.join(self.root, "taken", stem + ".exit")


def write_record(path: str, record: Mapping[str, Any]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (temporary name, fsync-free rename)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle, separators=(",", ":"))
    os.replace(tmp, path)


def read_record(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
