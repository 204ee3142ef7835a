"""The spec of an attempt: what the Slurm backend writes for its job wrapper, which reproduces the launch.

Written to ``state/specs/<stem>.json`` of the run's state directory (``sheaf.backends._records``)
before ``sbatch``; the job is named ``JOB_PREFIX`` + the stem.
"""

from __future__ import annotations

import os

# The job wrapper imports this module at the start of every job: nothing beyond os at run time, as
# every module it loads is paid for by every job; the rest is imported when needed.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from sheaf.backends._periodic import JobRecord
    from sheaf.engine import FileTransfer, Launch

__all__ = ["JOB_PREFIX", "history_of", "launch_of", "spec_of", "transfer_of"]

JOB_PREFIX = "sheaf-"


def history_of(record: JobRecord) -> dict[str, Any]:
    """What the schedd remembers of a job held and released (``_periodic.JobRecord``): the wrapper of
    its next run starts from it, so ``NumJobStarts``, ``NumHolds`` and the like count on."""
    return {"qdate": record.qdate, "starts": record.starts, "holds": record.holds,
            "first_start": record.first_start, "wall": record.wall, "completions": record.completions}


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
