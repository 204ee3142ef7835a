"""The DAG lines and side files of one sub-workflow job (policy in ``_subworkflow``).

``SubworkflowWriter.lines`` is called once per sub-workflow job by ``_write``; it writes the job's
side files through the writer's ``put`` (the plan's ``subworkflows.properties`` and
``subworkflows.rc.yml`` once, ``<id>.inputs.cache``, ``<id>.output.map``,
a throttled condorWorkflow's wrapper DAG and its CONFIG) and returns the node's DAG lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

from sheaf.codegen._dag import THROTTLES, NodeSettings, node_lines
from sheaf.codegen._layout import JobPaths, Layout, dag_basename, safe_name, tool_path
from sheaf.codegen._subworkflow import (
    SUBDAG_PREFIX,
    PlanContext,
    globus_warning,
    one_word,
    option_given,
    output_lfns,
    produced_files,
    properties_text,
    resolve_arguments,
    subworkflow_file,
    throttles,
)
from sheaf.formats import dumps, rc_to_data
from sheaf.model import profile_int
from sheaf.planner import ExecJob, ExecutableWorkflow


def _tool(name: str) -> str:
    return tool_path(name)


def quote_rc(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_CACHE_HEADER = "# where this workflow's jobs write their outputs (sheaf plan's cache file)\n"


def cache_text(locations: Mapping[str, str]) -> str:
    """A text replica catalog of where this plan's jobs write their outputs (Pegasus's cache file)."""
    return _CACHE_HEADER + "".join(_cache_line(lfn, path) for lfn, path in sorted(locations.items()))


def cache_lines(directories: Mapping[str, str]) -> Iterator[str]:
    """:func:`cache_text` of ``lfn -> directory`` (``produced_dirs``), a line at a time."""
    yield _CACHE_HEADER
    heads: dict[str, str] = {}  # directory -> its URL's quoted start: one quoting per directory
    for lfn in sorted(directories):
        directory = directories[lfn]
        if '"' in lfn or "\\" in lfn or lfn.startswith("/"):
            yield _cache_line(lfn, os.path.join(directory, lfn))
            continue
        head = heads.get(directory)
        if head is None:
            head = heads[directory] = quote_rc("file://" + os.path.join(directory, ""))[:-1]
        yield f'"{lfn}" {head}{lfn}" site="local"\n'


def output_map_text(wanted: Mapping[str, Sequence[str]]) -> str:
    """A text replica catalog of where a child puts its outputs for its parent (``--output-map``): a
    line for each place of each file."""
    return ("# where the parent wants this workflow's outputs (its --output-map)\n"
            + "".join(_cache_line(lfn, path) for lfn in sorted(wanted) for path in wanted[lfn]))


def _cache_line(lfn: str, path: str) -> str:
    return f'{quote_rc(lfn)} {quote_rc("file://" + path)} site="local"\n'


class SubworkflowWriter:
    """Writes sub-workflow nodes of one plan; computed once per plan: where the parent's jobs write
    their outputs, and which sub-workflow jobs each job depends on."""

    def __init__(self, exec_wf: ExecutableWorkflow, layout: Layout, context: PlanContext,
                 put: Callable[[str, str], None], mkdir: Callable[[str], None],
                 workdir: Callable[[ExecJob], str], warnings: list[str],
                 paths_of: Callable[[str], JobPaths]) -> None:
        self.exec_wf, self.layout, self.context, self.paths_of = exec_wf, layout, context, paths_of
        self.put, self.mkdir, self.warnings = put, mkdir, warnings
        self.produced = produced_files(exec_wf, workdir)
        caveat = globus_warning(exec_wf)
        if caveat:
            warnings.append(caveat)
        self.by_task = {job.tasks[0].id: job for job in exec_wf.jobs if job.type == "subworkflow"
                        and _kind(exec_wf, job) == "pegasusWorkflow"}  # those that write a cache file
        self.upstream: dict[str, list[ExecJob]] = {}  # abstract job id -> its sub-workflow parents
        for parent, children in exec_wf.workflow.dependencies.items():
            if parent in self.by_task:
                for child in children:
                    self.upstream.setdefault(child, []).append(self.by_task[parent])
        self.shared: dict[str, str] = {}  # files every child reads, written once: name -> absolute path

    def lines(self, job: ExecJob, paths: JobPaths, settings: NodeSettings, out_file: str) -> list[str]:
        kind, path = subworkflow_file(job, self.exec_wf, self.produced)
        own = job.tasks[0].profiles or {}
        if kind == "condorWorkflow":
            return self._condor(job, path, paths, settings, out_file, own)
        return self._pegasus(job, path, paths, settings, out_file, own)

    def _condor(self, job: ExecJob, path: str, paths: JobPaths, settings: NodeSettings, out_file: str,
                own: Mapping[str, Mapping[str, str]]) -> list[str]:
        one_word(path, "a sub-DAG's path")
        dagman = {key.lower(): value for key, value in (own.get("dagman") or {}).items()}
        directory = dagman.get("dir")
        limits = throttles(own)
        dag = path
        if limits and _has_final(path):
            self.warnings.append(f"sub-workflow job '{job.id}': {path} has a FINAL node, so it cannot be "
                                 "spliced into a throttled wrapper; its dagman throttles are not applied "
                                 "(put them in the DAG's own CONFIG file)")
        elif limits:  # a wrapper whose CONFIG throttles the user's DAG, spliced in from its directory
            dag = paths.abs(".subdag.dag")
            self.put(paths.rel(".subdag.config"), _config(limits, job.id))
            where = one_word(directory or os.path.dirname(path), "a DIR profile")
            self.put(paths.rel(".subdag.dag"), f"# sub-workflow {job.id}: {path}, throttled\n"
                     f"CONFIG {paths.abs('.subdag.config')}\nSPLICE {safe_name(job.id)} {path} DIR {where}\n")
        lines = node_lines(job.id, dag, settings, out_file, subdag=True)
        # DAGMan runs a sub-DAG in its DIR, else in the parent's directory: the DAG file's own directory
        # unless the profile names one, so that its relative paths mean what they did
        lines[0] += f" DIR {one_word(directory or os.path.dirname(path), 'a DIR profile')}"
        if directory and not os.path.isdir(directory):
            self.warnings.append(f"sub-workflow job '{job.id}': its DIR {directory} does not exist; "
                                 "create it before the job runs, or the job fails")
        return lines

    def _pegasus(self, job: ExecJob, path: str, paths: JobPaths, settings: NodeSettings, out_file: str,
                 own: Mapping[str, Mapping[str, str]]) -> list[str]:
        if settings.pre:
            self.warnings.append(f"sub-workflow job '{job.id}': its PRE script is the child's planner; "
                                 f"the dagman pre profile ({settings.pre}) is ignored")
        argv = list(job.tasks[0].argv)
        basename = option_given(argv, "--basename") or job.tasks[0].id
        child_dir = paths.abs(".plan")
        command = [_tool("sheaf"), "plan", path, *self._inherited(job, paths),
                   *resolve_arguments(argv, self._planned_in(), self._warn(job))]
        limits = throttles(own)
        _config(limits, job.id)  # a bad value is this plan's error, not the child planner's
        command += [f"-D{SUBDAG_PREFIX}{key}={value}" for key, value in limits.items()]
        if option_given(argv, "--basename") is None:
            command += ["--basename", basename]
        # under pegasus.file.cleanup.scope fullahead (the only scope sheaf plans), Pegasus plans every
        # sub-workflow with --cleanup none, whatever its arguments say: its files may be its parent's
        command += ["--cleanup", "none", "--dir", child_dir, "--relative-submit-dir", ".", "--deferred"]
        dag = os.path.join(child_dir, f"{dag_basename(basename)}.dag")
        lines = node_lines(job.id, dag, replace(settings, pre=None), out_file, subdag=True)
        # the child's DAG runs in its plan directory, its paths its own; made now, empty, as DAGMan runs
        # the node's PRE script (the child's planner) there too
        lines[0] += f" DIR {one_word(child_dir, 'the plan directory')}"
        self.mkdir(paths.rel(".plan"))
        log = os.path.join(self.layout.final_dir, f"{job.id}.pre.log")
        script = " ".join(one_word(word, f"sub-workflow job '{job.id}': argument") for word in command)
        lines.append(f"SCRIPT DEBUG {one_word(log, 'the plan directory')} ALL PRE {job.id} {script}")
        return lines

    def _inherited(self, job: ExecJob, paths: JobPaths) -> list[str]:
        """The options the child inherits, before its own arguments (which win).  A parent planned with
        ``--cluster auto`` passes it on, with its backend, slots and overhead model, to a child whose
        arguments choose no clustering of their own."""
        wf = self.exec_wf
        out = []
        # a job whose arguments give its own --conf inherits neither the parent's properties nor the
        # catalogs they found (Pegasus's SUBDAXGenerator): its own file and directory say where they
        # are, the parent's only where they name none
        own_conf = option_given(job.tasks[0].argv, "--conf") is not None
        if not own_conf:
            out += ["--conf", self._once("subworkflows.properties", lambda: properties_text(wf.properties))]
        for key, kind in (("tc", "transformation"), ("sc", "site"), ("rc", "replica")):
            if self.context.catalog_files.get(key):
                path = self.context.catalog_files[key]
                out += [f"-Dsheaf.inherited.catalog.{kind}.file={path}"] if own_conf else [f"--{key}", path]
        # relative paths in the child's properties name files beside this plan (``_catalog_files``)
        out.append(f"-Dsheaf.inherited.planning.dir={self._planned_in()}")
        if self.context.sites:  # the parent's --sites, as the chapter's table says
            out += ["--sites", ",".join(self.context.sites)]
        if self.layout.exec_dir:  # the child's jobs share the parent's working directory
            out += ["--relative-dir", self.layout.exec_dir]
        inline = wf.workflow.replica_catalog
        if inline is not None and len(inline):
            rc_file = self._once("subworkflows.rc.yml", lambda: dumps(rc_to_data(inline)))
            out += ["--inherited-rc-files", rc_file]
        if wf.replica_output is not None:  # one output replica catalog for the whole hierarchy, as Pegasus's
            catalog, kind = wf.replica_output
            out += [f"-Dpegasus.catalog.replica.output.file={catalog}",
                    f"-Dpegasus.catalog.replica.output={'YAML' if kind == 'yaml' else 'File'}"]
        auto = wf.auto_model
        if auto is not None and option_given(job.tasks[0].argv, "--cluster") is None:
            model = self._once("subworkflows.overheads.json", lambda: json.dumps(auto.model.to_json()) + "\n")
            out += ["--cluster", "auto", "--backend", auto.backend, "--slots", str(auto.slots),
                    "--overheads", model]
        for upstream in self.upstream.get(job.tasks[0].id, ()):
            out += ["--cache", self._cache_of(upstream)]
        # inputs an earlier job of this workflow writes, and those this plan stages in for the job (its
        # --input-dir, replica catalog or --reuse found them): where they will be
        made = {**self.exec_wf.subworkflow_inputs.get(job.id, {}), **self._inputs_made_here(job)}
        if made:
            self.put(paths.rel(".inputs.cache"), cache_text(made))
            out += ["--cache", paths.abs(".inputs.cache")]
        wanted = self._output_map(job)
        if wanted:
            self.put(paths.rel(".output.map"), output_map_text(wanted))
            out += ["--output-map", paths.abs(".output.map")]
        return out

    def _once(self, name: str, text: Callable[[], str]) -> str:
        """The absolute path of plan file ``name``, written the first time it is asked for."""
        if name not in self.shared:
            self.put(name, text())
            self.shared[name] = os.path.join(self.layout.final_dir, name)
        return self.shared[name]

    def _inputs_made_here(self, job: ExecJob) -> dict[str, str]:
        abstract = self.exec_wf.workflow.jobs.get(job.tasks[0].id)
        if abstract is None:
            return {}
        return {use.lfn: self.produced[use.lfn] for use in abstract.uses
                if use.type == "input" and use.lfn in self.produced and use.lfn != abstract.file}

    def _cache_of(self, job: ExecJob) -> str:
        child = self.paths_of(job.id).abs(".plan")
        basename = option_given(job.tasks[0].argv, "--basename") or job.tasks[0].id
        return os.path.join(child, f"{dag_basename(basename)}.cache")

    def _output_map(self, job: ExecJob) -> dict[str, list[str]]:
        """lfn -> where the child puts that output once written: this job's working directory for each
        output this plan stages out or its jobs read (the data pass's ``subworkflow_outputs``: from
        there this plan's own data jobs deliver, register, copy and clean it up, as Pegasus's parent
        stages a sub-workflow job's outputs out of its own scratch); and where this plan's own parent
        wants an output this child makes (its ``--output-map``, passed on down, so a file made levels
        below reaches every level that needs it)."""
        wanted = {lfn: [path] for lfn, path in self.exec_wf.subworkflow_outputs.get(job.id, {}).items()}
        for lfn in output_lfns(self.exec_wf, job):
            for path in self.context.output_map.get(lfn, ()):
                places = wanted.setdefault(lfn, [])
                if path not in places:
                    places.append(path)
        return wanted

    def _planned_in(self) -> str:
        return self.context.planned_in

    def _warn(self, job: ExecJob) -> Callable[[str], None]:
        return lambda text: self.warnings.append(f"sub-workflow job '{job.id}': {text}")


def _has_final(path: str) -> bool:
    """Whether the DAG file (when it exists yet) declares a FINAL node, which a splice cannot hold."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return any(line.lstrip().upper().startswith("FINAL") for line in handle)
    except OSError:
        return False


def _kind(exec_wf: ExecutableWorkflow, job: ExecJob) -> str:
    abstract = exec_wf.workflow.jobs.get(job.tasks[0].id)
    return abstract.type if abstract is not None else "pegasusWorkflow"


def _config(limits: Mapping[str, str], subject: str) -> str:
    lines = [f"# DAGMan configuration written by sheaf plan: throttles of sub-workflow {subject}"]
    for key, value in limits.items():
        number = profile_int({"dagman": {key: value}}, "dagman", key, subject=subject)
        lines.append(f"{THROTTLES[key]} = {number}")
    return "\n".join(lines) + "\n"
