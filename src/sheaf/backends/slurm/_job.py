"""The wrapper each Slurm job runs: reproduce one launch exactly, police it, record start and exit.

``sbatch`` runs the backend's batch script (a Python script, so no shell is involved), which calls
:func:`main` with the path of the attempt's spec (``_records``).  The wrapper then does what the
local backend does for a process, reusing its pieces:

- ``$$(attr)`` in argv, environment, directory or file names is expanded against a slot ad of the
  Slurm node it landed on (``Machine``, ``Cpus``, ``Memory``, ...), as the schedd expands against the
  matched slot; an unexpandable one ends the attempt as held, with the reason.
- The process is started by ``_spawn.spawn``: argv exec'd directly, the launch's complete
  environment (the DAG's ENV is in it), its directory, stdin/stdout/stderr, its own session.  A
  multi-task job (a Decaf or PMC cluster) also gets the allocation's ``SLURM_*`` variables, under
  the launch's own, so that its ``srun --multi-prog`` or ``mpiexec`` runs inside the allocation; a
  PMC cluster asking for several tasks is started by ``mpiexec -n <tasks>`` (``SHEAF_SLURM_MPIEXEC``,
  found on the job's PATH), so that its master and workers are MPI ranks across the allocation.
- Memory: the RSS of the job's process tree is polled (``_memwatch``; every 0.1 s at first, backing
  off to 1 s) and a tree over the request is killed with a memory reason; the kernel's peak at exit
  is checked as well.
- HTCondor file transfer (``should_transfer_files = YES``) as the local backend does it, with its
  ``_sandbox``: a sandbox on the node (under ``SHEAF_SLURM_EXECUTE``, else the node's temporary
  directory) holding the inputs, the job run there, the outputs copied back (remapped as asked),
  the sandbox removed; a failed transfer ends the attempt as held, with the reason.
- ``periodic_hold``/``periodic_remove`` are evaluated as the schedd would (``_periodic.decide``) every
  ``PERIODIC_EXPR_INTERVAL``; a hold or remove kills the job and is recorded as such, and the backend
  reports it (a held attempt is released by the backend, which submits it again).
- SIGTERM from Slurm (``scancel``, the time limit) kills the job's process group and records the
  attempt as ended by that signal, with the reason: a job stopped by the batch system is a failed
  attempt, never a success.

Start-up cost matters (it is paid by every job, and on a busy node it is wall time of the job's
slot): the wrapper imports only the process and memory helpers, which import nothing beyond the
standard library's ``os``, ``json``, ``select``, ``signal`` and the like -- not ``typing``,
``dataclasses``, ``threading`` or ``ctypes``, whose imports would be a large share of the wrapper's
start-up; the ClassAd library and the
engine's pieces are loaded only for a launch whose spec says it has ``$$()``, a ``periodic_*``
policy or file transfer.
After the exit record is written the wrapper leaves with ``os._exit`` (its output flushed): the
interpreter's teardown would only delay the end of the Slurm job.

The start record is written before the process starts, the exit record after it ended and its
group was killed (``sheaf.backends._records`` describes both).  The wrapper's own exit status carries nothing.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import time

from sheaf.backends._memwatch import POLL_INTERVAL, tree_rss_mb
from sheaf.backends._records import Paths, read_record, write_record
from sheaf.backends._spawn import SpawnError, seal_descriptors, spawn
from sheaf.backends.slurm._records import launch_of, transfer_of

TYPE_CHECKING = False  # typing is not imported at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any

    from sheaf.backends._periodic import JobRecord
    from sheaf.classad import ClassAd

__all__ = ["main"]

_TERMINATED: list[int] = []
# The memory poll starts at the local backend's 0.1 s and backs off to this: a scan of /proc costs
# CPU on the job's own node, and a spike between two polls is still caught by the peak resident set
# at exit.
_MAX_PAUSE = 1.0


def _on_term(signum: int, _frame: object) -> None:
    _TERMINATED.append(signum)


def slot_ad(host: str) -> ClassAd:
    """What ``$$()`` sees of the Slurm node: the attributes HTCondor's slot ads have for it."""
    import platform

    from sheaf.classad import ClassAd

    cpus = int(os.environ.get("SLURM_CPUS_ON_NODE", "1") or 1)
    memory = int(os.environ.get("SLURM_MEM_PER_NODE", "0") or 0)
    return ClassAd({"Machine": host, "Name": f"slot1@{host}", "Cpus": cpus, "Memory": memory,
                    "OpSys": "LINUX", "Arch": platform.machine().upper().replace("AMD64", "X86_64"),
                    "SlurmJobId": os.environ.get("SLURM_JOB_ID", "")})


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Watch:
    """The running process and what stopped it, if the wrapper did."""

    def __init__(self, spec: dict[str, Any], started: float) -> None:
        self.limit: int | None = spec.get("memory_limit")
        self.interval = float(spec.get("policy_interval") or 60.0)
        self.policy: JobRecord | None = None
        if spec.get("policy"):
            from sheaf.backends._periodic import JobRecord

            history = spec.get("history") or {}
            self.policy = JobRecord(launch_of(spec), history.get("qdate", started), started,
                                    starts=history.get("starts", 0), holds=history.get("holds", 0),
                                    first_start=history.get("first_start"), wall=history.get("wall", 0.0),
                                    completions=history.get("completions", 0))
            self.policy.started(started)
        self.next_policy = time.monotonic() + self.interval
        self._bring_forward()
        self.killed: dict[str, Any] | None = None

    def _bring_forward(self) -> None:
        """The next policy check no later than the job's duration limit holds it (the shadow's timer)."""
        if self.policy is None:
            return
        from sheaf.backends._periodic import duration_due

        due = duration_due(self.policy)
        if due is not None:
            self.next_policy = min(self.next_policy, time.monotonic() + max(due - time.time(), 0.0))

    def check(self, pid: int, since: float) -> None:
        now = time.monotonic()
        if _TERMINATED and self.killed is None:
            self.killed = {"reason": "stopped by Slurm (scancel, time limit or node failure): SIGTERM",
                           "signal": signal.SIGTERM.value}
        watched = (self.limit is not None or self.policy is not None) and now - since >= POLL_INTERVAL
        memory = tree_rss_mb([pid]).get(pid) if watched else None
        if self.killed is None and self.limit is not None and memory is not None and memory > self.limit:
            self.killed = {"reason": f"memory usage {memory:.0f} MB exceeded request {self.limit} MB"}
        if self.killed is None and self.policy is not None and now >= self.next_policy:
            from sheaf.backends._periodic import decide

            self.next_policy = now + self.interval
            action = decide(self.policy, time.time(), memory)
            if action is not None:
                what, reason, code, subcode = action
                self.killed = {"kind": what, "reason": reason, "code": code, "subcode": subcode}
            self._bring_forward()
        if self.killed is not None:
            _kill_group(pid)


