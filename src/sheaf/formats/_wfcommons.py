"""WfCommons workflow JSON (WfFormat schema 1.0 to 1.5) <-> the abstract workflow.

WfCommons traces are real executions of real workflows; sheaf reads them as abstract workflows so
they can be planned, clustered and simulated.  Mapping (read):

- each task becomes a compute job; its id is the task's ``id`` (``name`` when there is no id) --
  one longer than a job id may be (Nextflow's name the process path and its inputs) keeps its first
  bytes and a digest of the whole id, with a warning, and so does a transformation name;
- the transformation is ``command.program`` (its basename; the trace has no category field), and
  when a task has no command, or its program is a script of several lines (Nextflow's traces), the
  task name with its ``_ID...`` suffix removed;
- schema 1.0 and 1.1 jobs (a ``jobs`` list, no ``command``) give their ``arguments`` on the job itself and
  no program: the program is the job's category as WfCommons's migration to 1.2 makes it, the name
  before its ``_ID`` suffix, else before its first ``_`` (``fast2bfq_fast2bfq_HEP2_s_1`` runs
  ``fast2bfq``);
- ``command.arguments`` are a shell command line's text (WfCommons's translators hand the command to
  a shell, and WfBench's ``--out "{\\"f\\":1}"`` needs one): the job's arguments are the words a POSIX
  shell makes of them, each quoted for the job's own argument rules (``sheaf.model._arguments``) --
  the arguments as they are wherever both rules give the same words; an argument that is just ``<``,
  ``>``/``1>`` or ``2>`` and the plain file name after it are a redirection, the job's stdin, stdout or
  stderr.  Written back, words the two rules would read differently are shell-quoted, and the job's
  streams are redirections;
  a Pegasus run's trace (``wms``/``runtimeSystem`` named Pegasus) holds instead each program's argv as
  kickstart recorded it (its ``argument-vector``, which WfCommons's Pegasus parser copies): each
  argument is one word of the program's argv, blanks and all (GATK's ``--filterExpression "QD < 2.0
  || FS > 60.0"``), quoted for the job's own rules where they would split it; a Makeflow run's trace
  holds the rule's whole ``/bin/sh`` command split at blanks (WfCommons's Makeflow parser): its first
  word, the command itself, is dropped, redirections are read as above, and what other shell syntax
  is left (``query.*.sam``, a pipe) is passed as it is and warned about: a job's program runs without
  a shell;
- ``runtimeInSeconds`` (1.3 and older: ``runtime``) becomes the pegasus profile ``runtime``, and
  ``coreCount``/``cores`` the pegasus profile ``cores`` -- a whole number of CPUs, so a fraction
  (schema 1.2 made ``cores`` a number) is rounded up: a task of 1.5 cores asks for 2;
- input files become ``input`` uses, output files ``output`` uses (staged out and registered, the
  Pegasus defaults), with ``sizeInBytes`` as the use's size (1.3 and older: ``size``, which those
  schemas call KB but their traces hold in bytes: WfCommons's migration to 1.4 carries it over
  unchanged); a file named by an absolute path (the work directories Nextflow's traces name) is read
  relative to the working directory, its leading ``/`` dropped, with a warning -- a job's files stay
  in its working directory;
- ``parents``/``children`` become explicit dependencies (merged, deduplicated, in file order);
- a 1.4-and-older task's ``type`` is ``compute``, ``transfer`` or ``auxiliary`` (any other is refused):
  a transfer or auxiliary task (the traced Pegasus run's own stage-in, create-dir or cleanup job) is
  read as a compute job, with a warning -- sheaf plans its own data staging beside it.

Schema 1.5 splits the document into ``workflow.specification`` (tasks, files) and
``workflow.execution`` (tasks with runtime and command); schema 1.4 keeps everything in
``workflow.tasks`` with per-task ``files`` carrying a ``link``, as 1.0 to 1.3 do under their older
names (``jobs`` up to 1.2, ``runtime``, file ``size``).  All are read; 1.5 is written.

Bad input (text that is not UTF-8, malformed JSON, JSON nested past the decoder's recursion limit,
a missing ``workflow``, no task at all, a task without an id, a duplicate id, a parent naming an
unknown task, an execution record naming no task or one twice, a ``command`` that is not an object
or an empty ``program``, a value of the wrong JSON type anywhere: an object where a name belongs, a
non-finite or negative number) is a ``FormatError`` with the file, the line found for the offending
value, the rule and the value -- never another exception.  A missing ``schemaVersion``, or one
WfCommons never published, is warned about, and the file read by its layout.
"""

