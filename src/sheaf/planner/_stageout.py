"""Stage-out, registration and inter-site jobs, and the users of every file a job produces (cleanup).

Where outputs go (``output_target``): ``--output-dir D`` (``D/<lfn>``, site label ``local``), else the
first ``--output-sites`` site's ``sharedStorage`` (else ``localStorage``) directory from the site
catalog; ``local`` without a storage directory there has ``wf-output`` beside the submit directory, as
its default scratch has ``wf-scratch``.  A named output site with no local storage directory is a
``PlanningError``.  No ``--output-dir`` and no ``--output-sites``: nothing is staged out.

Registration: ``pegasus.register = false`` makes no register jobs, whatever the outputs' flags (as in
Pegasus).  Its target (``register_target``): ``pegasus.catalog.replica.output.file``, else the replica
catalog file the plan read (``DataOptions.rc_file``), else ``replicas.yml`` in the planning directory
(Pegasus 5's default catalog name, so the next plan from there finds it); its format is YAML when
``pegasus.catalog.replica.output`` says ``YAML`` or the name ends in ``.yml``/``.yaml``, else Pegasus's
text ("File") format.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sheaf.errors import PlanningError
from sheaf.model._workflow import all_uses
from sheaf.planner._naming import safe
from sheaf.planner._plan import ExecJob, ExecutableWorkflow
from sheaf.planner._replicas import Source, url_in

if TYPE_CHECKING:
    from sheaf.planner._data import _Pass

_PRODUCERS = ("compute", "cluster")


@dataclass(slots=True)
class _File:
    site: str
    lfn: str
    producers: list[int] = field(default_factory=list)
    readers: list[int] = field(default_factory=list)
    stage_out: bool = False
    register: bool = False


@dataclass(slots=True)
class StageOut:
    exec_wf: ExecutableWorkflow
    target: tuple[str, str] | None            # (output site label, directory)
    files: dict[tuple[str, str], _File]
    #: (from site, to site, lfn) -> the jobs on "to" reading a file made on "from"
    inter: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    buckets: list[tuple[str, int, list[_File]]] = field(default_factory=list)

    def add_inter_jobs(self, state: _Pass) -> list[tuple[int, str, str, list[str], list[int]]]:
        """The inter-site transfers: per (from, to) pair and level of the makers, at most ceil(n/10) jobs
        (n: the files); (job index, from, to, lfns, readers) each."""
        from sheaf.planner._data import transfer_entry, transfer_options, transfer_text

        exec_wf, jobs = self.exec_wf, self.exec_wf.jobs
        per: dict[tuple[str, str, int], list[str]] = {}
        for (src, dst, lfn), _readers in sorted(self.inter.items()):
            level = jobs[self.files[(src, lfn)].producers[-1]].level
            per.setdefault((src, dst, level), []).append(lfn)
        made = []
        for (src, dst, level), lfns in per.items():
            k = math.ceil(len(lfns) / 10)
            for n in range(k):
                group = lfns[n::k]
                entries = [transfer_entry(i, "inter", lfn, [Source(url_in(exec_wf.workdirs[src], lfn), src)],
                                          dst, url_in(exec_wf.workdirs[dst], lfn))
                           for i, lfn in enumerate(group, 1)]
                job = ExecJob(id=f"stage_inter_{safe(src)}_{safe(dst)}_{level}_{n}", type="inter_site",
                              site=dst, transformation=None, level=level, executable="sheaf-transfer",
                              arguments=transfer_options(exec_wf, exec_wf.workdirs[dst], state.submit_dir))
                index = state.add(job, transfer_text(entries))
                readers = sorted({r for lfn in group for r in self.inter[(src, dst, lfn)]})
                made.append((index, src, dst, group, readers))
        return made

    def link_inter(self, edges: list[tuple[int, int]],
                   outputs: dict[tuple[str, str], tuple[list[int], bool, bool]],
                   made: list[tuple[int, str, str, list[str], list[int]]], shift: int) -> None:
        """Edges maker -> inter_site -> readers; the copy's users (its readers and the transfer) for
        cleanup, and the transfer as one more user of the original."""
        for index, src, dst, lfns, readers in made:
            makers = sorted({p for lfn in lfns for p in self.files[(src, lfn)].producers})
            edges.extend((p + shift, index) for p in makers)
            edges.extend((index, r + shift) for r in readers)
            for lfn in lfns:
                users, kept, staged = outputs[(src, lfn)]
                outputs[(src, lfn)] = ([*users, index], kept, staged)
                copy_users = [index, *(r + shift for r in self.inter[(src, dst, lfn)])]
                outputs[(dst, lfn)] = (copy_users, False, False)

    def add_jobs(self, state: _Pass) -> list[tuple[int, list[_File], int | None]]:
        """One stage_out job per bucket and one register job per site and level, a child of the level's
        stage-out jobs that deliver registered files: (stage index, files, None) for each stage-out
        job, then (stage index, [], register index) for each such edge."""
        from sheaf.planner._data import json_str, transfer_entry, transfer_options, transfer_text

        if self.target is None:
            return []
        label, directory = self.target
        exec_wf = self.exec_wf
        made: list[tuple[int, list[_File], int | None]] = []
        counters: dict[tuple[str, int], int] = {}
        register = register_target(exec_wf)
        registering = exec_wf.properties.get_bool("pegasus.register", True)
        to_register: dict[tuple[str, int], tuple[list[int], list[tuple[_File, str]]]] = {}
        for site, level, files in self.buckets:
            n = counters[(site, level)] = counters.get((site, level), -1) + 1
            workdir = exec_wf.workdirs[site]
            delivered = [url_in(directory, f.lfn) for f in files]
            entries = [transfer_entry(i, "output", f.lfn, [Source(url_in(workdir, f.lfn), site)], label, url)
                       for i, (f, url) in enumerate(zip(files, delivered, strict=True), 1)]
            job = ExecJob(id=f"stage_out_local_{safe(site)}_{level}_{n}", type="stage_out", site=site,
                          transformation=None, level=level, executable="sheaf-transfer",
                          arguments=transfer_options(exec_wf, directory, state.submit_dir))
            index = state.add(job, transfer_text(entries))
            wanted = [(f, url) for f, url in zip(files, delivered, strict=True) if f.register and registering]
            if wanted:
                stages, registered = to_register.setdefault((site, level), ([], []))
                stages.append(index)
                registered += wanted
            made.append((index, files, None))
        for (site, level), (stages, registered) in to_register.items():
            records = [f'{{"lfn": {json_str(f.lfn)}, "pfn": {json_str(url)}, "site": {json_str(label)}}}'
                       for f, url in registered]
            reg_job = ExecJob(id=f"register_{safe(site)}_{level}", type="register", site="local",
                              transformation=None, level=level + 1, executable="sheaf-register",
                              arguments=("--format", register[1], register[0]))
            reg = state.add(reg_job, "[\n" + ",\n".join(records) + "\n]\n")
            made.extend((stage, [], reg) for stage in stages)
        return made

    def link(self, edges: list[tuple[int, int]], outputs: dict[tuple[str, str], tuple[list[int], bool, bool]],
             made: list[tuple[int, list[_File], int | None]], shift: int) -> None:
        """Edges producer -> stage_out -> register; every produced file's users for cleanup."""
        staged_by: dict[tuple[str, str], int] = {}
        for index, files, reg in made:
            producers = sorted({p for f in files for p in f.producers})
            edges.extend((p + shift, index) for p in producers)
            if reg is not None:
                edges.append((index, reg))
            for f in files:
                staged_by[(f.site, f.lfn)] = index
        for key, f in self.files.items():
            users = [p + shift for p in f.producers] + [r + shift for r in f.readers]
            out = staged_by.get(key)
            if out is not None:
                users.append(out)
            kept = f.stage_out and out is None
            outputs[key] = (users, kept, False)