def _await_own_sigterm(grace: float = 1.0) -> None:
    """After the job died of SIGTERM, wait up to ``grace`` seconds for the wrapper's own SIGTERM, so a
    job stopped by Slurm is reported as such rather than as one that killed itself."""
    deadline = time.monotonic() + grace
    while not _TERMINATED and time.monotonic() < deadline:
        time.sleep(0.01)


def _environment(spec: dict[str, Any]) -> dict[str, str]:
    """The launch's environment; for a job that runs tasks inside its allocation (``srun``,
    ``mpiexec``), the allocation's ``SLURM_*`` variables under it, so those find the allocation."""
    env: dict[str, str] = spec["env"]
    if not spec.get("allocation"):
        return env
    return {**{k: v for k, v in os.environ.items() if k.startswith("SLURM_")}, **env}


def _run(spec: dict[str, Any], started: float) -> dict[str, Any]:
    """Run the job, in a sandbox when it has HTCondor file transfer (the local backend's
    ``_sandbox``: inputs in, the job, outputs back, the sandbox removed whatever happened)."""
    transfer = transfer_of(spec)
    if transfer is None:
        return _run_in(spec, started)
    from sheaf.backends._sandbox import TransferFailure, copy_back, make_sandbox, remove_sandbox

    try:
        sandbox, before = make_sandbox(transfer, spec.get("execute"))
    except TransferFailure as exc:
        return {"kind": "held", "reason": str(exc)}
    try:
        outcome = _run_in({**spec, "cwd": sandbox}, started)
        if outcome["kind"] == "exited":
            held = copy_back(transfer, sandbox, before, spec["cwd"], outcome["exit_code"] == 0)
            if held is not None:
                return {"kind": "held", "reason": held}
        return outcome
    finally:
        remove_sandbox(sandbox)


