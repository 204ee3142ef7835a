"""Where a run's state comes from, and the lock that keeps a second engine off the same DAG.

See ``_loop``'s docstring for the four starting points (fresh, recovery, rescue, complete); a
journal damaged inside its latest run stops the run before anything is written (``_journal``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from sheaf.condor import Dag, Rescue
from sheaf.engine._journal import Replay
from sheaf.engine._paths import newest_rescue
from sheaf.errors import FormatError, UsageError


class RunLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(self.fd)
            raise UsageError(f"another sheaf run is already running this workflow (pid {holder}); "
                             f"lock file {path}") from None
        try:  # the pid is for people reading the file; a full disk must not stop the run here
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass

    def release(self) -> None:
        with contextlib.suppress(OSError):  # a released lock names no engine (``lock_holder``)
            os.ftruncate(self.fd, 0)
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def lock_holder(path: str) -> int | None:
    """The pid of the engine holding the run lock ``path`` now (the pid it wrote), else None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.pread(fd, 64, 0).decode(errors="replace").strip()
        return int(text) if text.isdigit() else None
    else:
        return None  # nobody holds it: no run
    finally:
        os.close(fd)



RetryLimits = dict[str, tuple[int, int | None]]


def is_complete(prior: Replay, start: str | None) -> bool:
    """The journal's last run succeeded and wrote no rescue DAG, and the run starts from the newest
    rescue DAG: nothing to do."""
    return (prior.ended is not None and prior.ended.succeeded and prior.ended.rescue is None
            and start == "newest")


def _recovers(prior: Replay, start: str | None, recover: bool) -> bool:
    return bool(prior.epochs) and ((start == "newest" and prior.ended is None) or recover)


def rescue_to_read(dag: Dag, prior: Replay, multi: bool = False, start: str | None = "newest",
                   recover: bool = False) -> str | None:
    """The rescue DAG (or save point file) the run reads, for ``starting_point``'s ``start`` and
    ``recover``: in a recovery the one the killed run started from, else the chosen one; None for none."""
    if is_complete(prior, start):
        return None
    if _recovers(prior, start, recover):
        return _rescue_file_of(dag, prior.source)
    return newest_rescue(dag.path, multi) if start == "newest" else start


def starting_point(dag: Dag, prior: Replay, start: str | None, recover: bool, rescue: Rescue | None
                   ) -> tuple[str, set[str], set[str], dict[str, int], RetryLimits]:
    """(source, done, failed, attempts, retry limits) for this run; see the module docstring.  The
    retry limits are a rescue DAG's ``RETRY node n [UNLESS-EXIT v]`` lines, (n, v or None): DAGMan
    parses the rescue DAG as a DAG file, so they apply whatever ``DAGMAN_RESET_RETRIES_UPON_RESCUE``
    (which decides only whether a rescue DAG is written with them): a node's retries left become its
    RETRY count, and ``$(RETRY)`` starts at 0.
    ``start``: the rescue DAG to start from -- ``"newest"`` (a killed run recovers first), a path
    (``-DoRescueFrom``), or None for the original DAG (``-force``, ``-AutoRescue 0``).  ``recover``
    (``-DoRecovery``): the last run's state, as after a killed run, even when it ended.  ``rescue``:
    the rescue DAG ``rescue_to_read`` named, already parsed onto ``dag`` (``parse_rescue``)."""
    if _recovers(prior, start, recover):
        # the rescue DAG's DONE nodes are a second witness of what the killed run's ``B`` record
        # lists, so damage to that record cannot make them run again
        done = {n for n, r in prior.nodes.items() if r.state == "done" and n in dag.nodes}
        done |= {n for n in rescue.done if n in dag.nodes} if rescue else set()
        failed = {n for n, r in prior.nodes.items() if r.state == "failed" and n in dag.nodes}
        return ("recovery", done, failed, {n: r.attempt for n, r in prior.nodes.items() if n in dag.nodes},
                _retry_limits(rescue))
    if rescue is None:
        return "fresh", set(), set(), {}, {}
    return f"rescue:{os.path.basename(rescue.path)}", set(rescue.done), set(), {}, _retry_limits(rescue)


def _retry_limits(rescue: Rescue | None) -> RetryLimits:
    if rescue is None:
        return {}
    return {n: (count, rescue.unless_exit.get(n)) for n, count in rescue.retries.items()}


def _rescue_file_of(dag: Dag, source: str | None) -> str | None:
    """The rescue DAG a killed run started from, if it is still there."""
    if not source or not source.startswith("rescue:"):
        return None
    path = os.path.join(os.path.dirname(dag.path), source[len("rescue:"):])
    if os.path.basename(path) != source[len("rescue:"):] or not os.path.isfile(path):
        return None
    return path


def damage_warnings(prior: Replay, journal_path: str) -> list[str]:
    """Warnings for damaged journal lines; raises :class:`FormatError` when damage lies in the
    latest run, where it may hide a node that finished (module docstring of ``_journal``)."""
    if prior.damage_in_latest_run:
        first = prior.damage_in_latest_run[0]
        more = len(prior.damage_in_latest_run) - 1
        raise FormatError(
            f"damaged journal record at byte offset {first.offset}: {first.why}"
            + (f" (and {more} more damaged line(s))" if more else "")
            + "; it lies in the latest run, so sheaf cannot tell which nodes finished after it and runs "
            "nothing rather than run a finished node again",
            rule="journal records after the latest run's start are complete and valid",
            value=first.text.decode("utf-8", "replace"), path=journal_path, line=first.line,
            detail="to go on: restore the journal from a backup, or move it aside and run again from "
                   "the newest rescue DAG (the nodes it does not mark DONE run again)")
    return [d.describe(journal_path) + " (before the latest run's start, which lists the nodes done "
            "then; skipped)" for d in prior.damage]

