"""sheaf.app: the operations a user or a tool calls -- what ``sheaf``'s commands and Python callers share.

The application layer sits on the planning and running stages and under the command line::

    plan a workflow into a submit directory   run or resume it    stop it    read its status and statistics

Each operation takes a frozen options record (:class:`PlanRequest`, :class:`RunOptions`) and returns a
typed result (:class:`PlanResult`, ``RunResult``, ``WorkflowStatus``, ``Statistics``); everything a
submit directory holds (the plan, ``braindump.yml``, ``<dag>.dagman.out``, the events database, the
container state) is made here, so ``sheaf run DIR`` and ``sheaf.app.run(DIR)`` leave the same
directory.  The command line (``sheaf.cli``) only parses its options into these records, calls one
function, and renders the result.  A record checks its fields' types as it is made, and each
operation its directory argument: a value of the wrong type (a ``str`` where a tuple of ``str`` is
expected among them) is one ``UsageError`` naming the field, the type expected and the value.

Example::

    from sheaf import app

    planned = app.plan(app.PlanRequest("workflow.yml", base="runs", clustering=("horizontal",)))
    result = app.run(planned.directory, app.RunOptions(dagman=app.DagmanOptions(maxjobs=4)))
    print(result.succeeded, app.statistics(planned.directory).summary)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.app._braindump import json_text as braindump_json
    from sheaf.app._dagman_out import pegasus_status
    from sheaf.app._detach import LOG as RUN_LOG
    from sheaf.app._detach import running, stop
    from sheaf.app._detach import start as submit
    from sheaf.app._graphviz import draw_workflow
    from sheaf.app._pegasus_config import config_variables as pegasus_variables
    from sheaf.app._plan import PlanResult, plan
    from sheaf.app._plan_request import PlanRequest
    from sheaf.app._predict import PredictOptions, PredictResult, calibrate, overheads_path, predict
    from sheaf.app._run import RunOptions, condor_submit_dag_options, hand_to_dagman, run
    from sheaf.engine import DagmanOptions, RunResult
    from sheaf.monitor import Statistics, WorkflowStatus
    from sheaf.monitor import workflow_statistics as statistics
    from sheaf.monitor import workflow_status as status

__all__ = [
    "RUN_LOG", "DagmanOptions", "PlanRequest", "PlanResult", "PredictOptions", "PredictResult", "RunOptions",
    "RunResult", "Statistics", "WorkflowStatus", "braindump_json", "calibrate", "condor_submit_dag_options",
    "draw_workflow", "hand_to_dagman", "overheads_path", "pegasus_status", "pegasus_variables", "plan",
    "predict", "run", "running", "statistics", "status", "stop", "submit",
]

__getattr__ = lazy_exports(__name__, {
    "RunOptions": "_run", "run": "_run", "hand_to_dagman": "_run", "condor_submit_dag_options": "_run",
    "submit": "_detach:start", "stop": "_detach", "running": "_detach", "RUN_LOG": "_detach:LOG",
    "pegasus_status": "_dagman_out", "pegasus_variables": "_pegasus_config:config_variables",
    "braindump_json": "_braindump:json_text", "plan": "_plan", "draw_workflow": "_graphviz",
    "PlanResult": "_plan", "PlanRequest": "_plan_request", "PredictOptions": "_predict",
    "PredictResult": "_predict", "calibrate": "_predict", "overheads_path": "_predict", "predict": "_predict",
    "DagmanOptions": "_reexport", "RunResult": "_reexport", "Statistics": "_reexport",
    "WorkflowStatus": "_reexport", "statistics": "_reexport", "status": "_reexport",
})
