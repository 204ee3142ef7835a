"""What a node submits: its submit description expanded with DAGMan's values, or a SUBDAG's run.

DAGMan passes values around every submit description (``dagman_submit.cpp``, ``InitVars``): before
the file (the file's own values win) ``JOB``, ``RETRY``, ``DAG_STATUS``, ``FAILED_COUNT``,
``DAG_PARENT_NAMES`` (only for a node with parents) with the job ad's ``DAGParentNodeNames``, the
run's ``batch_name`` (the job ad's ``JobBatchName``: ``condor_submit_dag -batch-name``, else
``<primary DAG file>+<DAGManJobId>`` of the top-level run; a SUBDAG's run is given its parent's, as
DAGMan's sub-DAG job carries it in its ad; a name of blanks gives node jobs none), and
the node's effective ``priority``; after the file (they win over it) the DAGMan job id, as the macro
``DAGManJobId`` and the job ad's ``DAGManJobId``.  A node's VARS go before or after the file by
their PREPEND/APPEND mode, else by ``DAGMAN_DEFAULT_APPEND_VARS``.
"""

from __future__ import annotations

__all__ = ["NO_SUBDAG_OPTIONS", "SubdagOptions", "render_node", "subdag_job"]

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from sheaf.classad import ClassAd
from sheaf.condor import NodeSpec, Queue
from sheaf.engine._dagid import PARENT_ID_VARIABLE, PARENT_NODE_VARIABLE, dagman_id
from sheaf.engine._events import Submit
from sheaf.engine._submit import JobSpec, SubmitDescription, expand_queue, render
from sheaf.errors import InputError


def _split_vars(spec: NodeSpec, append_default: bool) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """(appended, prepended) VARS of a node: each macro as its VARS line said, else as
    ``DAGMAN_DEFAULT_APPEND_VARS`` says (default: prepended, so the submit file's own value wins)."""
    if not any(spec.var_modes.values()):  # no PREPEND/APPEND on the node's VARS lines: all by the default
        return (spec.vars, {}) if append_default else ({}, spec.vars)
    appended: dict[str, str] = {}
    prepended: dict[str, str] = {}
    for key, value in spec.vars.items():
        mode = spec.var_modes.get(key, "")
        append = mode == "APPEND" or (mode == "" and append_default)
        (appended if append else prepended)[key] = value
    return appended, prepended


def render_node(desc: SubmitDescription, spec: NodeSpec, sub: Submit, append_default: bool,
                parents: list[str], proc: Mapping[str, str] | None = None, batch_name: str = "",
                suppress_notification: bool = False) -> JobSpec:
    """Expand a node's submit description for one submission (one ``proc`` of a ``queue`` with
    several), VARS and DAGMan's values in place; ``suppress_notification``: DAGMan's ``notification =
    NEVER``, set after the file (it wins over the file's own)."""
    appended, prepended = _split_vars(spec, append_default)
    after = _dagman_after()
    if suppress_notification:
        after["notification"] = "NEVER"
    return render(desc, spec.name, sub.attempt, sub.cluster, spec.directory, {**appended, **after},
                  {**_dagman_values(spec, sub, parents, batch_name), **prepended}, proc)


def render_queue(desc: SubmitDescription, spec: NodeSpec, sub: Submit, append_default: bool,
                 parents: list[str], batch_name: str = "") -> Queue:
    """The node's queue statement read with the macros :func:`render_node` expands its job with (one that
    uses macros is read only now: ``sheaf.engine._submit.expand_queue``)."""
    appended, prepended = _split_vars(spec, append_default)
    return expand_queue(desc, spec.name, sub.attempt, sub.cluster, {**appended, **_dagman_after()},
                        {**_dagman_values(spec, sub, parents, batch_name), **prepended})


