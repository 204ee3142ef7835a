"""The files through which the Slurm backend and its job wrapper talk: one state directory per run.

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
# time (typing and dataclasses alone cost ~15 ms of CPU a job); the rest is imported when needed.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from sheaf.backends._periodic import JobRecord
    from sheaf.engine import FileTransfer, Launch

__all__ = ["JOB_PREFIX", "Paths", "launch_of", "read_record", "spec_of", "stem_of", "transfer_of",
           "write_record"]

JOB_PREFIX = "sheaf-"


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


def history_of(record: JobRecord) -> dict[str, Any]:
    """What the schedd remembers of a job held and released (``_periodic.JobRecord``): the wrapper of
    its next run starts from it, so ``NumJobStarts``, ``NumHolds`` and the like count on."""
    return {"qdate": record.qdate, "starts": record.starts, "holds": record.holds,
            "first_start": record.first_start, "wall": record.wall}


def spec_of(launch: Launch, *, memory_limit: int | None, policy_interval: float, expand: bool,
            policy: bool, allocation: bool = False, history: dict[str, Any] | None = None,
            execute: str | None = None, launcher: list[str] | None = None) -> dict[str, Any]:
    """What the wrapper needs to reproduce ``launch`` exactly (and police it) inside the job; ``expand``
    and ``policy`` say whether it holds ``$$()`` and a ``periodic_*`` policy (only then does the wrapper
    load the ClassAd library); ``allocation`` that the job runs tasks inside its Slurm
    allocation, and ``launcher`` the program that starts it across the allocation's tasks
    (``mpiexec``, to which the wrapper adds ``-n <tasks>``); ``transfer`` the launch's HTCondor file
    transfer, with ``execute`` the directory on the node under which its sandbox is made (None: the
    node's temporary directory)."""
    transfer = launch.transfer
    return {"expand": expand, "policy": policy, "allocation": allocation, "history": history,
            "key": launch.key, "node": launch.node, "attempt": launch.attempt, "argv": list(launch.argv),
            "env": dict(launch.env), "cwd": launch.cwd, "stdout": launch.stdout, "stderr": launch.stderr,
            "stdin": launch.stdin, "priority": launch.priority, "ad": launch.job_ad.unparse(),
            "memory_limit": memory_limit, "policy_interval": policy_interval, "execute": execute,
            "launcher": launcher,
            "transfer": None if transfer is None else {
                "inputs": list(transfer.inputs),
                "outputs": None if transfer.outputs is None else list(transfer.outputs),
                "remaps": [list(pair) for pair in transfer.remaps], "on_success": transfer.on_success,
                "preserve_relative_paths": transfer.preserve_relative_paths, "names": list(transfer.names)}}


def transfer_of(spec: Mapping[str, Any]) -> FileTransfer | None:
    """The launch's file transfer, from its spec (see :func:`spec_of`)."""
    raw = spec.get("transfer")
    if not raw:
        return None
    from sheaf.engine import FileTransfer

    outputs = raw.get("outputs")
    remaps = tuple((str(name), str(target)) for name, target in raw.get("remaps") or ())
    return FileTransfer(tuple(raw.get("inputs") or ()), None if outputs is None else tuple(outputs), remaps,
                        bool(raw.get("on_success")), bool(raw.get("preserve_relative_paths")),
                        tuple(raw.get("names") or ()))


def launch_of(spec: Mapping[str, Any]) -> Launch:
    from sheaf.classad import ClassAd
    from sheaf.engine import Launch

    return Launch(key=spec["key"], node=spec["node"], attempt=spec["attempt"], argv=tuple(spec["argv"]),
                  env=dict(spec["env"]), cwd=spec["cwd"], stdout=spec["stdout"], stderr=spec["stderr"],
                  job_ad=ClassAd.parse(spec["ad"]), priority=spec.get("priority", 0),
                  stdin=spec.get("stdin", os.devnull), transfer=transfer_of(spec))
