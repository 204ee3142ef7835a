"""HTCondor submit descriptions expanded per node attempt into what a Backend launches.

The language itself (lines, if/else, ``queue``, macros and their functions) is read by
``sheaf.condor._submit_lang``; this module decides the values DAGMan and condor_submit give a node's
job: the layers of macros (the node's *appended* DAG ``VARS``, set after the file is read so they
override it; the file's own keys; the *prepended* values, set before the file is read: ``VARS ...
PREPEND``, plain VARS unless ``DAGMAN_DEFAULT_APPEND_VARS`` is true, and what DAGMan itself passes -
``JOB``, ``RETRY``, ``DAG_STATUS``, ``FAILED_COUNT``, ``priority`` - so a file's own ``priority`` wins
over the node's PRIORITY, as the manual says; then ``$(Cluster)``/``$(ClusterId)``,
``$(Process)``/``$(ProcId)``, ``$(Step)``, ``$(Row)``, ``$(ItemIndex)``, the queue statement's item
variables and ``$(dag_node_name)``).  ``$$(attr)`` is left alone: it is expanded at match time.  An
unknown macro expands to the empty string, as in condor_submit.  ``$INT()``/``$REAL()`` evaluate with
the ClassAd evaluator.

``queue N`` and ``queue ... in/from/matching`` give a node several procs (``proc_rows``): one
:class:`JobSpec` per proc, all in the node's cluster.

``arguments`` and ``environment`` are tokenised exactly as HTCondor documents: the *new* syntax is a
value surrounded by double quotes (read by ``sheaf.classad.split_v2_args``, HTCondor's V2 reader:
whitespace separates, single quotes group, ``''`` is a literal single quote; ``""`` a literal double
quote); the *old* syntax splits arguments on whitespace with ``\\"`` for a literal double quote, and
environment entries on ``;``.

``should_transfer_files = YES`` makes the attempt's :class:`FileTransfer` (``transfer_input_files``
resolved against ``initialdir``, ``transfer_output_files`` as names, unset meaning "every new file"):
the backend runs it in a sandbox as HTCondor does.  ``IF_NEEDED`` transfers nothing, since on one
machine the file system is shared.

A broken file raises :class:`sheaf.errors.FormatError` with path, line, rule and value.
"""

from __future__ import annotations

__all__ = [
    "ARGUMENTS_MARK",
    "JobSpec",
    "SubmitDescription",
    "disk_kb",
    "memory_mb",
    "node_description",
    "parse_submit",
    "proc_rows",
    "render",
    "split_arguments",
    "split_environment",
]

import fnmatch
import functools
import os
import re
from collections.abc import Mapping
from typing import NamedTuple

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.condor import (
    InlineDescription,
    Macros,
    MacroSource,
    NodeSpec,
    Queue,
    SubmitDescription,
    effective_values,
    memoised_macros,
    parse_queue,
    parse_submit,
    parse_submit_lines,
    queue_items,
    v1_environment_entries,
)
from sheaf.engine._backend import FileTransfer
from sheaf.engine._jobad import UNIVERSES, job_ad, literal, request_text
from sheaf.errors import FormatError