def _dagman_values(spec: NodeSpec, sub: Submit, parents: list[str], batch_name: str) -> dict[str, str]:
    """What DAGMan passes before every submit file (``dagman_submit.cpp``, ``InitVars``): the file's
    own values win over these.  ``DAG_PARENT_NAMES`` is set only for a node with parents (and cut
    after 2000 characters, as DAGMan cuts it); the job ad's ``DAGParentNodeNames`` is made from it."""
    values = {"JOB": spec.name, "RETRY": str(sub.attempt), "DAG_STATUS": str(sub.dag_status),
              "FAILED_COUNT": str(sub.failed_count), "MY.DAGParentNodeNames": '"$(DAG_PARENT_NAMES)"'}
    if parents:
        values["DAG_PARENT_NAMES"] = _parent_names(parents)
    if batch_name.strip():
        values["batch_name"] = batch_name
    if sub.priority:
        values["priority"] = str(sub.priority)
    return values


def _parent_names(parents: list[str], limit: int = 2000) -> str:
    text = ""
    for name in parents:
        if len(text) + len(name) + 1 > limit:
            break
        text = f"{text},{name}" if text else name
    return text


def _dagman_after() -> dict[str, str]:
    """What DAGMan passes after every submit file (it overrides the file): the DAGMan job id, as a
    macro and as the job ad's ``DAGManJobId``."""
    ident = str(dagman_id())
    return {"DAGManJobId": ident, "MY.DAGManJobId": ident}


@dataclass(frozen=True, slots=True)
class SubdagOptions:
    """What a run passes its SUBDAGs' runs besides the batch name and ``-suppress_notification``:
    ``args``, its inherited options (``_runconfig.subdag_options``); ``force``: ``-force``, passed with
    a node's first submission and not with a retry, which resumes the sub-DAG from its rescue DAG."""

    args: tuple[str, ...] = ()
    force: bool = False


NO_SUBDAG_OPTIONS = SubdagOptions()


def subdag_job(spec: NodeSpec, sub: Submit, batch_name: str = "",
               suppress_notification: bool = False, inherited: SubdagOptions = NO_SUBDAG_OPTIONS) -> JobSpec:
    """SUBDAG EXTERNAL: a nested ``sheaf run`` of the sub-DAG, as a local-universe job; the node's
    effective priority is passed down (``condor_submit_dag -priority``), and the run's batch name,
    which its node jobs get too, ``-suppress_notification`` and ``inherited`` (DAGMan's "deep"
    options).  A sub-DAG file that does not exist at submission is a submit failure, as in DAGMan."""
    if not os.path.isfile(spec.submit):
        raise InputError("cannot submit the SUBDAG: no such DAG file", rule="the sub-DAG file exists",
                         value=spec.submit, path=spec.path, line=spec.line)
    boot = "import sys; from sheaf.cli import main; sys.argv[0] = 'sheaf'; main()"
    argv: tuple[str, ...] = (sys.executable, "-c", boot, "run", spec.directory, "--dag", spec.submit)
    if batch_name:
        argv += ("--batch-name", batch_name)
    if suppress_notification:
        argv += ("--suppress-notification",)
    if sub.priority:
        argv += ("--priority", str(sub.priority))
    argv += inherited.args
    if inherited.force and sub.attempt == 0:
        argv += ("--force",)
    ad = ClassAd({"ClusterId": sub.cluster, "ProcId": 0, "Universe": "local", "JobUniverse": 12,
                  "DAGNodeName": spec.name, "DAGNodeRetry": sub.attempt, "RequestCpus": 0,
                  "Cmd": sys.executable})
    if batch_name.strip():
        ad["JobBatchName"] = batch_name
    # the nested run's parent_dagman_id, and its node's name
    env = {**os.environ, PARENT_ID_VARIABLE: str(dagman_id()), PARENT_NODE_VARIABLE: spec.name}
    return JobSpec(argv, env, spec.directory, spec.submit + ".lib.out", spec.submit + ".lib.err",
                   "local", ad, None)
