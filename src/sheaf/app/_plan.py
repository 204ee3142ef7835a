"""Plan a workflow into a new submit directory: what ``sheaf plan`` and a Python caller share.

``plan(PlanRequest(...))`` reads everything (``sheaf.formats.load_inputs``: the workflow, the layered
properties, the three catalogs), chooses and reserves the submit directory, plans
(``sheaf.planner.plan``, the data pass included, which needs the directory's path) and writes it
(``sheaf.codegen.write_plan``: atomically, ``braindump.yml`` among the files).  Bad input of any kind
is an ``InputError``/``UsageError`` before anything is written; a failed write leaves nothing.

The submit directory is made as pegasus-plan makes it: ``<base>/<user>/pegasus/<workflow>/runNNNN``,
a new number each time (with ``pegasus.dir.useTimestamp``, the planning time instead), unless
``relative_submit_dir`` (else ``relative_dir``) names it under ``base``, which must then be new or
empty: a plan never overwrites an earlier one.  The relative execution directory -- where jobs run
under a site's catalogued shared scratch -- is ``randomdir`` over ``relative_dir`` over the default
relative submit directory (``sheaf.codegen``'s layout), recorded as ``options.exec_dir``.  A
``deferred`` plan (a sub-workflow's, made when its job becomes ready) replaces the earlier plan in the
named directory -- unless the sub-workflow ran there before, which is kept to resume
(``PlanResult.kept``; ``force_replan`` replans).
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from sheaf.app import _braindump
from sheaf.app._pegasus_config import config_variables
from sheaf.app._plan_request import (
    PlanRequest,
    StagingOptions,
    check_reuse,
    cleanup_mode,
    input_dirs,
    split_commas,
    staging_sites,
    workflow_file,
)
from sheaf.app._subworkflow_inputs import ran_before, read_output_map, reused_catalogs, with_replica_files
from sheaf.codegen import (
    GROUP_PROPERTY,
    PlanContext,
    PlanFiles,
    check_target,
    named_submit_dir,
    next_run_number,
    reserved_run_dir,
    runs_parent,
    timestamp_name,
    user_name,
    write_groups,
    write_plan,
)
from sheaf.errors import PlanningError, UsageError, ValidationError
from sheaf.formats import Inputs, directory_settings, load_inputs, transformations_dir
from sheaf.model import check_profile_values, check_profiles
from sheaf.planner import DataOptions, ExecutableWorkflow, output_targets
from sheaf.planner import plan as plan_workflow
from sheaf.predict import AutoModel

__all__ = ["PlanResult", "plan"]


@dataclass(frozen=True, slots=True)
class PlanResult:
    """What a plan made: the submit ``directory``; ``kept`` when a deferred plan found the sub-workflow
    ran there before and kept it (then nothing else is set); the executable workflow and the files
    written; the braindump record (pegasus-plan's ``--json``); warnings and the planner's notes;
    seconds spent loading and planning, and writing."""

    directory: str
    kept: bool = False
    abstract_jobs: int = 0
    executable: ExecutableWorkflow | None = None
    files: PlanFiles | None = None
    braindump: Mapping[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    plan_seconds: float = 0.0
    write_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class _Where:
    """Where the plan goes: a named directory, or the next ``runNNNN`` under ``parent``."""

    base: str
    named: str | None
    replace: bool
    stamp: str | None = None  # pegasus.dir.useTimestamp: the run directory's name instead of runNNNN

    def parent(self, workflow: str) -> str:
        return runs_parent(self.base, workflow)


def plan(request: PlanRequest, *, on_warning: Callable[[str], None] | None = None) -> PlanResult:
    """Plan ``request`` into a new submit directory (module docstring).  ``on_warning`` hears each
    warning as soon as it is known (those found before the inputs are read even when reading then
    fails); the result lists every warning."""
    warnings = [f"-X{option}: a Java VM option; sheaf runs no JVM, ignored" for option in request.jvm_options]
    path, base = workflow_file(request.workflow, request.dax, request.base, warnings)
    named = request.relative_submit_dir or request.relative_dir
    if request.deferred and named is None:
        raise UsageError("--deferred replans into a named submit directory: give --relative-submit-dir")
    where = _Where(os.path.abspath(base or "."), named, request.deferred)
    if named is not None:
        target = os.path.realpath(named_submit_dir(where.base, named))
        check_target(target, request.deferred)  # first: a directory a workflow runs in is refused, never kept
        if request.deferred and not request.force_replan and ran_before(target):
            return PlanResult(target, kept=True)
    reuse = check_reuse(request.reuse)
    staging = StagingOptions(staging_sites(request.staging_sites), split_commas(request.output_sites),
                             request.output_dir or None,
                             cleanup_mode(request.cleanup, request.nocleanup), request.randomdir)
    inputs_dirs = input_dirs(request.input_dirs)
    started = time.perf_counter()
    inputs = _load(path, request, inputs_dirs, warnings, on_warning)
    if named is None and inputs.properties.get_bool("pegasus.dir.useTimestamp"):
        extended = inputs.properties.get_bool("pegasus.dir.timestamp.extended")
        where = replace(where, stamp=timestamp_name(time.time(), extended=extended))
    if request.transformations_dir is not None:
        inputs = replace(inputs, tc=transformations_dir(request.transformations_dir, inputs.tc))
    inputs = replace(inputs, rc=with_replica_files(
        inputs.rc, split_commas(request.caches), split_commas(request.inherited_rc),
        inputs.properties.get_bool("pegasus.catalog.replica.cache.asrc", False), _both(warnings, on_warning),
        reused_catalogs(reuse, _both(warnings, on_warning))))
    clustering = split_commas(request.clustering)
    given = _warn_unused_auto(request, clustering, _both(warnings, on_warning))
    auto = _auto_model(request, clustering, given, where.parent(inputs.workflow.name))
    record = {**staging.record(), "input_dirs": list(inputs.input_dirs), "force": request.force,
              "force_replan": request.force_replan, "basename": request.basename}
    context = PlanContext(os.getcwd(), {key: os.path.abspath(value) for key in ("tc", "sc", "rc")
                                        if (value := inputs.paths.get(key))},
                          split_commas(request.sites), read_output_map(request.output_map), inputs.tc)
    dump: dict[str, object] = {}
    wf_uuid = str(uuid.uuid4())
    size = request.group_size or _group_property(inputs.properties.get(GROUP_PROPERTY))
    collector = inputs.properties.get("sheaf.collector.file")

    def extras(files: PlanFiles) -> dict[str, str]:
        dump.update(_braindump.braindump(workflow=inputs.workflow.name, workflow_file=path, base=where.base,
                                         submit_dir=files.directory, dag=files.dag, user=user_name(),
                                         argv=request.argv, wf_uuid=wf_uuid))
        return {"braindump.yml": _braindump.yaml_text(dump)}

    def grouped(staging_dir: str, files: PlanFiles) -> None:
        assert size is not None
        write_groups(files.directory, size, dag_name=os.path.basename(files.dag), collector=collector,
                     staging=staging_dir)

    # the submit directory first (a numbered one reserved): the data pass plans its working directories
    # beside it, once, and write_plan only writes
    with _submit_dir(where, inputs.workflow.name) as directory:
        # what the parent's --output-map copies out of a sub-workflow's scratch is never cleaned up
        data = DataOptions(submit_dir=directory, exec_dir=_exec_dir(where, inputs.workflow.name, request,
                                                                    wf_uuid, directory),
                           keep=frozenset(context.output_map), output_dir=staging.output_dir,
                           staging_sites=staging.staging_sites, cleanup=staging.cleanup or "inplace",
                           force=request.force, cwd=os.getcwd(),
                           input_dir=os.pathsep.join(inputs.input_dirs) or None,
                           storage_map=inputs.storage_map)

        def planned_with(techniques: tuple[str, ...],
                         model: AutoModel | Callable[[], AutoModel] | None) -> ExecutableWorkflow:
            return _plan_inputs(inputs, sites=split_commas(request.sites) or None,
                                output_sites=staging.output_sites, clustering=techniques, data=data,
                                auto=model)

        exec_wf = planned_with(clustering, auto)
        if auto is not None and exec_wf.autocluster:
            without = tuple(t for t in clustering if t.lower() != "auto")
            # --cluster auto is weighed against the same plan without it; a clusters.* = auto profile
            # against its own clusters undone
            baseline = planned_with(without, None) if without != clustering else None
            chosen, single = _auto_record(exec_wf, auto, baseline)
            if chosen > single:
                exec_wf = baseline if baseline is not None else planned_with(without, None)
                exec_wf.warnings.append(f"automatic clustering: the clustered plan is predicted to take "
                                        f"{chosen:.1f} s and the unclustered one {single:.1f} s: planned "
                                        "without it")
        planned = time.perf_counter()
        files = write_plan(exec_wf, directory, replace=where.replace, basename=request.basename,
                           extra_files=extras, options={**record, **_output_dir(staging, exec_wf, directory)},
                           context=context,
                           finish=grouped if size is not None else None)
    written = time.perf_counter()
    return PlanResult(files.directory, abstract_jobs=len(inputs.workflow.jobs), executable=exec_wf,
                      files=files, braindump=dump,
                      warnings=(*warnings, *exec_wf.warnings, *_batch_sites(exec_wf), *files.warnings),
                      notes=tuple(exec_wf.notes),
                      plan_seconds=planned - started, write_seconds=written - planned)


def _output_dir(staging: StagingOptions, exec_wf: ExecutableWorkflow, directory: str) -> dict[str, str]:
    """``--output-dir`` as recorded in plan.json: the directory it resolved to (a relative one may be
    under an output site's storage directory); nothing without it."""
    return {"output_dir": output_targets(exec_wf, directory)[0][1]} if staging.output_dir else {}


#: the batch systems Pegasus's glite style submits to through HTCondor's BLAHP
_BLAHP_SYSTEMS = frozenset({"pbs", "sge", "slurm", "lsf", "flux", "moab", "cobalt"})


def _batch_sites(exec_wf: ExecutableWorkflow) -> list[str]:
    """One warning per site whose jobs' ``grid_resource`` asks for a batch system ``sheaf run`` does not
    send jobs to (``batch pbs``, or the single word ``pbs`` that Pegasus's glite style reads as
    ``batch pbs``): Pegasus would submit them to it, sheaf runs them on ``--backend``."""
    from sheaf.backends import BATCH_SYSTEMS

    asked: dict[str, str] = {}
    for job in exec_wf.jobs:
        value = job.profiles.get("condor", {}).get("grid_resource")
        if job.site is None or not value or job.site in asked:
            continue
        words = value.lower().split()
        legacy = words[0] in _BLAHP_SYSTEMS
        system = words[0] if legacy else words[1] if words[0] == "batch" and len(words) > 1 else None
        if system is not None and (legacy or system not in BATCH_SYSTEMS):
            asked[job.site] = value
    routed = ", ".join(f"batch {system}" for system in sorted(BATCH_SYSTEMS))
    return [f"site '{site}': its jobs' grid_resource = {value} asks for a batch system, to which Pegasus's "
            f"glite style submits them; sheaf run sends jobs to a batch system only for grid_resource = "
            f"{routed}: these run on sheaf run's --backend (the local pool by default)"
            for site, value in asked.items()]


def _warn_unused_auto(request: PlanRequest, clustering: tuple[str, ...], warn: Callable[[str], None]) -> bool:
    """The options of automatic clustering, given to a plan that does not cluster automatically; whether
    any was given."""
    unused = [name for name, given in (("--backend", request.backend != "local"), ("--slots", request.slots),
                                       ("--pool-config", request.pool_config),
                                       ("--overhead", request.overhead is not None),
                                       ("--overheads", request.overheads_file)) if given]
    if unused and not _automatic(clustering):
        warn(f"{', '.join(unused)}: only automatic clustering reads them (--cluster auto, or horizontal "
             "with a clusters.* profile of auto); ignored")
    return bool(unused)


def _auto_record(exec_wf: ExecutableWorkflow, auto: AutoModel | Callable[[], AutoModel],
                 baseline: ExecutableWorkflow | None) -> tuple[float, float]:
    """``auto_record`` (``sheaf.app._autocluster``, the simulator) of a plan that clustered automatically."""
    from sheaf.app._autocluster import auto_record
    return auto_record(exec_wf, auto if isinstance(auto, AutoModel) else auto(), baseline)


def _auto_model(request: PlanRequest, clustering: tuple[str, ...], given: bool,
                runs_dir: str) -> AutoModel | Callable[[], AutoModel] | None:
    """The model automatic clustering optimises under: loaded now for ``--cluster auto`` or when its
    options were given (so that a bad one is refused before planning); for horizontal clustering alone,
    a function the planner calls only for a group with a clusters.* profile of ``auto`` -- loading it
    imports the simulator and reads every earlier run under the base directory."""
    if not _automatic(clustering):
        return None

    def load() -> AutoModel:
        from sheaf.app._autocluster import auto_model
        return auto_model(request.backend, request.slots, request.overhead, request.overheads_file, runs_dir,
                          request.pool_config)

    if given or any(t.lower() == "auto" for t in clustering):
        return load()
    return functools.cache(load)


def _automatic(clustering: tuple[str, ...]) -> bool:
    """Whether the plan may cluster automatically: ``--cluster auto``, or horizontal clustering, whose
    groups with a clusters.* profile of ``auto`` are cut automatically."""
    return any(t.lower() in ("auto", "horizontal") for t in clustering)


def _both(warnings: list[str], on_warning: Callable[[str], None] | None) -> Callable[[str], None]:
    def warn(text: str) -> None:
        warnings.append(text)
        if on_warning is not None:
            on_warning(text)
    return warn


def _load(path: str, request: PlanRequest, dirs: tuple[str, ...], warnings: list[str],
          on_warning: Callable[[str], None] | None) -> Inputs:
    """The inputs, their ``input_dirs`` the ``--input-dir`` directories ``dirs`` then the replica
    catalog's; the warnings so far are told first (reading may still fail), the inputs' after."""
    if on_warning is not None:
        for warning in warnings:
            on_warning(warning)
    inputs = load_inputs(path, conf=request.conf, defines=request.defines, tc=request.tc, sc=request.sc,
                         rc=request.rc, env_defaults=config_variables())
    tell = _both(warnings, on_warning)
    for warning in inputs.warnings:
        tell(warning)
    if dirs and not inputs.input_dirs:  # a Directory replica catalog's settings were told already
        for warning in directory_settings(inputs.properties):
            tell(warning)
    return replace(inputs, input_dirs=(*dirs, *(d for d in inputs.input_dirs if d not in dirs)))


def _exec_dir(where: _Where, workflow: str, request: PlanRequest, wf_uuid: str, final: str) -> str:
    """pegasus-plan's relative execution directory (``sheaf.codegen``'s layout), given the submit
    directory ``final``: ``randomdir`` over ``relative_dir`` over the default relative submit directory."""
    if request.randomdir is not None:
        return request.randomdir or f"{request.basename or workflow + '-0'}-{wf_uuid}"
    if request.relative_dir is not None:  # an absolute one under the site's directory, as under BASE
        return request.relative_dir.lstrip(os.sep)
    if where.named is None:
        return os.path.relpath(final, where.base)
    parent = where.parent(workflow)  # under relative_submit_dir: the numbered name Pegasus would pick
    default = where.stamp or f"run{next_run_number(parent):04d}"
    return os.path.relpath(os.path.join(parent, default), where.base)


def _group_property(value: str | None) -> int | None:
    if value is None or not value.strip():
        return None
    text = value.strip()
    # a Java int at most, as the planner's properties are; the length test first, as Python converts
    # no more than 4,300 digits
    if not text.isdigit() or len(text) > 10 or not 1 <= int(text) <= 2**31 - 1:
        raise UsageError(f"{GROUP_PROPERTY} must be a positive integer (at most 2147483647), got {value!r}")
    return int(text)


def _plan_inputs(inputs: Inputs, **options: Any) -> ExecutableWorkflow:
    """The planner over ``inputs``; a model rule it finds broken (a cycle, a file's producers) is located
    in the files read; a malformed profile value the properties give (``-D pegasus.runtime=abc``) is
    the properties' fault, named so, before any job inherits it."""
    check_profile_values(inputs.properties.profiles(), subject="the properties (--conf, pegasus.properties "
                         "or -D)")
    try:
        # the workflow's and catalogs' own values first, where their lines can still be found
        check_profiles(inputs.workflow, inputs.tc, inputs.sc)
        return plan_workflow(inputs.workflow, tc=inputs.tc, sc=inputs.sc, rc=inputs.rc,
                             properties=inputs.properties, **options)
    except ValidationError as exc:
        raise inputs.locate(exc) from None
    except PlanningError as exc:
        if exc.anchor is None:
            raise
        raise inputs.locate(exc) from None


def _submit_dir(where: _Where, workflow: str) -> AbstractContextManager[str]:
    """The submit directory, for the block that plans and writes into it: the named one, or the next
    numbered one reserved (``reserved_run_dir``: removed again when the block fails)."""
    if where.named is not None:
        return nullcontext(os.path.realpath(named_submit_dir(where.base, where.named)))
    return reserved_run_dir(where.parent(workflow), where.stamp)
