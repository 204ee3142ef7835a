"""A stop (SIGTERM/SIGINT, DAGMan's ``condor_rm``) from the moment ``run_workflow`` starts.

Policy: the handlers are installed before the DAG is read, so that no stretch of a large run's
start-up ignores a stop (reading and validating 10^5 nodes, replaying a journal and building the
state take seconds).  A stop has two meanings, by phase:

* **nothing started yet** (reading the DAG, its submit descriptions and the journal, building the
  state: nothing written that the stop must keep): the handler raises :class:`Stopped` at once, and
  the run ends as a removed DAG that never ran - no journal begun, no rescue DAG, no job;
* **from the moment the backend exists**: the stop is handed to the run (``EngineRun.stop_requested``),
  whose loop looks at it every turn and stops as DAGMan does (jobs removed, FINAL, rescue DAG);
  one arriving before the run exists waits for it (:meth:`StopSignals.attach`).

A stop also comes without a signal: another thread of the process that runs the engine (a Python
caller running ``sheaf.app.run`` in a worker thread, where no handler can be installed) asks for it
with :func:`stop_in_process`, naming the run's lock; the engine registers its :class:`StopSignals`
under that lock for as long as it holds it.  Such a stop never raises: it is kept until the run
exists, then handed to it, and the loop sees it within a turn.

A SUBDAG's run also stops when its parent engine dies (:func:`watch_parent_engine`).
"""

from __future__ import annotations

__all__ = ["StopSignals", "Stopped", "stop_in_process", "watch_parent_engine"]

import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from sheaf.engine._dagid import PARENT_ID_VARIABLE

if TYPE_CHECKING:
    from sheaf.engine._run import EngineRun

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """A stop before anything was started; a BaseException so that no ``except Exception`` of the
    reading code swallows it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StopSignals:
    """SIGTERM/SIGINT handlers for one run (installed only in the main thread; elsewhere inert)."""

    def __init__(self) -> None:
        self.run: EngineRun | None = None
        self.raising = True  # nothing started yet: a stop ends the run at once
        self.pending: tuple[str, float] | None = None  # a stop between ``hold`` and ``attach``
        self._old: dict[int, Any] = {}

    def install(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._stop) for s in _SIGNALS}
        return self

    def hold(self) -> None:
        """From now on a stop is kept (for the run, or until :meth:`resume`)."""
        self.raising = False

    def resume(self) -> None:
        """After a step that must not be cut in the middle (taking the run lock): raise the stop that
        came during it, else go on raising at once."""
        if self.pending is not None:
            reason, self.pending = self.pending[0], None
            raise Stopped(reason)
        self.raising = True

    def attach(self, run: EngineRun) -> None:
        """Hand the run the stop that came before it existed; later ones go to it directly."""
        self.raising = False
        self.run = run  # set before ``pending`` is read: a concurrent :meth:`request` sees one or the other
        if self.pending is not None and not run.stop_requested:
            run.stop_requested, run.stop_time = self.pending
        if self._old:
            watch_parent_engine(run)

    def restore(self) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)
        self._old = {}

    def request(self, reason: str) -> None:
        """A stop that never raises: kept (``pending``) until the run exists, and handed to it once it
        does -- ``pending`` is set before ``run`` is read, so a concurrent :meth:`attach` hands it on."""
        if self.pending is None:
            self.pending = (reason, time.monotonic())
        run = self.run
        if run is not None and not run.stop_requested:  # None, or "" once handed on: a second stop
            run.stop_requested, run.stop_time = reason, time.monotonic()

    def _stop(self, signum: int, _frame: Any) -> None:
        reason = f"engine received {signal.Signals(signum).name}"
        if self.run is None and self.raising:
            self.raising = False  # a second stop while this one unwinds is the same stop
            raise Stopped(reason)
        self.request(reason)


_IN_PROCESS: dict[str, StopSignals] = {}  # run lock (real path) -> the stop handling of the run holding it


def register(lock: str, signals: StopSignals) -> None:
    """The run holding ``lock`` in this process takes stops through ``signals`` (:func:`stop_in_process`)."""
    _IN_PROCESS[os.path.realpath(lock)] = signals


def unregister(lock: str) -> None:
    _IN_PROCESS.pop(os.path.realpath(lock), None)


def stop_in_process(lock: str, reason: str) -> bool:
    """Ask the run of this process that holds the run lock ``lock`` to stop, as SIGTERM would;
    False when no run of this process holds it."""
    signals = _IN_PROCESS.get(os.path.realpath(lock))
    if signals is None:
        return False
    signals.request(reason)
    return True


def watch_parent_engine(run: EngineRun, interval: float = 0.5) -> None:
    """A SUBDAG's run (spawned by its parent engine, whose pid it is given) stops as a removed DAG
    does when that engine dies (``kill -9``): its jobs are cancelled, its journal and rescue DAG
    kept, so the parent's resume finds no orphan running and the child resumes where it stopped."""
    parent = os.environ.get(PARENT_ID_VARIABLE, "")
    if not parent.isdigit() or int(parent) != os.getppid():
        return

    def watch() -> None:
        while os.getppid() == int(parent):
            time.sleep(interval)
        if not run.stop_requested:
            run.stop_requested, run.stop_time = "the parent engine died", time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)  # wakes the loop from any wait

    threading.Thread(target=watch, name="sheaf-parent-watch", daemon=True).start()
