"""Data configurations other than ``sharedfs``: where jobs find their files when they do not share
their site's scratch.

``condorio`` (HTCondor file transfer): every compute site's working directory *is* its staging site's
(``staging_site``: ``--staging-site``, default ``local``, the submit host).  Stage-in puts inputs
there, each job lists what HTCondor moves in and out of its sandbox (``ExecutableWorkflow.file_transfers``:
what it reads, what it writes), outputs come back there, stage-out and cleanup work there.

``nonsharedfs`` (PegasusLite): the same staging directory, but each compute job runs under
``sheaf-lite MANIFEST -- ARGV`` (``ExecutableWorkflow.lite``), which makes a fresh job directory under
the site's ``localScratch`` (else the system's temporary directory), pulls the job's inputs from the
staging site into it, runs the job there and pushes its outputs back (the fixed interface between the
planner and the transfer tools).  A job's checkpoint files are listed apart
(``checkpoint_inputs``/``checkpoint_outputs``): as PegasusLite stages them, their transfers never fail
the job -- none exists before the first attempt -- and they are pushed back after a failed attempt
too, so that the retry starts from them.  ``pegasus.transfer.lite.threads`` (default 2) is its
parallelism; integrity checking is ``pegasus.integrity.checking``'s.

Bypass (``pegasus.transfer.bypass.input.staging``, or a use marked ``bypass``): an input whose best
replica is a ``file://`` URL is not staged in; the job's transfer list or manifest names the replica
itself.  Under ``sharedfs`` jobs read their site's scratch by name, so nothing is bypassed there (as in
Pegasus, where bypass is for these two configurations).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from sheaf.errors import PlanningError
from sheaf.model import all_uses, file_url_path
from sheaf.planner._plan import ExecutableWorkflow
from sheaf.planner._replicas import path_url


def staging_site(exec_wf: ExecutableWorkflow, site: str, config: str) -> str:
    """The staging site of ``site``'s jobs under ``config``: ``--staging-site site=ss`` (or a bare ``ss``
    for every site), else ``local`` -- the submit host, as Pegasus's condorio defaults.  As pegasus-plan,
    refuses a staging site the site catalog lacks (``local`` is always there), and under ``condorio``
    any but ``local``: HTCondor moves a job's files to and from the submit host."""
    chosen = exec_wf.data.staging_sites
    staging = chosen.get(site) or chosen.get("*") or "local"
    if staging != "local" and (exec_wf.site_catalog is None or exec_wf.site_catalog.get(staging) is None):
        raise PlanningError(f"the staging site of site {site} is not in the site catalog", value=staging,
                            rule="--staging-site names sites of the site catalog")
    if config == "condorio" and staging != "local":
        raise PlanningError(f"under condorio the staging site of site {site} is the submit host",
                            value=staging, rule="pegasus.data.configuration = condorio stages on local")
    return staging


def condorio_lists(exec_wf: ExecutableWorkflow, staged: set[str]) -> None:
    """What HTCondor moves in and out of each compute job's sandbox (module docstring); a checkpoint
    file is moved in only when it was staged in (``staged``: a replica found), else there is none yet."""
    uses = _checkpoint_uses(exec_wf)
    checkpoints = {lfn for _, lfn in uses}
    unplaced = sorted({(lfn, job) for job, lfn in uses if lfn not in staged and lfn not in exec_wf.bypass})
    if unplaced:  # Pegasus requires the placeholder under condorio
        shown = ", ".join(f"{lfn} of job {job}" for lfn, job in unplaced[:5])
        shown += " ..." if len(unplaced) > 5 else ""
        exec_wf.warnings.append(
            f"under condorio a checkpoint file is moved into its job only when a replica of it exists at "
            f"planning, and {len(unplaced)} have none: {shown}; a retry of such a job starts over (give an "
            "empty placeholder in --input-dir or the replica catalog)")
    for index, all_reads, writes in job_files(exec_wf):
        reads = [lfn for lfn in all_reads if lfn not in checkpoints or lfn in staged or lfn in exec_wf.bypass]
        job = exec_wf.jobs[index]
        workdir = exec_wf.workdirs[job.site or "local"]
        reads_at = tuple(_where(exec_wf, workdir, lfn) for lfn in reads)
        exec_wf.file_transfers[job.id] = (reads_at, tuple(writes))


def _where(exec_wf: ExecutableWorkflow, workdir: str, lfn: str) -> str:
    """Where a job's input is: its replica when bypassed, else in the staging directory."""
    url = exec_wf.bypass.get(lfn)
    return (file_url_path(url) or url) if url is not None else os.path.join(workdir, lfn)


