"""``sheaf-mpi-cluster``: what an mpiexec cluster job runs (sheaf's pegasus-mpi-cluster, PMC).

Usage, as PMC's (plus sheaf's ``--workers``, ``--transport``, ``--no-rescue``, ``--worker-timeout``)::

    mpiexec --enable-recovery -n N sheaf-mpi-cluster [options] DAGFILE     # rank 0 master, N-1 workers
    sheaf-mpi-cluster [options] DAGFILE                                  # no MPI: local worker processes

    -v/--verbose, -q/--quiet   more/less logging on stderr (default INFO)
    -o/--stdout PATH, -e/--stderr PATH   where the tasks' merged stdout/stderr go (default ours)
    -s/--skip-rescue           ignore DAGFILE.rescue (a new one is still written)
    -r/--rescue PATH           rescue log [DAGFILE.rescue]        --no-rescue   neither read nor write one
    -m/--max-failures N        start nothing new after N failed tasks (0 = no limit)
    -t/--tries N               tries per task unless its TASK record says -t (default 1)
    -n/--nolock                do not lock DAGFILE against a second run
    --host-memory MB, --host-cpus N   resources per host ($PMC_HOST_MEMORY, $PMC_HOST_CPUS; default: measured)
    --strict-limits            a task may not allocate more than its -m
    --max-wall-time MIN        abort the workflow after MIN minutes ($PMC_MAX_WALL_TIME)
    --per-task-stdio           TASK.out.NNN / TASK.err.NNN per attempt instead of merged output
    --jobstate-log             append Pegasus jobstate.log lines beside DAGFILE
    --no-resource-log          do not write DAGFILE.resource
    --keep-affinity            keep the inherited CPU affinity (default: cleared)
    --set-affinity             bind tasks asking for several CPUs to CPUs of their own
    --no-sleep-on-recv, --maxfds N   accepted for compatibility; no effect here
    --workers N                local transport: number of worker processes (default: CPUs)
    --transport auto|mpi|local auto = MPI when started by mpiexec
    --worker-timeout S         give up a busy worker silent for S seconds (default 60)

Exit status: 0 every task succeeded; 1 the workflow failed or was aborted (a task's tries used up,
wall time, a signal, no host fits a task, the DAG is locked); 2 usage error or malformed DAG or
rescue file (one message naming file, line and rule).  PMC itself exits 1 for usage errors too.
Not implemented: ``--host-script``, ``--monitord-hack`` (refused with a usage error).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from sheaf import __version__
from sheaf.errors import UsageError
from sheaf.formats import PmcDag, parse_pmc_dag, parse_rescue
from sheaf.jobtools._cli import ToolExit, run_guarded
from sheaf.jobtools._pmc_master import MasterRun, PmcOptions
from sheaf.jobtools._pmc_transport import (
    LocalMaster,
    MasterLink,
    MpiMaster,
    MpiWorker,
    exit_without_finalize,
)
from sheaf.jobtools._pmc_worker import host_cpus, serve

PROG = "sheaf-mpi-cluster"
_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK")
_UNSUPPORTED = ("--host-script", "--monitord-hack")


def _int(low: int) -> Callable[[str, str], int]:
    def parse(flag: str, text: str) -> int:
        if not text.lstrip("-").isdigit() or int(text) < low:
            raise UsageError(f"{flag} takes an integer >= {low}, not {text!r}")
        return int(text)
    return parse


def _float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{flag} takes a number, not {text!r}") from None
    if value < 0:
        raise UsageError(f"{flag} takes a number >= 0, not {text!r}")
    return value


def _choice(flag: str, text: str) -> str:
    if text not in ("auto", "mpi", "local"):
        raise UsageError(f"{flag} is auto, mpi or local, not {text!r}")
    return text


def _text(flag: str, text: str) -> str:
    return text


_WITH_VALUE: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "-o": ("stdout", _text), "--stdout": ("stdout", _text),
    "-e": ("stderr", _text), "--stderr": ("stderr", _text),
    "-m": ("max_failures", _int(0)), "--max-failures": ("max_failures", _int(0)),
    "-t": ("tries", _int(1)), "--tries": ("tries", _int(1)),
    "-r": ("rescue", _text), "--rescue": ("rescue", _text),
    "--host-memory": ("host_memory", _int(1)), "--host-cpus": ("host_cpus", _int(1)),
    "--max-wall-time": ("max_wall_time", _float), "--maxfds": ("maxfds", _int(1)),
    "--workers": ("workers", _int(1)), "--transport": ("transport", _choice),
    "--worker-timeout": ("worker_timeout", _float),
}
_SWITCHES: dict[str, tuple[str, Any]] = {
    "-s": ("skip_rescue", True), "--skip-rescue": ("skip_rescue", True),
    "--no-rescue": ("no_rescue", True), "-n": ("lock", False), "--nolock": ("lock", False),
    "--strict-limits": ("strict_limits", True), "--per-task-stdio": ("per_task_stdio", True),
    "--jobstate-log": ("jobstate_log", True), "--no-resource-log": ("resource_log", False),
    "--keep-affinity": ("keep_affinity", True), "--set-affinity": ("set_affinity", True),
    "--no-sleep-on-recv": ("", None),
}


def _environment_defaults(opts: PmcOptions) -> None:
    for var, flag, attr, parse in (("PMC_HOST_MEMORY", "--host-memory", "host_memory", _int(1)),
                                   ("PMC_HOST_CPUS", "--host-cpus", "host_cpus", _int(1)),
                                   ("PMC_MAX_WALL_TIME", "--max-wall-time", "max_wall_time", _float)):
        if var in os.environ:
            setattr(opts, attr, parse(f"{var} ({flag})", os.environ[var]))


def parse_options(args: Sequence[str]) -> PmcOptions:
    opts = PmcOptions(app=sys.argv[0] if sys.argv and sys.argv[0] else PROG)
    _environment_defaults(opts)
    positional: list[str] = []
    i = 0
    while i < len(args):
        flag = args[i]
        if flag in ("-h", "--help"):
            print(__doc__)
            raise ToolExit(0)
        if flag in ("-V", "--version"):
            print(f"{PROG} {__version__}", file=sys.stderr)
            raise ToolExit(0)
        if flag in ("-v", "--verbose", "-q", "--quiet"):
            opts.loglevel += 1 if flag in ("-v", "--verbose") else -1
        elif flag in _SWITCHES:
            attr, value = _SWITCHES[flag]
            if attr:
                setattr(opts, attr, value)
        elif flag in _WITH_VALUE:
            if i + 1 >= len(args):
                raise UsageError(f"{flag} requires a value")
            attr, parse = _WITH_VALUE[flag]
            if hasattr(opts, attr):
                setattr(opts, attr, parse(flag, args[i + 1]))
            else:
                parse(flag, args[i + 1])
            i += 1
        elif flag in _UNSUPPORTED:
            raise UsageError(f"{flag} is not supported by {PROG}")
        elif flag.startswith("-") and flag != "-":
            raise UsageError(f"unrecognized argument: {flag} (see {PROG} --help)")
        else:
            positional.append(flag)
        i += 1
    if len(positional) != 1:
        raise UsageError(f"exactly one DAGFILE is required, got {len(positional)} (see {PROG} --help)")
    if opts.set_affinity and opts.host_cpus:
        raise UsageError("--host-cpus is not compatible with --set-affinity")
    opts.dag = positional[0]
    opts.loglevel = max(0, min(opts.loglevel, 5))
    return opts


def _read(path: str, what: str) -> str:
    try:
        with open(path, "rb") as stream:
            return stream.read().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise ToolExit(2, f"cannot read {what} {path}: {exc.strerror}") from None


def _carried(opts: PmcOptions, dag: PmcDag) -> tuple[str | None, list[str]]:
    """The rescue log's path and the tasks it records done (in DAG order)."""
    if opts.no_rescue:
        return None, []
    path = opts.rescue or f"{opts.dag}.rescue"
    if opts.skip_rescue or not os.path.exists(path):
        return path, []
    done = parse_rescue(_read(path, "rescue file"), path, dag.tasks)
    return path, [name for name in dag.tasks if name in done]


