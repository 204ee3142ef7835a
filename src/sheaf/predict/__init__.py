"""sheaf.predict: how long an executable workflow will take, and how to cluster it to take less.

A discrete-event simulation (``simulate``) replays the engine's scheduling policy over a platform's
slots under an overhead model (``OverheadModel``: per backend or site, each delay a distribution);
``best_count`` picks how many jobs a group of independent tasks should run as, the choice the
planner's ``--cluster auto`` makes.  The package imports only ``sheaf.model``: the planner uses it
to cluster automatically, the application layer to predict a submit directory and to calibrate the
model from earlier runs.

    from sheaf.predict import OverheadModel, Platform, SimJob, SimWorkflow, simulate
    wf = SimWorkflow([SimJob("a", runtimes=(10.0,)), SimJob("b", level=1, runtimes=(5.0,))], [(0, 1)])
    simulate(wf, Platform({None: 2}, backend="slurm"), OverheadModel()).makespan_s
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports
from sheaf.predict._autocluster import AutoModel, best_count, group_makespan
from sheaf.predict._fit import Timing, fit_overheads, peak_concurrency
from sheaf.predict._overheads import (
    BACKENDS,
    COMPONENTS,
    DEFAULTS,
    Dist,
    OverheadModel,
    OverheadModelError,
    Overheads,
    flat_overheads,
)

if TYPE_CHECKING:
    from sheaf.predict._simulate import LevelFigures, Platform, Prediction, SimJob, SimWorkflow, simulate

# the simulator's names are imported on first use (sheaf._lazy): it needs numpy, which the planner's
# automatic clustering (best_count) does not, and every sheaf plan would otherwise start it
__getattr__ = lazy_exports(__name__, dict.fromkeys(
    ("LevelFigures", "Platform", "Prediction", "SimJob", "SimWorkflow", "simulate"), "_simulate"))

__all__ = [
    "BACKENDS", "COMPONENTS", "DEFAULTS", "AutoModel", "Dist", "LevelFigures", "OverheadModel",
    "OverheadModelError", "Overheads", "Platform", "Prediction", "SimJob", "SimWorkflow", "Timing",
    "best_count", "fit_overheads", "flat_overheads", "group_makespan", "peak_concurrency", "simulate",
]
