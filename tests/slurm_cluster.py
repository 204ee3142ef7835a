"""A private single-node Slurm cluster for the tests: munged, slurmctld and slurmd under a temp dir.

Policy: nothing under /etc is read or written.  The configuration (``slurm.conf``), the munge key,
state directories, spool and logs live under one temporary directory; every client call finds the
cluster through ``SLURM_CONF`` (``Cluster.env``).  The daemons run in the foreground as children of
the test process, so they are stopped by pid and reaped (a killed daemon lingers as a zombie
otherwise), and exactly those are stopped.  Settings that matter, measured on the machine this was
written on: ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none`` work without
cgroups; ``SchedulerParameters=batch_sched_delay=0`` cut 100 short jobs from 131.6 s to 44.9 s (a
test setting: sites own theirs); ``MinJobAge`` is small so that a job vanishes from ``squeue``
soon after it ends (the backend must not read "gone" as "succeeded"); ``DefMemPerCPU`` gives a job
that asks for no memory its CPUs' share, so that jobs share the node as on a site.

Without root, or without the Debian packages ``slurm-wlm`` and ``munge`` (``scripts/system-deps.sh``
installs them when root), :func:`unavailable` gives the reason and the Slurm tests skip.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cluster", "start_cluster", "unavailable"]

_DAEMONS = ("munged", "slurmctld", "slurmd")
_CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "sdiag", "srun")
_UP_TIMEOUT = 30.0


def _find(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")


def unavailable() -> str | None:
    """Why no cluster can be started here, or None."""
    if os.geteuid() != 0:
        return "the Slurm tests start slurmd, which needs root (CI runs as root)"
    missing = [name for name in (*_DAEMONS, *_CLIENTS, "mungekey") if _find(name) is None]
    if missing:
        return (f"Slurm/munge not installed (missing {', '.join(missing)}; "
                "scripts/system-deps.sh installs them)")
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _real_memory_mb() -> int:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024 - 256  # slurmd refuses a node claiming more than it has
    return 1024


@dataclass
class Cluster:
    root: Path
    conf: Path
    env: dict[str, str]
    cpus: int
    memory_mb: int
    settings: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=check,
                              timeout=60)

    def queue(self) -> list[str]:
        """``jobid name state`` of every job squeue still shows."""
        return self.run("squeue", "-h", "-o", "%i %j %T").stdout.splitlines()

    def wait_empty(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.queue():
            if time.monotonic() > deadline:
                raise AssertionError(f"jobs still queued: {self.queue()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the daemons this cluster started (slurmd, slurmctld, munged) and reap them; then the
        job step daemons slurmd left behind (``slurmstepd``, detached from it, found by this cluster's
        ``SLURM_CONF`` in their environment)."""
        if self.procs:
            self.run("scancel", "--me", check=False)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        killed = _carriers(f"SLURM_CONF={self.conf}".encode())
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in {*killed, *_step_zombies()}:
            with contextlib.suppress(ChildProcessError):  # ours to reap: see _become_subreaper
                os.waitpid(pid, 0)
        _become_subreaper(False)  # the next tests' orphans go to init again, as without a cluster


