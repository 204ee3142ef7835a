"""sheaf.engine.reports: the files a run writes for people and tools, as DAGMan writes them.

``jobstate.log`` (``_jobstate``), the node job event log (``_nodelog``), the node status file
(``_nodestatus``), the DOT file (``_dot``), the metrics (``_metrics``), the rescue DAG and save point
files (``_rescue``), all in DAGMan's formats, from the node events ``_runevents`` makes of the
journaled changes.  None is read back to resume a run: the journal is.

The engine's core (the state machine, the journal, the loop) does not know these modules.  Its one
seam is this package's face, used by the loop alone: one :class:`RunFiles` per run, told each turn
what changed (``RunFiles.record``) and asked for snapshots; the records it is told of job starts and
proc ends (:class:`JobStart`, :class:`ProcEnd`); and :func:`remove_stale_files` as a run starts.
The engine's own face re-exports the event translator for the events loader (``sheaf.monitor``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.engine.reports._runevents import EventTranslator, JobStart, Kind, NodeEvent, ProcEnd
    from sheaf.engine.reports._runfiles import RunFiles, remove_stale_files

__all__ = ["EventTranslator", "JobStart", "Kind", "NodeEvent", "ProcEnd", "RunFiles", "remove_stale_files"]

# imported on first use (sheaf._lazy): the events loader asks for the translator alone
_WHERE = {"EventTranslator": "_runevents", "JobStart": "_runevents", "Kind": "_runevents",
          "NodeEvent": "_runevents", "ProcEnd": "_runevents", "RunFiles": "_runfiles",
          "remove_stale_files": "_runfiles"}
__getattr__ = lazy_exports(__name__, _WHERE)
