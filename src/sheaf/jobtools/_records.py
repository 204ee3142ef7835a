"""The provenance records clustered jobs print, byte for byte as pegasus-cluster and PMC print them.

pegasus-monitord and pegasus-exitcode read these lines back, so the field order, the quoting and the
number formats are part of the contract:

seqexec (pegasus-cluster), one per task, then one summary::

    [cluster-task id=N, start="ISO", duration=S.mmm, status=W, line=L, pid=P, app="PATH"]
    [cluster-task id=setup, start="ISO", duration=S.mmm, status=W, pid=P, app="PATH"]
    [cluster-summary stat="ok"|"fail", lines=L, tasks=T, succeeded=S, failed=F, extra=E,
                     duration=S.mmm, start="ISO", pid=P, app="ARGV0"]

PMC, one per task attempt (written into the task's stdout), then one summary::

    [cluster-task id=PEGASUS_ID, name=NAME, start="ISO", duration=S.mmm, status=W, app="PATH",
                  hostname="HOST", slot=RANK, cpus=C, memory=M]        -- "id=..., " only with '#@'
    [cluster-summary stat="ok"|"failed", tasks=T, submitted=N, succeeded=S, failed=F, extra=0,
                     start="ISO", duration=S.mmm, pid=P, app="ARGV0", runtime=S.mmm, slots=W, cpus=C]

``status`` is the raw ``wait()`` status (exit code * 256, or the signal number).  ``ISO`` is local
time with milliseconds and the UTC offset, ``2026-11-22T04:09:10.123+00:00``.  ``app`` is the
application after any pegasus-kickstart wrapper and its options.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # imported by sheaf-cluster at start-up: nothing not already loaded
if TYPE_CHECKING:
    from collections.abc import Sequence

# pegasus-kickstart's options that take a value, and those that do not (from its usage).
KS_WITH_VALUE = "ioelnNRBLTIwWSsKk"
KS_NO_VALUE = "HVXFfqctzZ"


def iso_time(seconds: float) -> str:
    """Local time with milliseconds and numeric UTC offset."""
    whole = int(seconds)
    millis = int((seconds - whole) * 1000)
    local = time.localtime(whole)
    offset = local.tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    return (time.strftime("%Y-%m-%dT%H:%M:%S", local)
            + f".{millis:03d}{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}")


def find_application(argv: Sequence[str]) -> int:
    """Index of the real application in ``argv``: past a leading kickstart and its options."""
    if not argv or not argv[0].endswith("kickstart"):  # pegasus-cluster's fnmatch "*kickstart"
        return 0
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg[:1] == "-" and len(arg) > 1 and arg[1] in KS_WITH_VALUE:
            i += 2 if len(arg) == 2 else 1
        elif arg[:1] == "-" and len(arg) > 1 and arg[1] in KS_NO_VALUE:
            i += 1
        else:
            return i
    return 0


def application(argv: Sequence[str]) -> str:
    return argv[find_application(argv)] if argv else ""


def seqexec_task(count: int | str, start: float, duration: float, status: int, line: int | None,
                 pid: int, app: str) -> str:
    where = f"line={line}, " if line is not None else ""
    return (f'[cluster-task id={count}, start="{iso_time(start)}", duration={duration:.3f}, '
            f'status={status}, {where}pid={pid}, app="{app}"]\n')


def seqexec_summary(failed_run: bool, lines: int, tasks: int, failed: int, extra: int,
                    duration: float, start: float, pid: int, app: str) -> str:
    return (f'[cluster-summary stat="{"fail" if failed_run else "ok"}", lines={lines}, tasks={tasks}, '
            f"succeeded={tasks - failed}, failed={failed}, extra={extra}, duration={duration:.3f}, "
            f'start="{iso_time(start)}", pid={pid}, app="{app}"]\n')


def pmc_task(pegasus_id: str | None, name: str, start: float, duration: float, status: int,
             app: str, hostname: str, slot: int, cpus: int, memory: int) -> str:
    ident = f"id={pegasus_id}, " if pegasus_id else ""
    return (f'[cluster-task {ident}name={name}, start="{iso_time(start)}", duration={duration:.3f}, '
            f'status={status}, app="{app}", hostname="{hostname}", slot={slot}, cpus={cpus}, '
            f"memory={memory}]\n")


def pmc_summary(failed_run: bool, tasks: int, submitted: int, succeeded: int, failed: int,
                start: float, duration: float, pid: int, app: str, runtime: float, slots: int,
                cpus: int) -> str:
    return (f'[cluster-summary stat="{"failed" if failed_run else "ok"}", tasks={tasks}, '
            f"submitted={submitted}, succeeded={succeeded}, failed={failed}, extra=0, "
            f'start="{iso_time(start)}", duration={duration:.3f}, pid={pid}, app="{app}", '
            f"runtime={runtime:.3f}, slots={slots}, cpus={cpus}]\n")
