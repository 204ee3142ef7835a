"""Pegasus 5.0 YAML abstract workflows: read into ``sheaf.model.Workflow``, write back.

Reading is two steps: ``yaml_rs`` loads the text into plain data, then ``workflow_from_data``
converts it to the model in one pass.  The conversion is the hot path at 10^6 jobs, so:

- each raw job dict is popped from the loaded list as it is converted (raw data and model never
  both exist in full);
- the common case is checked with cheap class tests only; anything unusual (a missing key, a wrong
  type, an unknown key) leaves the fast path for ``_diagnose``, which finds the exact problem and
  raises a located ``FormatError`` -- valid input never raises or catches per job;
- transformation names, namespaces and versions are interned; an input use with default flags is
  one shared ``Use`` per lfn (which also shares the lfn string); equal profile blocks share one
  normalized dict (``ProfileReader``); empty mappings are the model's shared ``EMPTY``;
- the cyclic garbage collector is paused while loading (``gc_paused``): the load builds millions of
  containers and no cycles.

Semantics (Pegasus 5.0 schema and Python API):

- ``type`` is ``job``, ``pegasusWorkflow`` or ``condorWorkflow`` (the 5.0 schema's older ``dax``/``dag``
  are read as the latter two); a sub-workflow job's ``name`` is its ``file``.
- An ``output``/``checkpoint`` use without ``stageOut``/``registerReplica`` gets both true (DAX 3 and
  the Python API do the same); an ``input`` use gets both false.  ``bypass`` is ``bypass_staging``.
- Scalars are text: ``version: 4.0`` -> ``"4.0"``, ``id: 7`` -> ``"7"``, argument ``60`` -> ``"60"``.
- A duplicate job id is an error at the line of its second occurrence.
- ``x-pegasus`` is kept as the header; ``apiLang``/``createdBy``/``createdOn`` at the top level mean a
  misindented header and are warned about.
- A key the schema lacks (at the top, in a job, a use or a dependency) is refused at its line, as
  Pegasus's parser refuses it; ``x-*`` vendor keys are allowed anywhere and ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

from sheaf.errors import InputError
from sheaf.formats._common import (
    HEADER_KEYS,
    ProfileReader,
    TextSource,
    check_header,
    hooks,
    mapping,
    seq,
    shown,
    string_map,
    text,
    to_text,
    unknown,
)
from sheaf.formats._yaml_catalogs import (
    rc_from_data,
    rc_to_data,
    sc_from_data,
    sc_to_data,
    tc_from_data,
    tc_to_data,
)
from sheaf.formats._yaml_emit import dumps, dumps_sequence
from sheaf.model import EMPTY, FileRef, Job, JobType, Use, UseType, Workflow

_TOP_KEYS = frozenset({"pegasus", "name", "version", "hooks", "profiles", "metadata", "siteCatalog",
                       "replicaCatalog", "transformationCatalog", "jobs", "jobDependencies", "x-pegasus"})
# Pegasus's parser refuses any other key ("Illegal key"): a misspelt one would change what runs
_STRICT = "keys of the Pegasus 5.0 workflow schema (or x-*)"
_JOB_KEYS = frozenset({"type", "id", "name", "namespace", "version", "file", "isPlanned", "nodeLabel",
                       "arguments", "uses", "stdin", "stdout", "stderr", "profiles", "hooks", "metadata"})
_USE_KEYS = frozenset({"lfn", "type", "stageOut", "registerReplica", "optional", "bypass", "size", "metadata",
                       "forPlanning", "namespace", "version", "executable"})
_DEP_KEYS = frozenset({"id", "children"})
_JOB_TYPES: dict[Any, JobType] = {
    "job": "job", "pegasusWorkflow": "pegasusWorkflow", "condorWorkflow": "condorWorkflow",
    "dax": "pegasusWorkflow", "dag": "condorWorkflow",
}
_USE_TYPES: dict[Any, UseType] = {"input": "input", "output": "output", "checkpoint": "checkpoint"}


class _Unusual(Exception):
    """Raised inside the fast path to hand a job over to ``_diagnose`` (never escapes this module)."""


def workflow_from_data(data: Any, src: TextSource, chunks: Iterable[list[Any]] | None = None) -> Workflow:
    """Convert loaded YAML to a ``Workflow`` (module docstring); consumes ``data['jobs']``.

    With ``chunks`` (``_yaml_chunks``), the jobs come from those lists instead, in order.
    """
    raw = _top(data, src)
    profiles = ProfileReader(src)
    workflow = Workflow(name=text(src, raw, "name", "the workflow", required=True) or "")
    workflow.format_version = to_text(raw["pegasus"]) if raw.get("pegasus") is not None else "5.0"
    header = raw.get("x-pegasus")
    workflow.header = header if isinstance(header, dict) and header else EMPTY
    workflow.hooks = hooks(src, raw.get("hooks"), "the workflow")
    workflow.metadata = string_map(src, raw.get("metadata"), "metadata of the workflow")
    workflow.profiles = profiles(raw.get("profiles"), "profiles of the workflow")
    if raw.get("transformationCatalog") is not None:
        workflow.transformation_catalog = tc_from_data(raw["transformationCatalog"], src, profiles,
                                                       inline=True)
    if raw.get("siteCatalog") is not None:
        workflow.site_catalog = sc_from_data(raw["siteCatalog"], src, profiles, inline=True)
    if raw.get("replicaCatalog") is not None:
        workflow.replica_catalog = rc_from_data(raw["replicaCatalog"], src, inline=True)
    jobs: dict[str, Job] = {}
    inputs: dict[str, Use] = {}
    for chunk in chunks if chunks is not None else (seq(src, raw, "jobs", "the workflow"),):
        _jobs(chunk, src, profiles, jobs, inputs)
    workflow.jobs = jobs
    workflow.dependencies = _dependencies(seq(src, raw, "jobDependencies", "the workflow"), src)
    return workflow


def _top(data: Any, src: TextSource) -> dict[str, Any]:
    if not isinstance(data, dict):
        src.fail("a Pegasus workflow is a YAML mapping with 'pegasus', 'name' and 'jobs'",
                 rule="the workflow is a YAML mapping", value=type(data).__name__, show_value=False)
    check_header(src, data)
    for key in ("name", "jobs"):
        if data.get(key) is None:
            src.fail(f"the workflow is missing the required key '{key}'", rule=f"a workflow has '{key}'",
                     show_value=False)
    if data.get("pegasus") is None:
        src.warn("the workflow has no 'pegasus' version key; reading it as Pegasus 5.0")
    return mapping(src, data, "the workflow", _TOP_KEYS | HEADER_KEYS, strict=_STRICT)


def _jobs(raw_jobs: list[Any], src: TextSource, profiles: ProfileReader, jobs: dict[str, Job],
          inputs: dict[str, Use]) -> None:
    """Add the jobs of ``raw_jobs`` in file order, popping the list as it goes (hot path, module doc)."""
    intern = sys.intern
    raw_jobs.reverse()
    pop = raw_jobs.pop
    known_keys = _JOB_KEYS.issuperset
    while raw_jobs:
        raw = pop()
        try:
            if raw.__class__ is not dict or not known_keys(raw):
                raise _Unusual
            job = _job(raw, src, profiles, inputs, intern)
        except InputError:
            raise  # already located by the part that found it
        except (_Unusual, AttributeError, TypeError, KeyError, ValueError):
            job = _job_checked(raw, src, profiles, inputs, len(jobs))
        jid = job.id
        count = len(jobs)
        jobs[jid] = job
        if len(jobs) == count:
            src.fail("duplicate job id", rule="job ids are unique", value=jid, key="id", nth=2)


def _job_checked(
    raw: Any, src: TextSource, profiles: ProfileReader, inputs: dict[str, Use], index: int
) -> Job:
    """The slow path for one job: diagnose (raise, or warn and repair), then convert."""
    _diagnose(raw, src, index)
    try:
        return _job(raw, src, profiles, inputs, sys.intern)
    except InputError:
        raise
    except (_Unusual, AttributeError, TypeError, KeyError, ValueError):
        src.fail(f"job #{index + 1} cannot be read", rule="jobs follow the Pegasus 5.0 schema",
                 value=raw.get("id"), key="id")


def _job(raw: dict[str, Any], src: TextSource, profiles: ProfileReader, inputs: dict[str, Use],
         intern: Any) -> Job:
    get = raw.get
    kind = _JOB_TYPES[get("type", "job")]
    jid = raw["id"]
    if jid.__class__ is not str:
        jid = _scalar(jid)
    if kind == "job":
        name = raw["name"]
        if name.__class__ is not str:
            name = _scalar(name)
        file = None
    else:
        file = raw["file"]
        if file.__class__ is not str:
            file = _scalar(file)
        name = get("name") or file
    namespace = get("namespace")
    if namespace is not None and namespace.__class__ is not str:
        namespace = _scalar(namespace)
    version = get("version")
    if version is not None and version.__class__ is not str:
        version = _scalar(version)
    args = get("arguments")
    if args:
        if args.__class__ is not list:
            raise _Unusual
        arguments = tuple(args)
        if set(map(type, arguments)) != {str}:
            arguments = tuple(map(_scalar, arguments))
    else:
        arguments = ()
    raw_uses = get("uses")
    uses = _uses(raw_uses, inputs) if raw_uses else ()
    prof = get("profiles")
    meta = get("metadata")
    hook = get("hooks")
    label, stdin, stdout, stderr = get("nodeLabel"), get("stdin"), get("stdout"), get("stderr")
    if label is not None or stdin is not None or stdout is not None or stderr is not None:
        label, stdin, stdout, stderr = _opt(label), _opt(stdin), _opt(stdout), _opt(stderr)
    return Job(
        jid, intern(name), namespace and intern(namespace), version and intern(version), kind, arguments,
        uses, profiles(prof) if prof else EMPTY, label, file, stdin, stdout, stderr,
        hooks(src, hook, f"job '{jid}'") if hook else EMPTY,
        string_map(src, meta, f"metadata of job '{jid}'") if meta else EMPTY)


def _uses(raw_uses: list[Any], inputs: dict[str, Use]) -> tuple[Use, ...]:
    if raw_uses.__class__ is not list:
        raise _Unusual
    uses: list[Use] = []
    append = uses.append
    known_keys = _USE_KEYS.issuperset
    for u in raw_uses:
        if u.__class__ is not dict:
            raise _Unusual
        size = len(u)
        if size > 2 and not known_keys(u):  # two keys: 'lfn' and 'type' or a KeyError below
            raise _Unusual
        lfn = u["lfn"]
        if lfn.__class__ is not str:
            lfn = _scalar(lfn)
        kind = _USE_TYPES[u["type"]]
        if size == 2 and kind == "input":
            # one shared record per lfn for the common input use; it also shares the lfn string
            use = inputs.get(lfn)
            if use is None:
                use = inputs[lfn] = Use(lfn)
            append(use)
        else:
            append(_use(u, lfn, kind))
    return tuple(uses)


def _use(u: dict[str, Any], lfn: str, kind: Any) -> Use:
    get = u.get
    produced = kind != "input"
    stage_out = get("stageOut", produced)
    register = get("registerReplica", produced)
    if stage_out.__class__ is not bool or register.__class__ is not bool:
        raise _Unusual
    if len(u) == 4 and produced and "stageOut" in u and "registerReplica" in u:  # the common output
        return Use(lfn, kind, stage_out, register)
    optional = get("optional", False)
    bypass = get("bypass", False)
    planning = get("forPlanning", False)
    if optional.__class__ is not bool or bypass.__class__ is not bool or planning.__class__ is not bool:
        raise _Unusual
    size = get("size")
    if size is not None and size.__class__ is not int:
        size = int(size)
    meta = get("metadata")
    if meta is not None and (meta.__class__ is not dict or set(map(type, meta.values())) - {str}):
        meta = _text_map(meta)  # the Python API writes ``size`` into metadata as a number
    return Use(lfn, kind, stage_out, register, optional, bypass, size, meta or EMPTY, planning)


def _text_map(meta: Any) -> dict[str, str]:
    if meta.__class__ is not dict:
        raise _Unusual
    return {to_text(k): _scalar(v) for k, v in meta.items()}


def _scalar(value: Any) -> str:
    """A scalar that YAML typed (``60``, ``4.0``, ``true``) as the text the user wrote."""
    if value is None or value.__class__ in (dict, list):
        raise _Unusual
    return to_text(value)


def _opt(value: Any) -> str | None:
    if value is None or value.__class__ is str:
        return value
    return _scalar(value)


# --- the slow path: say exactly what is wrong with one job ---------------------------------------

def _diagnose(raw: Any, src: TextSource, index: int) -> None:
    """Raise a located ``FormatError`` for what the fast path could not take, or warn and return."""
    where = f"job #{index + 1}"
    if not isinstance(raw, dict):
        src.fail(f"{where} must be a mapping", rule="jobs are YAML mappings",
                 value=raw if not isinstance(raw, (dict, list)) else "a list")
    jid = raw.get("id")
    anchor = jid if jid is not None and not isinstance(jid, (dict, list)) else None
    if anchor is None:
        src.fail(f"{where} has no 'id'" if jid is None else f"the 'id' of {where} must be a single value",
                 rule="every job has an id", value=raw.get("name") or raw.get("file"),
                 key="name" if raw.get("name") else "file", show_value=False,
                 offending=None if jid is None else shown(jid))
    where = f"job '{to_text(anchor)}'"
    for key in raw:
        if key not in _JOB_KEYS and not (isinstance(key, str) and key.startswith("x-")):
            unknown(src, key, where, _JOB_KEYS, _STRICT)
    _diagnose_fields(raw, src, where, anchor)
    uses = raw.get("uses")
    if uses is not None:
        if not isinstance(uses, list):
            src.fail(f"'uses' of {where} must be a list", rule="uses is a YAML sequence", value=anchor,
                     key="id")
        for use in uses:
            _diagnose_use(use, src, where, anchor)
    for key in list(raw):
        if key not in _JOB_KEYS:
            del raw[key]


def _diagnose_fields(raw: dict[str, Any], src: TextSource, where: str, anchor: Any) -> None:
    kind = raw.get("type", "job")
    if not isinstance(kind, str) or kind not in _JOB_TYPES:
        typed = isinstance(kind, str)  # a list or mapping is found by the job's id
        src.fail(f"type of {where} must be job, pegasusWorkflow or condorWorkflow, not {shown(kind)!r}",
                 rule="job type is job|pegasusWorkflow|condorWorkflow", value=kind if typed else anchor,
                 key="type" if typed else "id")
    need = "name" if _JOB_TYPES[kind] == "job" else "file"
    if raw.get(need) is None:
        src.fail(f"{where} is missing the required key '{need}'", rule=f"a job of type {kind} has '{need}'",
                 value=anchor, key="id")
    for key in ("name", "file", "namespace", "version", "nodeLabel", "stdin", "stdout", "stderr"):
        if isinstance(raw.get(key), (dict, list)):
            src.fail(f"'{key}' of {where} must be a single value", rule=f"'{key}' is a scalar",
                     value=anchor, key="id")
    args = raw.get("arguments")
    if isinstance(args, dict):  # found by the job's id
        src.fail(f"'arguments' of {where} must be a list", rule="arguments is a YAML sequence",
                 value=anchor, key="id", offending=shown(args))
    if args is not None and not isinstance(args, list):  # a scalar: found where it is
        src.fail(f"'arguments' of {where} must be a list", rule="arguments is a YAML sequence",
                 value=args, key="arguments")
    for arg in args or ():
        if arg is None or isinstance(arg, (dict, list)):
            src.fail(f"an argument of {where} is not a single value", rule="arguments are scalars",
                     value=anchor, key="id", offending="null" if arg is None else shown(arg))


def _diagnose_use(use: Any, src: TextSource, where: str, anchor: Any) -> None:
    if not isinstance(use, dict):
        src.fail(f"a use of {where} must be a mapping with 'lfn' and 'type'", rule="uses are YAML mappings",
                 value=anchor, key="id")
    lfn = use.get("lfn")
    if lfn is None or isinstance(lfn, (dict, list)):
        src.fail(f"a use of {where} has no 'lfn'", rule="a use has an lfn", value=anchor, key="id")
    kind = use.get("type")
    if not isinstance(kind, str) or kind not in _USE_TYPES:
        found = isinstance(kind, str) and bool(kind)  # a typed word is found where it is, else by the lfn
        src.fail(f"use of '{to_text(lfn)}' by {where} must have type input, output or checkpoint",
                 rule="a use's type is input|output|checkpoint", value=kind if found else to_text(lfn),
                 key="type" if found else None, offending="no type" if kind is None else shown(kind))
    for key in ("stageOut", "registerReplica", "optional", "bypass", "forPlanning"):
        if key in use and not isinstance(use[key], bool):
            src.fail(f"'{key}' of the use of '{to_text(lfn)}' by {where} must be true or false",
                     rule=f"'{key}' is a boolean", value=use[key], key=key)
    size = use.get("size")
    if size is not None and not ((isinstance(size, int) and not isinstance(size, bool))
                                 or (isinstance(size, str) and size.strip().isdigit())):
        src.fail(f"size of the use of '{to_text(lfn)}' by {where} must be an integer",
                 rule="size is an integer", value=size, key="size")
    meta = use.get("metadata")
    if meta is not None:
        use["metadata"] = dict(string_map(src, meta, f"metadata of '{to_text(lfn)}'")) or None
    for key in list(use):
        if key not in _USE_KEYS:
            if not (isinstance(key, str) and key.startswith("x-")):
                unknown(src, key, f"the use of '{to_text(lfn)}' by {where}", _USE_KEYS, _STRICT)
            del use[key]


def _dependencies(raw_deps: list[Any], src: TextSource) -> dict[str, list[str]]:
    deps: dict[str, list[str]] = {}
    for raw in raw_deps:
        entry = raw
        if entry.__class__ is not dict or entry.get("id") is None or not entry.keys() <= _DEP_KEYS:
            entry = mapping(src, raw, "a job dependency", _DEP_KEYS, required=("id",), strict=_STRICT)
        parent = entry["id"]
        children = entry.get("children") or []
        if parent.__class__ is not str or children.__class__ is not list or set(map(type, children)) - {str}:
            parent, children = _dependency_slow(entry, src)
        known = deps.get(parent)
        if known is None:
            deps[parent] = list(children)
        else:
            known.extend(children)
    return deps


def _dependency_slow(entry: dict[str, Any], src: TextSource) -> tuple[str, list[str]]:
    parent = entry["id"]
    if isinstance(parent, (dict, list)):
        src.fail("the 'id' of a job dependency must be a single value", rule="dependency ids are scalars",
                 value=type(parent).__name__, show_value=False)
    children = entry.get("children") or []
    if not isinstance(children, list):
        src.fail(f"'children' of the dependency of '{to_text(parent)}' must be a list",
                 rule="children is a YAML sequence", value=to_text(parent), key="id", nth=-1)
    for child in children:
        if child is None or isinstance(child, (dict, list)):
            src.fail(f"a child of '{to_text(parent)}' is not a job id", rule="children are job ids",
                     value=to_text(parent), key="id", nth=-1)
    return to_text(parent), [to_text(child) for child in children]


# --- writing ---------------------------------------------------------------------------------------

def workflow_yaml(workflow: Workflow, batch: int = 2000) -> Iterator[str]:
    """The workflow as YAML text, in pieces: jobs are turned into data and emitted a batch at a time,
    so writing 10^6 jobs never holds their plain-data form all at once."""
    data = workflow_to_data(workflow, with_jobs=False)
    dependencies = data.pop("jobDependencies")
    yield dumps(data)
    if not workflow.jobs:
        yield "jobs: []\n"
    else:
        yield "jobs:\n"
        jobs = list(workflow.jobs.values())
        for at in range(0, len(jobs), batch):
            yield dumps_sequence([_job_data(job) for job in jobs[at:at + batch]])
    yield dumps({"jobDependencies": dependencies})


def workflow_to_data(workflow: Workflow, *, with_jobs: bool = True) -> dict[str, Any]:
    """Plain data in the key order of the Pegasus Python API (``pegasus: '5.0'``)."""
    data: dict[str, Any] = {}
    if workflow.header:
        data["x-pegasus"] = dict(workflow.header)
    # the version read is kept when it is a 5.x one (the Python API writes 5.0.4); else this is 5.0
    data["pegasus"] = workflow.format_version if workflow.format_version.startswith("5.") else "5.0"
    data["name"] = workflow.name
    if workflow.hooks:
        data["hooks"] = dict(workflow.hooks)
    if workflow.profiles:
        data["profiles"] = {ns: dict(entries) for ns, entries in workflow.profiles.items()}
    if workflow.metadata:
        data["metadata"] = dict(workflow.metadata)
    if workflow.site_catalog is not None:
        data["siteCatalog"] = sc_to_data(workflow.site_catalog, inline=True)
    if workflow.replica_catalog is not None:
        data["replicaCatalog"] = rc_to_data(workflow.replica_catalog, inline=True)
    if workflow.transformation_catalog is not None:
        data["transformationCatalog"] = tc_to_data(workflow.transformation_catalog, inline=True)
    if with_jobs:
        data["jobs"] = [_job_data(job) for job in workflow.jobs.values()]
    data["jobDependencies"] = [{"id": parent, "children": list(children)}
                               for parent, children in workflow.dependencies.items()]
    return data


def _job_data(job: Job) -> dict[str, Any]:
    data: dict[str, Any] = {"type": job.type}
    if job.type == "job":
        if job.namespace is not None:
            data["namespace"] = job.namespace
        if job.version is not None:
            data["version"] = job.version
        data["name"] = job.name
    else:
        data["file"] = job.file
        if job.name != job.file:
            data["name"] = job.name
    data["id"] = job.id
    streams = (("stdin", job.stdin), ("stdout", job.stdout), ("stderr", job.stderr),
               ("nodeLabel", job.node_label))
    data.update({key: value for key, value in streams if value is not None})
    data["arguments"] = [a.lfn if isinstance(a, FileRef) else a for a in job.arguments]
    data["uses"] = [_use_data(use) for use in job.uses]
    if job.profiles:
        data["profiles"] = {ns: dict(entries) for ns, entries in job.profiles.items()}
    if job.metadata:
        data["metadata"] = dict(job.metadata)
    if job.hooks:
        data["hooks"] = dict(job.hooks)
    return data


def _use_data(use: Use) -> dict[str, Any]:
    data: dict[str, Any] = {"lfn": use.lfn}
    if use.metadata:
        data["metadata"] = dict(use.metadata)
    if use.size is not None:
        data["size"] = use.size
    if use.for_planning:
        data["forPlanning"] = True
    data["type"] = use.type
    if use.type != "input" or use.stage_out or use.register_replica:
        data["stageOut"] = use.stage_out
        data["registerReplica"] = use.register_replica
    if use.optional:
        data["optional"] = True
    if use.bypass_staging:
        data["bypass"] = True
    return data