def _proc_files(name: str) -> Iterator[tuple[int, bytes]]:
    """``(pid, content of /proc/<pid>/<name>)`` of every process that can be read."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/{name}", "rb") as handle:
                    yield int(entry), handle.read()
            except OSError:
                continue


def _step_zombies() -> list[int]:
    """Ended step daemons (zombies) whose parent is this process."""
    found = []
    for pid, stat in _proc_files("stat"):
        comm, rest = stat[stat.index(b"(") + 1:stat.rindex(b")")], stat[stat.rindex(b")") + 2:].split()
        if rest[0] == b"Z" and int(rest[1]) == os.getpid() and comm.startswith(b"slurmstepd"):
            found.append(pid)
    return found


def _become_subreaper(on: bool = True) -> None:
    """Make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``) while a
    cluster runs: slurmd detaches its step daemons, and on this machine pid 1 does not reap, so a step
    daemon that ends would stay a zombie; as their subreaper the test process reaps them in ``stop``,
    which turns it off again (other tests' orphans would otherwise linger as zombies of pytest)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1 if on else 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _carriers(needle: bytes) -> list[int]:
    """Processes whose environment holds ``needle`` (this cluster's step daemons and jobs)."""
    return [pid for pid, env in _proc_files("environ") if needle + b"\0" in env or env.endswith(needle)]


def _slurm_conf(root: Path, port: int, cpus: int, memory: int, settings: dict[str, str]) -> str:
    host = socket.gethostname().split(".")[0]
    lines = {
        "ClusterName": "sheaftest", "SlurmctldHost": "localhost", "SlurmctldPort": str(port),
        "SlurmdPort": str(_free_port()), "SlurmUser": "root", "SlurmdUser": "root",
        "AuthType": "auth/munge", "CredType": "cred/munge", "AuthInfo": f"socket={root}/munge.socket",
        "StateSaveLocation": f"{root}/ctld", "SlurmdSpoolDir": f"{root}/spool",
        "SlurmctldPidFile": f"{root}/slurmctld.pid", "SlurmdPidFile": f"{root}/slurmd.pid",
        "SlurmctldLogFile": f"{root}/slurmctld.log", "SlurmdLogFile": f"{root}/slurmd.log",
        "ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none", "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/none", "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core_Memory", "SchedulerType": "sched/backfill",
        "SchedulerParameters": "batch_sched_delay=0", "MinJobAge": "2", "ReturnToService": "2",
        "MpiDefault": "none", "SwitchType": "switch/none", "MailProg": "/bin/true",
        "SlurmctldTimeout": "30", "SlurmdTimeout": "60", "InactiveLimit": "0", "KillWait": "5",
        "MaxJobCount": "20000",
        # a job that asks for no memory gets its CPUs' share, as sites configure it: without this
        # Slurm gives it the whole node's memory (CR_Core_Memory), and jobs run one at a time
        "DefMemPerCPU": str(max(1, memory // max(cpus, 1))),
    }
    lines.update(settings)
    text = "".join(f"{k}={v}\n" for k, v in lines.items() if v)
    text += (f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN\n"
             f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO\n")
    return text


def _start(cluster: Cluster, argv: list[str], log: str) -> None:
    out = open(cluster.root / log, "ab")  # noqa: SIM115 - the daemon's stdout, closed when the test ends
    cluster.procs.append(subprocess.Popen(argv, env=cluster.env, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True))
    out.close()


def _wait_idle(cluster: Cluster) -> None:
    deadline = time.monotonic() + _UP_TIMEOUT
    while True:
        for proc in cluster.procs:
            if proc.poll() is not None:
                logs = "".join(p.read_text()[-2000:] for p in cluster.root.glob("*.log"))
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}:\n{logs}")
        state = cluster.run("sinfo", "-h", "-o", "%t", check=False).stdout.split()
        if state and state[0] == "idle":
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Slurm node did not become idle: {state}")
        time.sleep(0.05)


def start_cluster(root: Path | None = None, **settings: str) -> Cluster:
    """Start munged, slurmctld and slurmd under ``root`` (a new temp dir by default); wait until idle."""
    made = root is None
    root = Path(tempfile.mkdtemp(prefix="sheaf-slurm-")) if root is None else root
    for sub in ("ctld", "spool", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    cpus, memory = os.cpu_count() or 1, _real_memory_mb()
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, _free_port(), cpus, memory, settings))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    cluster = Cluster(root, conf, env, cpus, memory, settings)
    _become_subreaper()
    key = root / "munge" / "munge.key"
    try:
        subprocess.run([_find("mungekey") or "mungekey", "--create", f"--keyfile={key}"], check=True,
                       capture_output=True)
        os.chmod(root / "munge", 0o700)
        _start(cluster, [_find("munged") or "munged", "-F", "-f", f"--socket={root}/munge.socket",
                         f"--key-file={key}", f"--log-file={root}/munged.log",
                         f"--pid-file={root}/munged.pid", f"--seed-file={root}/munge/seed"], "munged.out")
        _wait_for((root / "munge.socket").exists, "munged socket")
        _start(cluster, [_find("slurmctld") or "slurmctld", "-D", "-c", "-f", str(conf)], "slurmctld.out")
        _start(cluster, [_find("slurmd") or "slurmd", "-D", "-f", str(conf)], "slurmd.out")
        _wait_idle(cluster)
    except BaseException:
        cluster.stop()
        if made:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster


def _wait_for(predicate: object, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + _UP_TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


@contextlib.contextmanager
def cluster_running(**settings: str) -> Iterator[Cluster]:
    cluster = start_cluster(**settings)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