def _lock(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ToolExit(1, f"DAG file is already locked by another process: {path}") from None
    return fd


def _master(opts: PmcOptions, make_link: Callable[[], MasterLink]) -> int:
    dag = parse_pmc_dag(_read(opts.dag, "DAG file"), opts.dag)
    rescue_path, carried = _carried(opts, dag)
    lock = _lock(opts.dag) if opts.lock else None
    run = MasterRun(opts, dag, set(carried), make_link())
    try:
        run.configure()
        run.register()
        bad = run.sched.unrunnable()
        if bad is not None or not run.sched.hosts:
            run.log(0, f"FATAL ERROR: no host is capable of running task {bad}" if run.sched.hosts
                    else "FATAL ERROR: no worker registered")
            run.summary(time.time(), True)
            return 1
        ok = run.run(rescue_path, carried)
        run.merge_stdio()
        return 0 if ok else 1
    finally:
        run.shutdown()
        if lock is not None:
            os.close(lock)


def _wanted_transport(args: Sequence[str]) -> str:
    for i, arg in enumerate(args[:-1]):
        if arg == "--transport":
            return args[i + 1]
    return "auto"


def _mpi_main(args: list[str]) -> int:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ToolExit(2, "MPI requested but mpi4py is not installed "
                          "(pip install mpi4py, or --transport local)") from None
    comm = MPI.COMM_WORLD
    if comm.Get_rank() > 0:
        worker = MpiWorker(comm)
        code = serve(worker)
        if worker.abandon:
            exit_without_finalize(code)
        return code
    link = MpiMaster(comm)
    try:
        opts = parse_options(args)
        if comm.Get_size() < 2:
            raise UsageError("at least one worker process is required (mpiexec -n 2 or more)")
        code = _master(opts, lambda: link)
    finally:
        for rank in range(1, comm.Get_size()):
            if rank not in link.configured:
                link.send(rank, ("shutdown", {}))  # workers still waiting for a config leave too
    if link.lost_any:
        exit_without_finalize(code)
    return code


def _main(args: list[str]) -> int:
    wanted = _wanted_transport(args)
    if wanted == "mpi" or (wanted == "auto" and any(var in os.environ for var in _MPI_ENV)):
        return _mpi_main(args)
    opts = parse_options(args)
    return _master(opts, lambda: LocalMaster(opts.workers or host_cpus()))


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point of ``sheaf-mpi-cluster``."""
    run_guarded(PROG, _main, argv)