from __future__ import annotations

import hashlib
import math
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from sheaf.errors import FormatError, InputError
from sheaf.formats._common import decode_utf8, read_text, shown
from sheaf.model import (
    MAX_NAME_BYTES,
    Job,
    Use,
    Workflow,
    join_arguments,
    needs_splitting,
    nul_problem,
    quote_words,
    split_arguments,
    stringify,
)

_TASK_ID_SUFFIX = "_ID"
#: the schema versions WfCommons published (1.5 is the current one)
_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")


def read_wfcommons(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> Workflow:
    """Read a WfCommons JSON file into a ``Workflow`` (mapping in the module docstring)."""
    data = read_text(path).encode()
    try:
        return loads_wfcommons(data, source=str(path), warnings=warnings)
    except InputError as exc:
        if exc.line is None:
            exc.located(str(path), *_locate(data, exc.value if exc.has_value else None))
        exc.located(str(path))
        raise


def loads_wfcommons(data: bytes | str, *, source: str = "<wfcommons>",
                    warnings: list[str] | None = None) -> Workflow:
    raw = data.encode() if isinstance(data, str) else data
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        line, column = _byte_position(raw, str(exc))
        raise FormatError("malformed JSON", rule="WfCommons files are JSON", value=str(exc),
                          path=source, line=line, column=column) from None
    except UnicodeDecodeError:
        decode_utf8(raw, source)
        raise
    except RecursionError:
        raise FormatError("JSON nested too deep", rule="JSON nests within the decoder's recursion limit",
                          path=source) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("workflow"), dict):
        raise FormatError("not a WfCommons workflow", rule="a top-level object with a 'workflow' object",
                          value=type(doc).__name__, path=source, line=1)
    workflow = doc["workflow"]
    version = doc.get("schemaVersion")
    if version not in _VERSIONS and warnings is not None:
        said = ("no schemaVersion" if version is None
                else f"schemaVersion {version!r}, which WfCommons never published,")
        warnings.append(f"{source}: {said} (known: {', '.join(_VERSIONS)}); read as "
                        f"{'1.5' if 'specification' in workflow else '1.4'} by its layout")
    tasks = _tasks_15(workflow) if "specification" in workflow else _tasks_14(workflow)
    if not tasks:
        raise FormatError("the workflow has no task", rule="a WfCommons workflow has at least one task",
                          value="tasks")
    staging = [task["id"] for task in tasks if task.get("type", "compute") != "compute"]
    if staging and warnings is not None:
        warnings.append(f"{source}: {len(staging)} task(s) of type transfer or auxiliary (the traced "
                        f"system's own staging and directory jobs, '{staging[0]}') are read as compute jobs; "
                        "sheaf plans its own beside them")
    absolute = _relative_files(tasks)
    if absolute and warnings is not None:
        warnings.append(f"{source}: {absolute} file name(s) are absolute paths (a trace's work directories); "
                        "read relative to the working directory, the leading / dropped")
    shell: list[str] = []
    built, shortened = _build(doc, tasks, shell)
    if shell and warnings is not None:
        warnings.append(f"{source}: {len(shell)} Makeflow task(s) use shell syntax in their command "
                        f"({shell[0]!r}); passed to the program as it is: a job runs without a shell")
    if shortened and warnings is not None:
        warnings.append(f"{source}: {shortened} task id(s) are longer than a job id may be ({MAX_NAME_BYTES} "
                        "bytes); each job keeps the id's first bytes and a digest of the whole id, as does a "
                        "transformation named by so long a process name")
    found = nul_problem(built) if b"\\u0000" in raw else None
    if found is not None:
        raise FormatError(found[1].message, rule=found[1].rule, value=found[0], path=source)
    return built