def job_files(exec_wf: ExecutableWorkflow) -> list[tuple[int, list[str], list[str]]]:
    """(job index, lfns it reads, lfns it writes) of every compute and cluster job; a cluster reads
    what its tasks read that no task of it writes.  The executables a task's compound transformation
    requires (``ExecutableWorkflow.required``) are read too: moved into the job's own directory with its
    inputs, where the transformation calls them."""
    get = exec_wf.workflow.jobs.get
    out = []
    for index, job in enumerate(exec_wf.jobs):
        if job.site is None or job.type not in ("compute", "cluster"):
            continue
        reads: dict[str, None] = {}
        writes: dict[str, None] = {}
        for task in job.tasks:
            for _, name in exec_wf.required.get((job.site, task.transformation), ()):
                reads[name] = None
            source = get(task.id)
            for use in all_uses(source) if source is not None else ():
                if use.type != "output" and use.lfn not in writes:
                    reads[use.lfn] = None
                if use.type != "input":
                    writes[use.lfn] = None
        out.append((index, list(reads), list(writes)))
    return out


def lite_manifests(exec_wf: ExecutableWorkflow, submit_dir: str) -> None:
    """The ``sheaf-lite`` manifest of every compute job (module docstring)."""
    props = exec_wf.properties
    threads = props.get_int("pegasus.transfer.lite.threads", 2, minimum=1) or 2
    integrity = (props.get_str("pegasus.integrity.checking") or "full").strip().lower()
    meta = os.path.join(submit_dir, "integrity") if integrity != "none" else None
    for index, reads, writes in job_files(exec_wf):
        job = exec_wf.jobs[index]
        site = job.site or "local"
        staging = exec_wf.workdirs[site]
        stage = staging_site(exec_wf, site, "nonsharedfs")
        def there(lfn: str) -> str:
            return exec_wf.bypass.get(lfn) or path_url(os.path.join(staging, lfn))  # noqa: B023 (in the loop)

        saved = _checkpoints(exec_wf, index)
        manifest: dict[str, object] = {
            "workdir_parent": _local_scratch(exec_wf, site),
            "inputs": _pulls([lfn for lfn in reads if lfn not in saved], stage, site, there),
            "outputs": _pushes([lfn for lfn in writes if lfn not in saved], site, stage, there),
            "threads": threads, "integrity": integrity, "meta_dir": meta, "keep_workdir": False}
        if saved:
            manifest["checkpoint_inputs"] = _pulls(saved, stage, site, there)
            manifest["checkpoint_outputs"] = _pushes(saved, site, stage, there)
        source = exec_wf.workflow.jobs.get(job.tasks[0].id) if len(job.tasks) == 1 else None
        streams = {name: lfn for name, lfn in (("stdin", source.stdin), ("stdout", source.stdout),
                                                ("stderr", source.stderr)) if lfn} if source else {}
        if streams:  # files of the job directory, as PegasusLite redirects them
            manifest["streams"] = streams
        exec_wf.lite[job.id] = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"


def _pulls(lfns: list[str], stage: str, site: str, there: Callable[[str], str]) -> list[dict[str, object]]:
    """Transfers from the staging site into the job directory."""
    return [_entry(n, "input", lfn, stage, there(lfn), site, f"file:{lfn}") for n, lfn in enumerate(lfns, 1)]


def _pushes(lfns: list[str], site: str, stage: str, there: Callable[[str], str]) -> list[dict[str, object]]:
    """Transfers from the job directory back to the staging site."""
    return [_entry(n, "output", lfn, site, f"file:{lfn}", stage, there(lfn)) for n, lfn in enumerate(lfns, 1)]


def _checkpoint_uses(exec_wf: ExecutableWorkflow) -> list[tuple[str, str]]:
    """(job id, lfn) of every checkpoint use of the abstract workflow."""
    return [(job.id, use.lfn) for job in exec_wf.workflow.jobs.values() for use in all_uses(job)
            if use.type == "checkpoint"]


def _checkpoints(exec_wf: ExecutableWorkflow, index: int) -> list[str]:
    """The checkpoint files of a job's tasks (``type: checkpoint``), which sheaf-lite moves apart."""
    get = exec_wf.workflow.jobs.get
    found: dict[str, None] = {}
    for task in exec_wf.jobs[index].tasks:
        source = get(task.id)
        for use in all_uses(source) if source is not None else ():
            if use.type == "checkpoint":
                found[use.lfn] = None
    return list(found)


def _entry(number: int, linkage: str, lfn: str, src_site: str, src: str, dest_site: str,
           dest: str) -> dict[str, object]:
    return {"type": "transfer", "id": number, "linkage": linkage, "lfn": lfn, "executable": False,
            "src_urls": [{"site_label": src_site, "url": src}],
            "dest_urls": [{"site_label": dest_site, "url": dest}]}


def _local_scratch(exec_wf: ExecutableWorkflow, site: str) -> str:
    entry = exec_wf.site_catalog.get(site) if exec_wf.site_catalog is not None else None
    directory = entry.directory("localScratch") if entry is not None else None
    if directory is not None and os.path.isabs(directory.path):
        return os.path.normpath(directory.path)
    return "/tmp"