def plan_stage_out(exec_wf: ExecutableWorkflow, submit_dir: str) -> StageOut:
    files, reads = _produced(exec_wf)
    inter = _cross_site(exec_wf, files, reads)
    plan = StageOut(exec_wf, output_target(exec_wf, submit_dir), files, inter)
    if plan.target is None:
        return plan
    from sheaf.planner._data import cluster_limit

    per: dict[tuple[str, int], list[_File]] = {}
    jobs = exec_wf.jobs
    for f in files.values():
        if f.stage_out and f.producers:
            per.setdefault((f.site, jobs[f.producers[-1]].level), []).append(f)
    for (site, level), group in sorted(per.items()):
        producers = sorted({f.producers[-1] for f in group})
        k = min(len(producers), cluster_limit(exec_wf, site, "stageout") or math.ceil(len(producers) / 10))
        rank = {p: i % k for i, p in enumerate(producers)}
        buckets: list[list[_File]] = [[] for _ in range(k)]
        for f in group:
            buckets[rank[f.producers[-1]]].append(f)
        plan.buckets.extend((site, level, b) for b in buckets if b)
    return plan


def _produced(exec_wf: ExecutableWorkflow
              ) -> tuple[dict[tuple[str, str], _File], list[tuple[int, str, str]]]:
    """(site, lfn) -> producers and same-site readers of every file a job produces; and every read
    (job index, its site, lfn)."""
    get = exec_wf.workflow.jobs.get
    files: dict[tuple[str, str], _File] = {}
    reads: list[tuple[int, str, str]] = []
    for index, job in enumerate(exec_wf.jobs):
        site = job.site
        if site is None or job.type not in _PRODUCERS:
            continue
        for task in job.tasks:
            source = get(task.id)
            if source is None:
                continue
            for use in all_uses(source):
                if use.type != "input":
                    f = files.get((site, use.lfn))
                    if f is None:
                        f = files[(site, use.lfn)] = _File(site, use.lfn)
                    if not f.producers or f.producers[-1] != index:
                        f.producers.append(index)
                    f.stage_out = f.stage_out or use.stage_out
                    f.register = f.register or use.register_replica
                if use.type != "output":
                    reads.append((index, site, use.lfn))
    for index, site, lfn in reads:
        f = files.get((site, lfn))
        if f is not None and index not in f.producers and (not f.readers or f.readers[-1] != index):
            f.readers.append(index)
    return files, reads


