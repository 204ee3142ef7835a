"""The loader process beside ``sheaf run``: ``python -m sheaf.monitor._follow DAG INTERVAL SIZE``.

Why a process and not a thread: the engine's loop is one Python thread that makes many short
system calls (fsync, spawn, wait); a thread parsing the journal beside it holds the GIL in bursts,
and every call the engine makes then waits for the GIL (up to the switch interval), which slows
the run far beyond the loader's own CPU time.  A process shares nothing with the engine but the
journal it reads.

Protocol: the parent holds the write end of this process's stdin and never writes to it.  SIZE is
the engine journal's size before the run (-1: none); the process loads nothing until the journal
has grown past it, so a run refused before it began (a DAG that does not parse) leaves the database
as the earlier runs left it.  Then every INTERVAL seconds the process catches up; when stdin
reaches end of file (the parent closed it when the run returned, or the parent died -- even by
kill -9) it catches up once more and exits 0.
Failures go to stderr as one warning line; the exit status is 1 then, which the parent reports as
a warning: the database is rebuilt by the next view.

Memory: the process turns the cyclic garbage collector's automatic runs off (``gc.disable``, at
this entry point).  A catch-up makes tens of thousands of objects (records, rows, the caches'
entries) and next to no cycles; the automatic runs it set off scanned the growing heap again and
again, most of all in the first catch-up.  After the first catch-up (which reads the plan's jobs
into the loader's caches) the process freezes what it holds (``gc.freeze``): those caches live as
long as the process; after each later one it collects the young generations, which hold only what
that catch-up made.

NULLs: the process registers an adapter for ``None`` with ``sqlite3`` (at this entry point).  The
module binds int, float and str parameters directly but puts every other value, ``None`` included,
through its adaptation protocol first -- a registry miss and two failed attribute lookups, each
formatting an AttributeError -- unless an adapter is registered for the type.  A run binds about 20
NULLs a job (a job's reason, a SUBMIT's value, an attempt's signal...), a noticeable share of the
loader's instructions.  The adapter returns ``None``, which binds NULL as before.
"""

from __future__ import annotations

import gc
import os
import select
import sqlite3
import sys

from sheaf._gc import freeze
from sheaf.engine import state_paths
from sheaf.monitor._events import journal_size, register
from sheaf.monitor._loader import Loader


def _null(value: None) -> None:
    return value


def follow(dag_path: str, interval: float, before: int) -> int:
    # not niced: on a loaded machine a niced loader starves, and `sheaf run` waits for its last
    # catch-up; its work is a small share of the engine's CPU
    if not _journal_grew(state_paths(dag_path)["journal"], before, interval):
        return 0  # a run refused before it began (bad input): see the module docstring
    gc.disable()  # see the module docstring: collected after each catch-up instead
    sqlite3.register_adapter(type(None), _null)  # see the module docstring: NULLs
    loader = Loader(dag_path, hooks=True)
    registered = frozen = False
    try:
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], interval)
            ended = bool(ready) and not os.read(sys.stdin.fileno(), 4096)
            loader.catch_up(verify=False)
            if frozen:
                gc.collect(1)  # what the catch-up made and dropped
            else:
                freeze()  # once, after the first catch-up: see the module docstring
                frozen = True
            if ended or not registered:  # the master database learns of the run and of its end
                registered = register(loader)
            if ended:
                return 0
    finally:
        loader.close()


def _journal_grew(journal: str, before: int, interval: float) -> bool:
    """Whether the engine's journal grew past ``before`` -- the run began -- before ``sheaf run`` says
    the run is over (end of stdin)."""
    ended = False
    while journal_size(journal) <= before:
        if ended:
            return False
        ready, _, _ = select.select([sys.stdin], [], [], interval)
        ended = bool(ready) and not os.read(sys.stdin.fileno(), 4096)
    return True



def main() -> int:
    try:
        return follow(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]))
    except (OSError, sqlite3.Error) as exc:
        print(f"sheaf: warning: the events database was not kept up to date ({exc}); "
              "`sheaf status` rebuilds it from the journal", file=sys.stderr)
        return 1


if __name__ == "__main__":
    code = main()  # the database is closed: the exit need not take the process's objects apart
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
