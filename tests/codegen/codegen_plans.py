"""Executable workflows built by hand (the planner's output shape), for codegen's tests.

A plain module (not conftest.py): test modules import it by name."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

from sheaf.codegen import PlanFiles, write_plan
from sheaf.model import Job, Properties, Use, Workflow
from sheaf.planner import DataOptions, ExecJob, ExecutableWorkflow, Task, plan_data

KEG = "/opt/keg/bin/keg"


def blackdiamond_workflow(width: int = 4) -> Workflow:
    wf = Workflow("blackdiamond")
    wf.jobs["ID0000001"] = Job("ID0000001", "preprocess", "diamond", "4.0",
                               arguments=("-a", "preprocess", "-T", "0", "-i", "f.a", "-o",
                                          *[f"f.b{i}" for i in range(width)]),
                               # optional: f.a has no replica, and these plans test what codegen
                               # writes, not its stage-in (an input without a replica fails planning)
                               uses=(Use("f.a", "input", optional=True),
                                     *[Use(f"f.b{i}", "output") for i in range(width)]))
    for i in range(width):
        jid = f"ID{i + 2:07d}"
        wf.jobs[jid] = Job(jid, "findrange", "diamond", "4.0",
                           arguments=("-a", "findrange", "-T", "0", "-i", f"f.b{i}", "-o", f"f.c{i}"),
                           uses=(Use(f"f.b{i}", "input"), Use(f"f.c{i}", "output")))
    last = f"ID{width + 2:07d}"
    wf.jobs[last] = Job(last, "analyze", "diamond", "4.0",
                        arguments=("-a", "analyze", "-T", "0", "-i", *[f"f.c{i}" for i in range(width)],
                                   "-o", "f.d"),
                        uses=(*[Use(f"f.c{i}", "input") for i in range(width)], Use("f.d", "output")))
    return wf


def _task(job: Job, level: int, profiles: dict[str, dict[str, str]] | None = None) -> Task:
    return Task(job.id, job.transformation, KEG, tuple(str(a) for a in job.arguments),
                profiles or {"pegasus": {}, "condor": {}, "dagman": {"retry": "2"}, "env": {}}, level)


def blackdiamond_plan(width: int = 4, *, cluster: str | None = "seqexec",
                      properties: dict[str, str] | None = None, cleanup: str = "none") -> ExecutableWorkflow:
    """preprocess -> findrange x width (one cluster of all when ``cluster``) -> analyze, on condorpool;
    ``cleanup``: the data pass's strategy (none here: these plans test what codegen writes)."""
    wf = blackdiamond_workflow(width)
    props = Properties({"dagman.retry": "2", **(properties or {})})
    ids = list(wf.jobs)
    pre = _task(wf.jobs[ids[0]], 1, {"pegasus": {"memory": "512"}, "condor": {},
                                       "dagman": {"retry": "2"}, "env": {"KEG_MODE": "fast run"}})
    finds = [_task(wf.jobs[i], 2) for i in ids[1:-1]]
    post = _task(wf.jobs[ids[-1]], 3, {"pegasus": {"exitcode.successmsg": "all done"}, "condor": {
        "request_memory": "ifthenelse(isundefined(DAGNodeRetry) || DAGNodeRetry == 0, 1024, 4096)"},
        "dagman": {"retry": "2", "category": "analysis"}, "env": {}})
    jobs = [ExecJob("preprocess_ID0000001", "compute", "condorpool", "diamond::preprocess:4.0", 1, (pre,),
                    profiles=pre.profiles)]
    if cluster:
        jobs.append(ExecJob("merge_diamond-findrange-4_0_PID2_ID1", "cluster", "condorpool",
                            "diamond::findrange:4.0", 2, tuple(finds), aggregator=cluster,  # type: ignore[arg-type]
                            profiles={"pegasus": {"runtime": "0"}, "condor": {}, "dagman": {"retry": "2"},
                                      "env": {}},
                            arguments=("-f",) if cluster == "seqexec" else ()))
        middle = [1]
    else:
        jobs += [ExecJob(f"findrange_{t.id}", "compute", "condorpool", "diamond::findrange:4.0", 2, (t,),
                         profiles=t.profiles) for t in finds]
        middle = list(range(1, width + 1))
    jobs.append(ExecJob(f"analyze_{ids[-1]}", "compute", "condorpool", "diamond::analyze:4.0", 3, (post,),
                        profiles=post.profiles))
    last = len(jobs) - 1
    edges = [(0, m) for m in middle] + [(m, last) for m in middle]
    return ExecutableWorkflow("blackdiamond", wf, props, jobs, edges, sites=("condorpool",),
                              clustering=("horizontal",) if cluster else (),
                              data=DataOptions(cleanup=cleanup))


def write_planned(exec_wf: ExecutableWorkflow, directory: str | os.PathLike[str], *,
                  exec_dir: str | None = None, **options: object) -> PlanFiles:
    """``exec_wf`` written into ``directory`` as ``sheaf plan`` makes it: the planner's data pass run for
    that directory first (``plan_data``; ``exec_dir``: the relative execution directory), then
    ``write_plan`` (``options``: its keyword arguments)."""
    plan_data(exec_wf, os.fspath(directory), exec_dir)
    return write_plan(exec_wf, directory, **options)  # type: ignore[arg-type]


PER_JOB = {"sheaf.submit.shared": "false"}  # one submit description per job (tests of its content)


def node_description(dag: object, name: str) -> object:
    """The submit description of node ``name`` of ``dag`` (``sheaf.engine.parse_dag``'s) -- its file, or
    the DAG's SUBMIT-DESCRIPTION it names -- as the official bindings read it, with the node's VARS
    set as DAGMan passes them (``$(JOB)`` too): what ``condor_submit_dag`` submits for it.  ``+Attr``
    VARS are left out (they go to the job ad)."""
    import htcondor2  # after CONDOR_CONFIG above

    node = dag.nodes[name]  # type: ignore[attr-defined]
    if node.description is not None:
        text = "\n".join(line for _, line in dag.descriptions[node.description].lines)  # type: ignore[attr-defined]
    else:
        text = Path(node.submit).read_text(encoding="utf-8")
    sub = htcondor2.Submit(text)
    sub["JOB"] = node.name
    for key, value in node.vars.items():
        if not key.startswith("+"):
            sub[key] = value
    return sub