def _cross_site(exec_wf: ExecutableWorkflow, files: dict[tuple[str, str], _File],
                reads: list[tuple[int, str, str]]) -> dict[tuple[str, str, str], list[int]]:
    """Reads of a file made on another site: (from site, to site, lfn) -> the reading jobs, for the
    inter-site transfers; a reader whose site shares the maker's working directory (condorio's and
    nonsharedfs's staging directory) just reads it there."""
    made_on: dict[str, str] = {}
    for site, lfn in files:
        made_on.setdefault(lfn, site)
    needs: dict[tuple[str, str, str], list[int]] = {}
    for index, site, lfn in reads:
        where = made_on.get(lfn)
        if where is None or where == site or (site, lfn) in files:
            continue
        if exec_wf.workdirs[where] == exec_wf.workdirs[site]:
            f = files[(where, lfn)]
            if not f.readers or f.readers[-1] != index:
                f.readers.append(index)
            continue
        readers = needs.setdefault((where, site, lfn), [])
        if not readers or readers[-1] != index:
            readers.append(index)
    return needs


def output_target(exec_wf: ExecutableWorkflow, submit_dir: str) -> tuple[str, str] | None:
    if exec_wf.data.output_dir:
        return exec_wf.output_sites[0] if exec_wf.output_sites else "local", exec_wf.data.output_dir
    if not exec_wf.output_sites:
        return None
    site = exec_wf.output_sites[0]
    entry = exec_wf.site_catalog.get(site) if exec_wf.site_catalog is not None else None
    for kind in ("sharedStorage", "localStorage"):
        directory = entry.directory(kind) if entry is not None else None
        if directory is not None and os.path.isabs(directory.path):
            return site, os.path.normpath(directory.path)
    if site == "local":  # Pegasus's default local storage, beside the default scratch
        return site, os.path.join(os.path.dirname(submit_dir), "wf-output")
    raise PlanningError("the output site has no local storage directory", value=site,
                        rule="an output site's sharedStorage or localStorage is a local path "
                             "(or give --output-dir)")


def register_target(exec_wf: ExecutableWorkflow) -> tuple[str, str]:
    """(file, format) the register jobs write (module docstring)."""
    props = exec_wf.properties
    path = (props.get_str("pegasus.catalog.replica.output.file") or exec_wf.data.rc_file
            or os.path.join(exec_wf.data.cwd or os.getcwd(), "replicas.yml"))
    path = os.path.abspath(os.path.join(exec_wf.data.cwd or os.getcwd(), path))
    kind = (props.get_str("pegasus.catalog.replica.output") or "").strip().lower()
    if kind not in ("yaml", "file"):
        kind = "yaml" if path.endswith((".yml", ".yaml")) else "file"
    return path, kind