class JobSpec(NamedTuple):
    """One node attempt, expanded: everything a Backend needs except the ClassAd object itself.  A
    named tuple: immutable as a frozen dataclass, and made at a third of its cost (one per attempt)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdout: str
    stderr: str
    universe: str
    ad: ClassAd  # the job ad: request_* stay expressions (DAGNodeRetry in scope at match time)
    site: str | None  # +pegasus_site (the jobTag of jobstate.log)
    stdin: str = os.devnull  # ``input``: the file the job reads as its standard input
    transfer: FileTransfer | None = None  # ``should_transfer_files = YES``: HTCondor file transfer


#: the universes whose executable condor_submit does not look for (an image's, a VM's, a grid job's)
_NO_EXECUTABLE_CHECK = frozenset({"docker", "container", "vm", "grid"})


def missing_executable(job: JobSpec) -> str | None:
    """The job's executable, when condor_submit would refuse the job for it: a path that names no file,
    unless ``transfer_executable = false`` (the execute machine has it) or the universe runs no
    executable of its own."""
    exe = job.argv[0] if job.argv else ""
    if "/" not in exe or "$$(" in exe or job.universe in _NO_EXECUTABLE_CHECK or os.path.exists(exe):
        return None
    return None if job.ad.get("TransferExecutable") is False else exe


def _error(desc_path: str, line: int | None, message: str, rule: str, value: object) -> FormatError:
    return FormatError(message, rule=rule, value=value, path=desc_path, line=line)


# An argv element holding a description's whole ``arguments`` text that has ``$$()`` references: split
# once they are expanded (``_dollar``), as the schedd expands the text before the starter splits it.
ARGUMENTS_MARK = "\x00arguments\x00"


def split_arguments(value: str, where: str = "<arguments>") -> list[str]:
    """Tokenise an ``arguments`` value (new syntax when surrounded by double quotes, else old)."""
    return list(_split_arguments(value, where))


@functools.lru_cache(maxsize=1024)
def _split_arguments(value: str, where: str) -> tuple[str, ...]:
    """Cached by text: the nodes of a shared description mostly repeat their values (the
    environment's long PATH above all), and tokenising a long one is costly."""
    return tuple(_tokenise_arguments(value, where))


def _tokenise_arguments(value: str, where: str) -> list[str]:
    value = value.strip()
    if value.startswith('"'):
        if len(value) < 2 or not value.endswith('"') or _unpaired_quote(value[1:-1]):
            raise FormatError("unterminated double quote", rule='new syntax: arguments = "a b \'c d\'"',
                              value=value, path=where)
        return _split_new(value[1:-1], where)
    out: list[str] = []
    for word in value.split():
        if '"' in word.replace('\\"', ""):
            raise FormatError("a double quote in old-syntax arguments must be escaped as \\\"",
                              rule='old syntax: arguments = a b \\"c\\"', value=value, path=where)
        out.append(word.replace('\\"', '"'))
    return out


def _unpaired_quote(inner: str) -> bool:
    """Inside new syntax a double quote only appears doubled ("")."""
    return bool(re.search(r'(?<!")"(?!")', inner.replace('""', "")))


def _split_new(inner: str, where: str) -> list[str]:
    words = classad.split_v2_args(inner.replace('""', '"'))
    if words is None:
        raise FormatError("unterminated single quote", rule="single quotes group words in pairs",
                          value=inner, path=where)
    return words


def split_environment(value: str, where: str = "<environment>") -> dict[str, str]:
    """Parse an ``environment`` value: quoted new syntax ``"a=b c='d e'"`` or old ``a=b;c=d``."""
    return dict(_split_environment(value, where))


@functools.lru_cache(maxsize=1024)
def _split_environment(value: str, where: str) -> tuple[tuple[str, str], ...]:
    value = value.strip()
    words = split_arguments(value, where) if value.startswith('"') else v1_environment_entries(value)
    env: dict[str, str] = {}
    for word in words:
        if word.strip().startswith("$$(") and word.strip().endswith(")") and "=" not in word:
            # a whole $$(Attr) entry stands for the entries it expands to (the USCMS report's
            # ``environment = $$(SiteEnvironment);...``); kept until the match expands it
            env[word.strip()] = word.strip()
            continue
        name, eq, val = word.partition("=")
        if not eq or not name.strip():
            raise FormatError("environment entry is not name=value", rule="environment = \"a=b c=d\"",
                              value=word, path=where)
        env[name.strip()] = val
    return tuple(env.items())


def _getenv(value: str) -> dict[str, str]:
    flag = value.strip().lower()
    if flag in ("true", "yes", "1"):
        return dict(os.environ)
    if flag in ("false", "no", "0", ""):
        return {}
    patterns = [p.strip() for p in value.split(",") if p.strip()]
    return {k: v for k, v in os.environ.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}


def memory_mb(value: str, path: str = "<request_memory>") -> str:
    return request_text("request_memory", value, path)  # a bare number is MiB


def disk_kb(value: str, path: str = "<request_disk>") -> str:
    return request_text("request_disk", value, path)  # a bare number is KiB


def _resolve(base: str, name: str) -> str:
    # a POSIX path is absolute when it starts with "/" (``posixpath.isabs``, without its call chain:
    # five paths per node attempt)
    return name if name.startswith("/") else os.path.normpath(os.path.join(base, name))


def node_description(spec: NodeSpec, descriptions: Mapping[str, InlineDescription]) -> SubmitDescription:
    """A node's submit description: an inline one of the DAG file (DAGMan queues it once when it has no
    queue statement), else its submit file."""
    if spec.description is not None:
        inline = descriptions[spec.description]
        return parse_submit_lines(inline.lines, inline.path, spec.directory, need_queue=False)
    return parse_submit(spec.submit)


def proc_rows(desc: SubmitDescription, directory: str, queue: Queue | None = None) -> list[dict[str, str]]:
    """The procs a node's job has, each with its predefined per-proc macros: ``queue N`` gives N,
    ``queue ... in/from/matching`` N per item (``$(Item)`` or the named variables, ``$(ItemIndex)``,
    ``$(Row)``, ``$(Step)``), always numbered by ``$(Process)`` from 0.  ``queue``: the statement as
    ``expand_queue`` read it, for one that uses macros."""
    queue = queue or desc.queue
    if queue.simple:
        return [{}]
    try:
        items = queue_items(queue, directory)
    except FormatError as exc:
        raise exc.located(desc.path) from None
    rows: list[dict[str, str]] = []
    for index in queue.selected(len(items)):  # a slice keeps its items' own indices, as condor_submit
        item = items[index]
        for step in range(queue.count):
            proc = str(len(rows))
            rows.append({**item, "Process": proc, "ProcId": proc, "Step": str(step), "Row": str(index),
                         "ItemIndex": str(index), "Node": proc})
    return rows


def _evaluate(text: str) -> object:
    """``$INT()``/``$REAL()``: a ClassAd expression with no attribute references."""
    try:
        return classad.evaluate(classad.parse(text))
    except ValueError:
        return None


#: The submit commands ``render`` reads, asked in one batch (``MacroSource.get_all``: a template fills only
#: those that differ per node).  In the order single calls made them: ``args`` is the fallback of
#: ``arguments`` and ``env`` of ``environment``, asked first; ``_UNSET`` (no text holds it) stands
#: for "not set", where the fallback is then taken.
_UNSET = "\x01unset"
_RENDER_CALLS = (("initialdir", ""), ("executable", ""), ("args", ""), ("arguments", _UNSET),
                 ("getenv", "false"), ("env", ""), ("environment", _UNSET), ("output", ""), ("error", ""),
                 ("input", ""), ("universe", "vanilla"), ("should_transfer_files", ""), ("log", ""))
_PER_PROC = frozenset({"Process", "ProcId", "Step", "Row", "ItemIndex", "Node"})


def _dagman_macros(values: Mapping[str, str], node: str, retry: str) -> dict[str, str]:
    """VARS values with DAGMan's own ``$(JOB)``/``$(RETRY)`` put in, as DAGMan does before submitting."""
    return {k: v.replace("$(JOB)", node).replace("$(RETRY)", retry) if "$(" in v else v
            for k, v in values.items()}


def _predefined(node: str, cluster: int, proc: Mapping[str, str] | None) -> dict[str, str]:
    return {"Cluster": str(cluster), "ClusterId": str(cluster), "Process": "0", "ProcId": "0", "Node": "0",
            "Step": "0", "Row": "0", "Item": "", "ItemIndex": "0", "dag_node_name": node, **(proc or {})}


def expand_queue(desc: SubmitDescription, node: str, attempt: int, cluster: int,
                 dag_vars: Mapping[str, str], prepend: Mapping[str, str] | None = None) -> Queue:
    """The queue statement of ``desc`` read with its macros expanded, as condor_submit expands the
    whole statement before it parses it (``queue code from $(filename)``); ``desc.queue`` itself
    when it uses none.  The macros are those of :func:`render` before any proc."""
    queue = desc.queue
    if not queue.raw:
        return queue
    retry = str(attempt)
    macros = Macros(desc.path, desc.values, appended=_dagman_macros(dag_vars, node, retry),
                    prepended=_dagman_macros(prepend or {}, node, retry),
                    predefined=_predefined(node, cluster, None), evaluate=_evaluate)
    if desc.statements:
        macros.file = effective_values(desc, macros)[0]
    expanded = [(number, macros.expand(text)) for number, text in queue.raw]
    try:
        return parse_queue(expanded, 0, desc.path)[0]
    except FormatError as exc:
        raise exc.located(desc.path) from None


def render(desc: SubmitDescription, node: str, attempt: int, cluster: int, directory: str,
           dag_vars: Mapping[str, str], prepend: Mapping[str, str] | None = None,
           proc: Mapping[str, str] | None = None, memo: bool = True) -> JobSpec:
    """Expand ``desc`` for one attempt of ``node`` (DAGMan's ``$(JOB)``/``$(RETRY)`` in VARS too):
    ``dag_vars`` are appended (they override the file), ``prepend`` the values the file overrides,
    ``proc`` one row of :func:`proc_rows`.  A description without if/else is expanded through its
    memoised template (``sheaf.condor._submit_template``, the same text); ``memo=False`` expands
    it afresh, as the equivalence tests compare."""
    retry = str(attempt)
    vars_ = _dagman_macros(dag_vars, node, retry)
    before = _dagman_macros(prepend or {}, node, retry)
    predefined = _predefined(node, cluster, proc)
    # a queue statement's item variables are condor_submit's "live" values, set once the file is
    # read: they win over the file and are submit commands themselves (``queue input in ...``)
    items = {k: v for k, v in (proc or {}).items() if k not in _PER_PROC}
    appended = {**items, **vars_} if items else vars_
    ex: MacroSource
    if desc.statements or not memo:
        macros = Macros(desc.path, desc.values, appended=appended, prepended=before, predefined=predefined,
                        evaluate=_evaluate)
        values, attrs = effective_values(desc, macros)
        macros.file = values
        ex = macros
    else:
        values, attrs = desc.values, desc.attrs
        ex = memoised_macros(desc.path, desc.values, appended=appended, prepended=before,
                             predefined=predefined, evaluate=_evaluate)
    submit_dir = directory
    (initialdir, exe, old_args, raw_args, getenv, old_env, environment, output, error, input_, universe,
     transfer, user_log) = ex.get_all(_RENDER_CALLS)
    iwd = _resolve(submit_dir, initialdir or submit_dir)
    local = "/" in exe or os.path.exists(os.path.join(submit_dir, exe))
    exe_path = _resolve(submit_dir, exe) if local else exe
    if raw_args == _UNSET:
        raw_args = old_args
    args = split_arguments(raw_args, desc.path)  # checked now, whatever the $$() expand to later
    if "$$(" in raw_args:  # the schedd expands the whole text, then it is split: kept whole till then
        args = [ARGUMENTS_MARK + raw_args]
    env = _getenv(getenv)
    env.update(split_environment(old_env if environment == _UNSET else environment, desc.path))
    stdout = _resolve(iwd, output or os.devnull)
    stderr = _resolve(iwd, error or os.devnull)
    stdin = _resolve(iwd, input_ or os.devnull)
    universe = (universe or "vanilla").lower()
    if universe not in UNIVERSES:
        raise _error(desc.path, values.get("universe", ("", None))[1], "unknown universe",
                     "universe is one of " + ", ".join(sorted(UNIVERSES)), universe)
    ad = job_ad(desc, ex, attrs, node, attempt, cluster, exe_path, iwd, universe, vars_, before)
    if proc:
        ad["ProcId"] = literal(int(proc.get("ProcId", "0")))
    if user_log:  # the job's own event log (a relative path is the initial directory's), as UserLog
        ad["UserLog"] = literal(_resolve(iwd, user_log))
    site = ad.get("pegasus_site")
    return JobSpec((exe_path, *args), env, iwd, stdout, stderr, universe, ad,
                   site if isinstance(site, str) else None, stdin, _transfer(ex, transfer, iwd, desc.path))


def _transfer(ex: MacroSource, mode: str, iwd: str, where: str) -> FileTransfer | None:
    """HTCondor file transfer from ``should_transfer_files`` (``mode``): ``YES`` transfers; ``NO`` and
    ``IF_NEEDED`` do not (on one machine the file system is always shared, which is what IF_NEEDED
    asks).  Lists are separated by commas (white space around names ignored); inputs are relative to
    ``initialdir``."""
    mode = mode.strip().upper()
    if mode not in ("YES", "TRUE"):
        if mode not in ("", "NO", "FALSE", "IF_NEEDED"):
            raise FormatError("unknown should_transfer_files", rule="should_transfer_files is YES, NO or "
                              "IF_NEEDED", value=mode, path=where)
        return None
    names = _names(ex.get("transfer_input_files", ""))
    inputs = tuple(_keep_slash(_resolve(iwd, name), name) for name in names)
    raw = ex.get("transfer_output_files", "\0")  # NUL: not set (then every new or changed file)
    when = ex.get("when_to_transfer_output", "ON_EXIT").strip().upper() or "ON_EXIT"
    if when not in ("ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS"):
        raise FormatError("unknown when_to_transfer_output", rule="when_to_transfer_output is ON_EXIT, "
                          "ON_EXIT_OR_EVICT or ON_SUCCESS", value=when, path=where)
    remaps = tuple((name, _resolve(iwd, target))
                   for name, target in _remaps(ex.get("transfer_output_remaps", ""), where))
    preserve = ex.get("preserve_relative_paths", "").strip().lower() in ("true", "yes", "1")
    return FileTransfer(inputs, None if raw == "\0" else tuple(_names(raw)), remaps=remaps,
                        on_success=when == "ON_SUCCESS", preserve_relative_paths=preserve, names=tuple(names))


_UNESCAPED = {";": re.compile(r"(?<!\\);"), "=": re.compile(r"(?<!\\)=")}


def _remaps(value: str, where: str) -> list[tuple[str, str]]:
    """``transfer_output_remaps = "name = newname ; name2 = newname2"`` (quotes optional; ``\\=`` and
    ``\\;`` are literal characters of a name)."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    pairs: list[tuple[str, str]] = []
    for entry in _UNESCAPED[";"].split(text):
        if not entry.strip():
            continue
        parts = _UNESCAPED["="].split(entry)
        names = [part.strip().replace("\\=", "=").replace("\\;", ";") for part in parts]
        if len(names) != 2 or not all(names):
            raise FormatError("transfer_output_remaps entry is not name = newname",
                              rule='transfer_output_remaps = "name = newname ; name2 = newname2"',
                              value=entry.strip(), path=where)
        pairs.append((names[0], names[1]))
    return pairs


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _keep_slash(path: str, name: str) -> str:
    return path + "/" if name.endswith("/") and not path.endswith("/") else path
