"""Cleanup over small random workflows, run for real: after the run scratch holds exactly the files to
keep, and no job ever found an input missing (the tool fails on a missing input, failing the run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from data_inputs import SHEAF, catalogs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from Pegasus.api import File, Job, Workflow

from sheaf.codegen import write_plan
from sheaf.formats import load_inputs
from sheaf.planner import DataOptions, ExecutableWorkflow, plan

#: job i reads a subset of the files made before it (f.a and earlier jobs' outputs), writes 1-2 files;
#: each output is staged out or not
_JOB = st.tuples(st.sets(st.integers(0, 20), max_size=3), st.integers(1, 2),
                 st.lists(st.booleans(), min_size=2, max_size=2))


@st.composite
def workflows(draw: st.DrawFn) -> list[tuple[list[str], list[tuple[str, bool]]]]:
    jobs = []
    made = ["f.a"]
    for i, (picks, outs, keep) in enumerate(draw(st.lists(_JOB, min_size=1, max_size=6))):
        reads = sorted({made[p % len(made)] for p in picks} or {made[-1]})
        writes = [(f"o{i}_{k}", keep[k]) for k in range(outs)]
        jobs.append((reads, writes))
        made += [name for name, _ in writes]
    return jobs


def _write(work: Path, jobs: list[tuple[list[str], list[tuple[str, bool]]]]) -> None:
    wf = Workflow("random")
    for i, (reads, writes) in enumerate(jobs):
        job = Job("tool", _id=f"j{i}").add_args("-i", *reads, "-o", *(name for name, _ in writes))
        job.add_inputs(*(File(name) for name in reads))
        for name, keep in writes:
            job.add_outputs(File(name), stage_out=keep, register_replica=False)
        wf.add_jobs(job)
    wf.write(str(work / "workflow.yml"))


def _plan(work: Path, out: Path | None, mode: str, submit_dir: str | None = None) -> ExecutableWorkflow:
    inputs = load_inputs("workflow.yml", cwd=work)
    data = DataOptions(output_dir=str(out) if out else None, cleanup=mode, cwd=str(work), force=True,
                       submit_dir=submit_dir)
    return plan(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc, properties=inputs.properties,
                sites=["condorpool"], data=data)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=workflows(), output_dir=st.booleans(), mode=st.sampled_from(["inplace", "leaf"]))
def test_scratch_holds_exactly_the_kept_files(tmp_path_factory: object, jobs: list[tuple[list[str],
                                              list[tuple[str, bool]]]], output_dir: bool, mode: str) -> None:
    work: Path = tmp_path_factory.mktemp("w")  # type: ignore[attr-defined]
    catalogs(work)
    _write(work, jobs)
    out = work / "out" if output_dir else None
    target = work / "plan"
    exec_wf = _plan(work, out, mode, str(target))
    write_plan(exec_wf, target)
    done = subprocess.run([SHEAF, "run", str(target)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr  # no job found an input missing
    kept = {name for _, writes in jobs for name, keep in writes if keep}
    scratch = target / "scratch" / "condorpool"
    left = set(os.listdir(scratch)) if scratch.exists() else set()
    assert left == (set() if out else kept)
    if out:
        # nothing staged out (no file kept): no stage-out job ever made the output directory
        assert (set(os.listdir(out)) if out.exists() else set()) == kept


def _ancestors(edges: list[list[str]], node: str) -> set[str]:
    parents: dict[str, list[str]] = {}
    for parent, child in edges:
        parents.setdefault(child, []).append(parent)
    seen: set[str] = set()
    stack = [node]
    while stack:
        for parent in parents.get(stack.pop(), []):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=workflows(), output_dir=st.booleans(), mode=st.sampled_from(["inplace", "leaf"]))
def test_every_user_of_a_removed_file_comes_before_its_cleanup(
        tmp_path_factory: object, jobs: list[tuple[list[str], list[tuple[str, bool]]]], output_dir: bool,
        mode: str) -> None:
    """The structural half of the property (no run, so many more workflows): a cleanup job descends
    from every job that reads, writes, stages in or stages out a file it removes."""
    import json

    work: Path = tmp_path_factory.mktemp("s")  # type: ignore[attr-defined]
    catalogs(work)
    _write(work, jobs)
    exec_wf = _plan(work, work / "out" if output_dir else None, mode, str(work / "plan"))
    users: dict[str, set[str]] = {}
    for i, (reads, writes) in enumerate(jobs):
        for name in [*reads, *(n for n, _ in writes)]:
            users.setdefault(name, set()).add(f"tool_j{i}")
    for job in exec_wf.jobs:
        if job.type in ("stage_in", "stage_out"):
            for entry in json.loads(exec_wf.job_inputs[job.id]):
                users[entry["lfn"]].add(job.id)
    edges = [[exec_wf.jobs[p].id, exec_wf.jobs[c].id] for p, c in exec_wf.edges]
    removed: set[str] = set()
    for job in exec_wf.jobs:
        if job.type == "cleanup":
            before = _ancestors(edges, job.id)
            listed = (json.loads(exec_wf.job_inputs[job.id]) if job.id in exec_wf.job_inputs
                      else job.arguments[job.arguments.index("--") + 1:])
            for path in listed:
                name = os.path.basename(path)
                removed.add(name)
                assert users[name] <= before, (job.id, name, users[name] - before)
    kept = {name for _, writes in jobs for name, keep in writes if keep}
    assert removed == set(users) - (set() if output_dir else kept)