def _tasks_15(workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = workflow["specification"]
    if not isinstance(spec, dict) or not isinstance(spec.get("tasks"), list):
        raise FormatError("workflow.specification has no task list", rule="schema 1.5: specification.tasks",
                          value="specification")
    sizes = {_name(f.get("id"), "files[].id"): f.get("sizeInBytes") for f in _list(spec, "files")
             if isinstance(f, dict)}
    execution_doc = workflow.get("execution") or {}
    if not isinstance(execution_doc, dict):
        raise FormatError("workflow.execution is not an object", rule="schema 1.5: execution.tasks",
                          value="execution")
    execution: dict[str, dict[str, Any]] = {}
    for record in _list(execution_doc, "tasks"):
        if not isinstance(record, dict):
            raise FormatError("an execution task is not an object", rule="execution.tasks[] are objects",
                              value=shown(record))
        rid = _name(record.get("id"), "execution.tasks[].id")
        if rid in execution:
            raise FormatError("an execution task is recorded twice", rule="execution.tasks[].id is unique",
                              value=rid)
        execution[rid] = record
    tasks = []
    for task in spec["tasks"]:
        if not isinstance(task, dict):
            raise FormatError("a task is not an object", rule="tasks are objects", value=task)
        tid = _task_id(task)
        run = execution.get(tid, {})
        files = [(f, "input", sizes.get(f)) for f in _str_list(task, "inputFiles")]
        files += [(f, "output", sizes.get(f)) for f in _str_list(task, "outputFiles")]
        execution.pop(tid, None)
        tasks.append({"id": tid, "name": task.get("name", tid), "parents": _str_list(task, "parents"),
                      "children": _str_list(task, "children"), "files": files,
                      "command": run.get("command") or task.get("command"),
                      "runtime": run.get("runtimeInSeconds", task.get("runtimeInSeconds")),
                      "cores": run.get("coreCount", task.get("coreCount"))})
    if execution:
        raise FormatError("an execution task names no task of the specification",
                          rule="execution.tasks[].id is the id of a specification task",
                          value=next(iter(execution)))
    return tasks


def _tasks_14(workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw_tasks = workflow.get("tasks", workflow.get("jobs"))
    if not isinstance(raw_tasks, list):
        raise FormatError("workflow has no task list", value="workflow",
                          rule="schema 1.3-1.4: a workflow.tasks list (1.0-1.2: workflow.jobs)")
    tasks = []
    for task in raw_tasks:
        if not isinstance(task, dict):
            raise FormatError("a task is not an object", rule="tasks are objects", value=task)
        files = []
        for f in _list(task, "files"):
            if not isinstance(f, dict):
                raise FormatError("a file entry is not an object", rule="files[] are objects", value=f)
            link = f.get("link")
            if link not in ("input", "output"):
                raise FormatError("a file's link must be 'input' or 'output'", rule="files[].link",
                                  value=link)
            files.append((_name(f.get("name", f.get("id")), "files[].name"), link,
                          f.get("sizeInBytes", f.get("size"))))
        tid, command = _task_id(task), task.get("command")
        if command is None and "tasks" not in workflow:  # schema 1.0 and 1.1: a list of jobs
            command = {"program": _legacy_program(task), "arguments": task.get("arguments", [])}
        tasks.append({"id": tid, "name": task.get("name"), "parents": _str_list(task, "parents"),
                      "children": _str_list(task, "children"), "files": files, "command": command,
                      "runtime": task.get("runtimeInSeconds", task.get("runtime")),
                      "cores": task.get("cores", task.get("coreCount")), "type": _task_type(task, tid)})
    return tasks


#: the types a task of schema 1.0 to 1.4 may have
_TASK_TYPES = ("compute", "transfer", "auxiliary")


def _task_type(task: Mapping[str, Any], tid: str) -> str:
    kind = task.get("type", "compute")
    if kind not in _TASK_TYPES:
        raise FormatError(f"task '{tid}' has an unknown type", rule="tasks[].type is one of "
                          + ", ".join(_TASK_TYPES), value=shown(kind))
    return str(kind)


def _legacy_program(job: Mapping[str, Any]) -> str:
    """The program of a schema 1.0/1.1 job, which names none: its ``category`` (1.2), else the category
    WfCommons's migration to 1.2 gives it -- the name before its ``_ID`` suffix, else before the name's
    first ``_``."""
    if job.get("category") is not None:
        return _name(job["category"], "jobs[].category")
    name = _name(job.get("name", job.get("id")), "jobs[].name")
    cut = name.find(_TASK_ID_SUFFIX)
    return name[:cut] if cut > 0 else name.split("_")[0] or name


def _relative_files(tasks: list[dict[str, Any]]) -> int:
    """Make the tasks' absolute file names relative (module docstring); how many there were."""
    count = 0
    for task in tasks:
        files = task["files"]
        for index, (lfn, link, size) in enumerate(files):
            if lfn.startswith("/") and lfn.strip("/"):
                files[index] = (lfn.lstrip("/"), link, size)
                count += 1
    return count


def _list(owner: Mapping[str, Any], key: str) -> list[Any]:
    value = owner.get(key, [])
    if not isinstance(value, list):
        raise FormatError(f"'{key}' must be a list", rule=f"{key} is a JSON array", value=value)
    return value


def _str_list(owner: Mapping[str, Any], key: str) -> list[str]:
    values = _list(owner, key)
    for value in values:
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise FormatError(f"'{key}' must list names", rule=f"{key} holds strings", value=value)
    return [str(v) for v in values]


def _name(value: Any, what: str) -> str:
    """A name (of a file, a task): a JSON string or integer."""
    if not isinstance(value, (str, int)) or isinstance(value, bool) or value == "":
        raise FormatError(f"'{what}' must be a name", rule=f"{what} is a non-empty string",
                          value=value if not isinstance(value, (dict, list)) else type(value).__name__)
    return str(value)


def _task_id(task: Mapping[str, Any]) -> str:
    tid = task.get("id", task.get("name"))
    if not isinstance(tid, (str, int)) or isinstance(tid, bool) or tid == "":
        raise FormatError("a task has no id", rule="every task has an 'id' (or a 'name')",
                          value=task.get("id"))
    return str(tid)


def _transformation(task: Mapping[str, Any]) -> str:
    command = task.get("command")
    if isinstance(command, dict) and "program" in command:
        program = _name(command["program"], "command.program")
        if "\n" not in program and "\r" not in program:  # not a script of several lines
            return os.path.basename(program) or program
    name = _name(task.get("name") or task["id"], "tasks[].name")
    cut = name.rfind(_TASK_ID_SUFFIX)
    return _fitted(name[:cut] if cut > 0 else name)


def _build(doc: Mapping[str, Any], tasks: list[dict[str, Any]], shell: list[str]) -> tuple[Workflow, int]:
    """The workflow, and how many task ids were too long to be job ids (``_fitted``); ``shell`` gets
    each Makeflow task's first word of shell syntax left in its arguments."""
    wf = Workflow(name=_name(doc.get("name") or "workflow", "name"),
                  format_version=_name(doc.get("schemaVersion", "1.5"), "schemaVersion"), trace=True)
    system = _runtime_system(doc)
    by_name: dict[str, str] = {}
    ids: dict[str, str] = {}  # task id -> its job's id
    for task in tasks:
        job = _job(task, system, shell)
        ids[task["id"]] = job.id = _fitted(task["id"])
        if job.id in wf.jobs:
            raise FormatError("duplicate task id", rule="task ids are unique", value=task["id"])
        wf.jobs[job.id] = job
        if task["name"] is not None:
            by_name.setdefault(_name(task["name"], "tasks[].name"), job.id)
    shortened = {old: new for old, new in ids.items() if old != new}
    for old, new in shortened.items():  # a reference by the task's own id
        by_name.setdefault(old, new)
    seen: dict[str, set[str]] = {}
    for task in tasks:
        own = ids[task["id"]]
        for parent in task["parents"]:
            _add_edge(wf, seen, _resolve(wf, by_name, parent, task["id"]), own)
        for child in task["children"]:
            _add_edge(wf, seen, own, _resolve(wf, by_name, child, task["id"]))
    return wf, len(shortened)


#: a task id longer than a job id may be (``MAX_NAME_BYTES``) keeps this many bytes, then a digest
_KEPT_BYTES = MAX_NAME_BYTES - 17


def _fitted(name: str) -> str:
    """A task id or process name as a job id or transformation name: itself, or -- one too long for
    those (Nextflow's name the process path, and its inputs) -- its first bytes and a digest of all of
    it, as distinct as the name was."""
    raw = name.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    head = raw[:_KEPT_BYTES].decode("utf-8", "ignore")
    return f"{head}_{hashlib.sha256(raw).hexdigest()[:16]}"


def _runtime_system(doc: Mapping[str, Any]) -> str:
    """The name of the system that ran the traced workflow (``runtimeSystem``, 1.4 and older ``wms``),
    lower case; empty where the trace names none."""
    record = doc.get("runtimeSystem", doc.get("wms"))
    name = record.get("name") if isinstance(record, dict) else None
    return name.lower() if isinstance(name, str) else ""


def _job(task: Mapping[str, Any], system: str, shell: list[str]) -> Job:
    """The job of ``task`` of a trace of the runtime ``system``, whose arguments are the program's
    argv (Pegasus), a shell command split at blanks (Makeflow) or a command line's text (module
    docstring)."""
    command = task.get("command")
    if command is not None and not isinstance(command, dict):
        raise FormatError(f"the command of task '{task['id']}' is not an object",
                          rule="command is an object with 'program' and 'arguments'",
                          value=shown(command))
    words = tuple(_argument(a) for a in _list(command or {}, "arguments"))
    streams: dict[str, str] = {}
    if system != "pegasus":
        words = _redirected(words[1:] if system == "makeflow" else words, streams)
    if system == "makeflow":
        odd = next((w for w in words if _shell_syntax(w)), None)
        if odd is not None:
            shell.append(odd)
    if system in ("pegasus", "makeflow"):
        arguments = quote_words(words) if needs_splitting(words) else words
    else:
        arguments = _shell_words(words, task["id"])
    pegasus: dict[str, str] = {}
    for key in ("runtime", "cores"):
        value = task.get(key)
        if value is None:
            continue
        if not _count(value):
            raise FormatError(f"task '{task['id']}' has a bad {key}", rule=f"{key} is a number >= 0",
                              value=value)
        pegasus[key] = stringify(math.ceil(value) if key == "cores" else value)
    uses = []
    for lfn, link, size in task["files"]:
        output = link == "output"
        if size is not None and not _count(size):
            raise FormatError(f"file '{lfn}' of task '{task['id']}' has a bad size",
                              rule="sizeInBytes is a number >= 0", value=size)
        uses.append(Use(lfn, link, stage_out=output, register_replica=output,
                        size=int(size) if size is not None else None))
    return Job(id=task["id"], name=_transformation(task), arguments=arguments, uses=tuple(uses),
               profiles={"pegasus": pegasus} if pegasus else {}, stdin=streams.get("stdin"),
               stdout=streams.get("stdout"), stderr=streams.get("stderr"))


#: a redirection word of a Makeflow command, and the job's stream it names
_REDIRECTIONS = {"<": "stdin", ">": "stdout", "1>": "stdout", "2>": "stderr"}
#: characters a shell reads as syntax in an unquoted word
_SHELL_SYNTAX = frozenset("|&;<>()$`\\\"' \t\n*?[")


def _shell_syntax(word: str) -> bool:
    """Whether a shell would read ``word`` otherwise than as itself."""
    return not word or word[0] in "#~" or not _SHELL_SYNTAX.isdisjoint(word)


def _redirected(words: tuple[str, ...], streams: dict[str, str]) -> tuple[str, ...]:
    """``words`` less the redirections among them -- an argument that is just ``<``, ``>``, ``1>`` or
    ``2>``, then one that is a plain file name -- each put in ``streams`` (the last one of a stream
    wins, as in a shell)."""
    kept: list[str] = []
    rest = iter(words)
    for word in rest:
        target = next(rest, None) if word in _REDIRECTIONS else None
        if target is not None and not _shell_syntax(target):
            streams[_REDIRECTIONS[word]] = target
            continue
        kept.extend(w for w in (word, target) if w is not None)
    return tuple(kept)


def _count(value: Any) -> bool:
    """A finite JSON number >= 0 (an integer below 2**63: a 400-digit one is no count)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0 <= value < 2**63
    return isinstance(value, float) and math.isfinite(value) and value >= 0


def _argument(value: Any) -> str:
    if isinstance(value, (dict, list)) or value is None:
        raise FormatError("a command argument must be a single value",
                          rule="arguments are strings or numbers", value=type(value).__name__)
    return stringify(value)


def _shell_words(arguments: tuple[str, ...], task: str) -> tuple[str, ...]:
    """The job's arguments for a task's command-line text (module docstring)."""
    if not needs_splitting(arguments):
        return arguments
    text = join_arguments(arguments)
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise FormatError(f"the arguments of task '{task}' are not a shell command line: {exc}",
                          rule="command.arguments are shell words", value=text) from None
    return arguments if _own_words(text) == words else quote_words(words)


def _own_words(text: str) -> tuple[str, ...] | None:
    """The words the job's argument rules make of ``text`` (None where they refuse it)."""
    try:
        return split_arguments(text)
    except ValueError:
        return None


def _command_line(arguments: tuple[str, ...]) -> list[str]:
    """A job's arguments as WfCommons's command-line text: as they are where a shell reads the same words,
    an argument that is a redirection's operator (``>``) quoted, not read back as one."""
    return [shlex.quote(a) if a in _REDIRECTIONS else a for a in _shell_text(arguments)]


def _shell_text(arguments: tuple[str, ...]) -> list[str]:
    text = join_arguments(arguments)
    words = _own_words(text) if needs_splitting(arguments) else arguments
    if words is None or words == arguments:
        return list(arguments)
    try:
        if tuple(shlex.split(text)) == words:
            return list(arguments)
    except ValueError:
        pass
    return [shlex.quote(word) for word in words]


def _resolve(wf: Workflow, by_name: Mapping[str, str], ref: Any, owner: str) -> str:
    key = str(ref)
    if key in wf.jobs:
        return key
    if key in by_name:
        return by_name[key]
    raise FormatError(f"task '{owner}' names an unknown task",
                      rule="parents/children name tasks of the workflow", value=key)


def _add_edge(wf: Workflow, seen: dict[str, set[str]], parent: str, child: str) -> None:
    children = seen.setdefault(parent, set())
    if child not in children:
        children.add(child)
        wf.add_dependency(parent, child)


def dumps_wfcommons(workflow: Workflow) -> bytes:
    """The workflow as WfFormat 1.5 JSON (what ``read_wfcommons`` reads back to an equal workflow
    for workflows that WfCommons can express: compute jobs with runtime/cores profiles)."""
    children: dict[str, list[str]] = {job_id: [] for job_id in workflow.jobs}
    parents: dict[str, list[str]] = {job_id: [] for job_id in workflow.jobs}
    for parent, kids in workflow.dependencies.items():
        for child in kids:
            children[parent].append(child)
            parents[child].append(parent)
    files: dict[str, int | None] = {}
    spec_tasks, exec_tasks = [], []
    for job in workflow.jobs.values():
        for use in job.uses:
            if files.get(use.lfn) is None:
                files[use.lfn] = use.size
        spec_tasks.append({
            "name": job.id, "id": job.id, "children": children[job.id], "parents": parents[job.id],
            "inputFiles": [u.lfn for u in job.uses if u.type == "input"],
            "outputFiles": [u.lfn for u in job.uses if u.type != "input"]})
        redirections = [w for stream, lfn in (("<", job.stdin), (">", job.stdout), ("2>", job.stderr)) if lfn
                        for w in (stream, lfn if not _shell_syntax(lfn) else shlex.quote(lfn))]
        command = {"program": job.name,
                   "arguments": _command_line(tuple(map(str, job.arguments))) + redirections}
        run: dict[str, Any] = {"id": job.id, "command": command}
        pegasus = job.profiles.get("pegasus", {})
        if "runtime" in pegasus:
            run["runtimeInSeconds"] = float(pegasus["runtime"])
        if "cores" in pegasus:
            run["coreCount"] = int(float(pegasus["cores"]))
        exec_tasks.append(run)
    doc = {
        "name": workflow.name, "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": spec_tasks,
                              "files": [{"id": lfn, **({"sizeInBytes": size} if size is not None else {})}
                                        for lfn, size in files.items()]},
            "execution": {"tasks": exec_tasks}}}
    return msgspec.json.format(msgspec.json.encode(doc), indent=1)


def write_wfcommons(workflow: Workflow, path: str | os.PathLike[str]) -> None:
    Path(path).write_bytes(dumps_wfcommons(workflow))


def _byte_position(raw: bytes, message: str) -> tuple[int | None, int | None]:
    marker = "(byte "
    at = message.rfind(marker)
    if at < 0:
        return None, None
    try:
        offset = int(message[at + len(marker):].rstrip(")"))
    except ValueError:
        return None, None
    line = raw.count(b"\n", 0, offset) + 1
    return line, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1


def _locate(raw: bytes, value: Any) -> tuple[int | None, int | None]:
    """Line and column of the first JSON string equal to ``value`` (error path only)."""
    if value is None:
        return None, None
    needle = msgspec.json.encode(str(value))
    offset = raw.find(needle)
    if offset < 0:
        return None, None
    line = raw.count(b"\n", 0, offset) + 1
    return line, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