def _argv(spec: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The job's argv; under a launcher (a PMC cluster: ``mpiexec``), that launcher's, asking for
    every task of the allocation (rank 0 PMC's master, the others its workers)."""
    argv: list[str] = spec["argv"]
    launcher = spec.get("launcher")
    if not launcher:
        return argv
    import shutil

    program = shutil.which(launcher[0], path=env.get("PATH")) or shutil.which(launcher[0]) or launcher[0]
    return [program, *launcher[1:], "-n", os.environ.get("SLURM_NTASKS") or "1", *argv]


def _run_in(spec: dict[str, Any], started: float) -> dict[str, Any]:
    since = time.monotonic()
    env = _environment(spec)
    try:
        spawned = spawn(_argv(spec, env), env, spec["cwd"], spec["stdout"], spec["stderr"], None,
                        spec.get("stdin") or os.devnull)
    except (SpawnError, ValueError, OSError) as exc:
        return {"kind": "held", "reason": str(exc)}
    watch = _Watch(spec, started)
    poller = select.poll()
    poller.register(spawned.pidfd, select.POLLIN)
    pause = POLL_INTERVAL
    while not poller.poll(pause * 1000):
        watch.check(spawned.pid, since)
        pause = min(pause * 2, _MAX_PAUSE)
    _kill_group(spawned.pid)  # leftovers of the job, as HTCondor's starter kills them
    _, status, usage = os.wait4(spawned.pid, 0)
    os.close(spawned.pidfd)
    if watch.killed is None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM:
        _await_own_sigterm()  # scancel signals the job's processes one by one: ours may come a moment later
    if watch.killed is None and _TERMINATED:
        watch.check(spawned.pid, since)
    return _outcome(status, usage.ru_maxrss / 1024, watch)


def _outcome(status: int, peak_mb: float, watch: _Watch) -> dict[str, Any]:
    killed = watch.killed
    if killed is None and watch.limit is not None and peak_mb > watch.limit \
            and peak_mb > resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:
        killed = {"reason": f"memory usage {peak_mb:.0f} MB exceeded request {watch.limit} MB "
                            "(peak resident set, measured at exit)"}
    if killed is not None:
        return {"kind": killed.get("kind", "exited"), "exit_code": None,
                "signal": killed.get("signal", signal.SIGKILL.value), "reason": killed["reason"],
                "code": killed.get("code", 3), "subcode": killed.get("subcode", 0)}
    if os.WIFSIGNALED(status):
        return {"kind": "exited", "exit_code": None, "signal": os.WTERMSIG(status), "reason": None}
    return {"kind": "exited", "exit_code": os.WEXITSTATUS(status), "signal": None, "reason": None}


def _expanded(spec: dict[str, Any], host: str) -> tuple[dict[str, Any], str | None]:
    """``spec`` with ``$$()`` expanded against the node's slot ad, or (spec, the hold reason)."""
    from sheaf.engine import expand_launch

    launch, reason = expand_launch(launch_of(spec), slot_ad(host))
    if reason is not None:
        return spec, reason
    return {**spec, "argv": list(launch.argv), "env": dict(launch.env), "cwd": launch.cwd,
            "stdout": launch.stdout, "stderr": launch.stderr}, None


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    seal_descriptors()  # slurmstepd's descriptors stay out of the job, as the local backend's do
    spec_path = argv[0]
    paths = Paths(os.path.dirname(os.path.dirname(spec_path)))
    stem = os.path.basename(spec_path).removesuffix(".json")
    spec = read_record(spec_path)
    if spec is None:
        print(f"sheaf slurm wrapper: cannot read {spec_path}", file=sys.stderr)
        return 2
    host = os.uname().nodename
    started = time.time()
    job = os.environ.get("SLURM_JOB_ID")
    write_record(paths.start(stem), {"job": job, "host": host, "pid": os.getpid(), "started": started})
    reason = None
    if spec.get("expand"):
        spec, reason = _expanded(spec, host)
    outcome = {"kind": "held", "reason": reason} if reason is not None else _run(spec, started)
    write_record(paths.exit(stem), {**outcome, "started": started, "ended": time.time(), "slot": host,
                                    "job": job})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
