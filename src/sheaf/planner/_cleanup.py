"""Cleanup jobs: removing what the workflow put in its working directories once nothing needs it.

What may be removed: the files the data pass knows the workflow put in a site's working directory --
staged-in copies (and stageable executables) and files its jobs produce -- and nothing else: never a
file a job did not declare, never an input whose replica already is the scratch file, never an output
to be kept (marked ``stage_out`` with nowhere to stage it to).  An output staged out is removed only
after its stage-out job.

- ``inplace`` (default): a file is removed after its *last user* -- every job that reads it on the
  site, its producers, its stage-out job.  The file goes to the level of its highest-level user;
  per site and level the files are spread over at most ``ceil(n/5)`` cleanup jobs (n: the level's
  jobs on the site), ``pegasus.file.cleanup.clusters.num`` jobs instead, or as many as make
  ``pegasus.file.cleanup.clusters.size`` files each.  A cleanup job runs after every user of every
  file it removes, and is a parent of nothing, so it adds no cycle and no job ever finds an input gone.
- ``leaf``: one cleanup job per site removes all of them, after their users and every job of the site
  without children; it then removes the working directory if it is empty.
- ``none``: nothing is removed.

A cleanup job is a child of those users, less the ones whose edge another user of the same file
implies, as Pegasus removes a cleanup job's redundant dependencies: a file's producer when a
stage-out job, an inter-site job or a reader on its site follows it, and the stage-in or inter-site
job that brought a file in when a reader follows it.  Such a user still counts for the file's level
and last user.

A cleanup job runs ``sheaf-cleanup [--rmdir DIR] -- PATH...`` for up to ``ARGV_PATHS`` files (no file
to write per job: most cleanup jobs remove a handful), else ``sheaf-cleanup [--rmdir DIR] --list FILE``
with the JSON list of paths the plan writes, so no command line grows with the number of files.
"""

from __future__ import annotations

import json
import math
import os

from sheaf.errors import PlanningError
from sheaf.planner._naming import safe
from sheaf.planner._plan import ExecJob, ExecutableWorkflow

#: a cleanup job names at most this many files on its command line, more in a list file
ARGV_PATHS = 20
#: (site, file name) -> (its users (job indices), how many of them, at the end of the list, another user
#: of the file descends from), for every file cleanup may remove
Files = dict[tuple[str, str], tuple[list[int], int]]


def add_cleanup(exec_wf: ExecutableWorkflow, planned: int, files: Files, mode: str) -> None:
    """Append the cleanup jobs of ``mode`` to ``exec_wf`` (module docstring); ``planned``: how many of
    its jobs the planner made (the data jobs follow them)."""
    if mode == "none":
        return
    if mode == "leaf":
        _leaf(exec_wf, files)
    else:
        _inplace(exec_wf, planned, files)


def _inplace(exec_wf: ExecutableWorkflow, planned: int, removable: Files) -> None:
    jobs = exec_wf.jobs
    # (site, level) -> [(name, last user, users, how many of them are the cleanup job's parents)]
    per: dict[tuple[str, int], list[tuple[str, int, list[int], int]]] = {}
    # a user's place as one int, so max() compares without a Python key function: by level, and within
    # a level the data jobs (listed after the planner's) before the planner's jobs, each in plan order --
    # a stage-in job runs before the readers of its level
    data = len(jobs) - planned
    order = [job.level * len(jobs) + (index + data if index < planned else index - planned)
             for index, job in enumerate(jobs)]
    for (site, name), (users, implied) in removable.items():
        last = max(users, key=order.__getitem__)
        per.setdefault((site, jobs[last].level), []).append((name, last, users, len(users) - implied))
    width: dict[tuple[str, int], int] = {}
    for job in jobs[:planned]:
        if job.site is not None:
            width[(job.site, job.level)] = width.get((job.site, job.level), 0) + 1
    number, size = _cluster_settings(exec_wf)
    for (site, level), group in sorted(per.items()):
        lasts = sorted({last for _, last, _, _ in group}, key=order.__getitem__)
        per_width = math.ceil(max(width.get((site, level), 1), 1) / 5)
        k = number or (math.ceil(len(group) / size) if size else per_width)
        k = max(1, min(k, len(lasts)))
        rank = {u: i % k for i, u in enumerate(lasts)}
        buckets: list[list[tuple[str, int, list[int], int]]] = [[] for _ in range(k)]
        for entry in group:
            buckets[rank[entry[1]]].append(entry)
        for n, bucket in enumerate(b for b in buckets if b):
            parents = sorted({u for _, _, users, direct in bucket for u in users[:direct]})
            names = [name for name, _, _, _ in bucket]
            _add(exec_wf, f"cleanup_{safe(site)}_{level}_{n}", site, level + 1, names, parents)


def _leaf(exec_wf: ExecutableWorkflow, removable: Files) -> None:
    has_child = [False] * len(exec_wf.jobs)
    for parent, _ in exec_wf.edges:
        has_child[parent] = True
    for site in sorted({site for site, _ in removable} | set(exec_wf.workdirs)):
        names = sorted(name for s, name in removable if s == site)
        parents = {u for (s, _), (users, implied) in removable.items() if s == site
                   for u in users[:len(users) - implied]}
        parents.update(i for i, job in enumerate(exec_wf.jobs) if job.site == site and not has_child[i])
        level = max((exec_wf.jobs[p].level for p in parents), default=0) + 1
        _add(exec_wf, f"cleanup_leaf_{safe(site)}", site, level, names, sorted(parents),
             rmdir=exec_wf.workdirs.get(site))


def _add(exec_wf: ExecutableWorkflow, job_id: str, site: str, level: int, names: list[str],
         parents: list[int], rmdir: str | None = None) -> None:
    workdir = exec_wf.workdirs[site]
    index = len(exec_wf.jobs)
    prefix = os.path.join(workdir, "")  # os.path.join(workdir, name) for a relative name, one join a job
    paths = [name if name.startswith("/") else prefix + name for name in names]
    argv: tuple[str, ...] = ("--rmdir", rmdir) if rmdir else ()
    if len(paths) > ARGV_PATHS:  # codegen appends the list file's path after --list
        exec_wf.job_inputs[job_id] = json.dumps(paths, ensure_ascii=False) + "\n"
        argv += ("--list",)
    else:
        argv += ("--", *paths)
    exec_wf.jobs.append(ExecJob(id=job_id, type="cleanup", site=site, transformation=None, level=level,
                                executable="sheaf-cleanup", arguments=argv))
    exec_wf.edges.extend((p, index) for p in parents)


def _cluster_settings(exec_wf: ExecutableWorkflow) -> tuple[int | None, int | None]:
    props = exec_wf.properties
    out = []
    for key in ("pegasus.file.cleanup.clusters.num", "pegasus.file.cleanup.clusters.size"):
        value = props.get_int(key)
        if value is not None and value < 1:
            raise PlanningError("a cleanup clustering setting is not a positive integer",
                                value=f"{key} = {value}", rule=f"{key} is 1 or more")
        out.append(value)
    return out[0], out[1]
