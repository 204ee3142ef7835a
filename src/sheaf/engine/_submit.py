"""HTCondor submit descriptions expanded per node attempt into what a Backend launches.

The language itself (lines, if/else, ``queue``, macros and their functions) is read by
``sheaf.formats._submit_lang``; this module decides the values DAGMan and condor_submit give a node's
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
from dataclasses import dataclass

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.engine._backend import FileTransfer
from sheaf.errors import FormatError
from sheaf.formats._dagman_records import InlineDescription, NodeSpec
from sheaf.formats._submit_lang import effective_values, parse_submit, parse_submit_lines
from sheaf.formats._submit_macros import Macros
from sheaf.formats._submit_queue import queue_items
from sheaf.formats._submit_records import SubmitDescription
from sheaf.formats._submit_template import MacroSource, memoised_macros

_OWNER = os.environ.get("USER", "sheaf")
UNIVERSES = {"vanilla": 5, "local": 12, "scheduler": 7, "grid": 9, "java": 10, "parallel": 11,
             "standard": 1, "vm": 13, "docker": 5, "container": 5}


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One node attempt, expanded: everything a Backend needs except the ClassAd object itself."""

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
    environment's long PATH above all), and tokenising one is 60 us."""
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
    if value.startswith('"'):
        words = split_arguments(value, where)
    else:
        words = [w for w in value.split(";") if w.strip()]
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


def _request(key: str, value: str, path: str, line: int | None = None) -> str:
    """A request or priority as ClassAd text (``classad.request_expr``: sizes in the request's unit,
    infinite, NaN, negative and out-of-range constants refused), or a located ``FormatError``."""
    try:
        return classad.request_expr(key, value)
    except classad.RequestError as exc:
        raise _error(path, line, exc.message, exc.rule, value) from None


def memory_mb(value: str, path: str = "<request_memory>") -> str:
    return _request("request_memory", value, path)  # a bare number is MiB


def disk_kb(value: str, path: str = "<request_disk>") -> str:
    return _request("request_disk", value, path)  # a bare number is KiB


def _resolve(base: str, name: str) -> str:
    return name if os.path.isabs(name) else os.path.normpath(os.path.join(base, name))


def node_description(spec: NodeSpec, descriptions: Mapping[str, InlineDescription]) -> SubmitDescription:
    """A node's submit description: an inline one of the DAG file (DAGMan queues it once when it has no
    queue statement), else its submit file."""
    if spec.description is not None:
        inline = descriptions[spec.description]
        return parse_submit_lines(inline.lines, inline.path, spec.directory, need_queue=False)
    return parse_submit(spec.submit)


def proc_rows(desc: SubmitDescription, directory: str) -> list[dict[str, str]]:
    """The procs a node's job has, each with its predefined per-proc macros: ``queue N`` gives N,
    ``queue ... in/from/matching`` N per item (``$(Item)`` or the named variables, ``$(ItemIndex)``,
    ``$(Row)``, ``$(Step)``), always numbered by ``$(Process)`` from 0."""
    queue = desc.queue
    if queue.simple:
        return [{}]
    try:
        items = queue_items(queue, directory)
    except FormatError as exc:
        raise exc.located(desc.path) from None
    rows: list[dict[str, str]] = []
    for index, item in enumerate(items):
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


_PER_PROC = frozenset({"Process", "ProcId", "Step", "Row", "ItemIndex", "Node"})


def _dagman_macros(values: Mapping[str, str], node: str, retry: str) -> dict[str, str]:
    """VARS values with DAGMan's own ``$(JOB)``/``$(RETRY)`` put in, as DAGMan does before submitting."""
    return {k: v.replace("$(JOB)", node).replace("$(RETRY)", retry) if "$(" in v else v
            for k, v in values.items()}


def render(desc: SubmitDescription, node: str, attempt: int, cluster: int, directory: str,
           dag_vars: Mapping[str, str], prepend: Mapping[str, str] | None = None,
           proc: Mapping[str, str] | None = None, memo: bool = True) -> JobSpec:
    """Expand ``desc`` for one attempt of ``node`` (DAGMan's ``$(JOB)``/``$(RETRY)`` in VARS too):
    ``dag_vars`` are appended (they override the file), ``prepend`` the values the file overrides,
    ``proc`` one row of :func:`proc_rows`.  A description without if/else is expanded through its
    memoised template (``sheaf.formats._submit_template``, the same text); ``memo=False`` expands
    it afresh, as the equivalence tests compare."""
    retry = str(attempt)
    vars_ = _dagman_macros(dag_vars, node, retry)
    before = _dagman_macros(prepend or {}, node, retry)
    predefined = {"Cluster": str(cluster), "ClusterId": str(cluster), "Process": "0", "ProcId": "0",
                  "Node": "0", "Step": "0", "Row": "0", "Item": "", "ItemIndex": "0", "dag_node_name": node,
                  **(proc or {})}
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
    iwd = _resolve(submit_dir, ex.get("initialdir", "") or submit_dir)
    exe = ex.get("executable")
    local = "/" in exe or os.path.exists(os.path.join(submit_dir, exe))
    exe_path = _resolve(submit_dir, exe) if local else exe
    raw_args = ex.get("arguments", ex.get("args", ""))
    args = split_arguments(raw_args, desc.path)  # checked now, whatever the $$() expand to later
    if "$$(" in raw_args:  # the schedd expands the whole text, then it is split: kept whole till then
        args = [ARGUMENTS_MARK + raw_args]
    env = _getenv(ex.get("getenv", "false"))
    env.update(split_environment(ex.get("environment", ex.get("env", "")), desc.path))
    stdout = _resolve(iwd, ex.get("output", "") or os.devnull)
    stderr = _resolve(iwd, ex.get("error", "") or os.devnull)
    stdin = _resolve(iwd, ex.get("input", "") or os.devnull)
    universe = (ex.get("universe", "vanilla") or "vanilla").lower()
    if universe not in UNIVERSES:
        raise _error(desc.path, values.get("universe", ("", None))[1], "unknown universe",
                     "universe is one of " + ", ".join(sorted(UNIVERSES)), universe)
    ad = _job_ad(desc, ex, attrs, node, attempt, cluster, exe_path, iwd, universe, vars_, before)
    if proc:
        ad["ProcId"] = _literal(int(proc.get("ProcId", "0")))
    site = ad.get("pegasus_site")
    return JobSpec((exe_path, *args), env, iwd, stdout, stderr, universe, ad,
                   site if isinstance(site, str) else None, stdin, _transfer(ex, iwd, desc.path))


def _transfer(ex: MacroSource, iwd: str, where: str) -> FileTransfer | None:
    """HTCondor file transfer from ``should_transfer_files``: ``YES`` transfers; ``NO`` and ``IF_NEEDED``
    do not (on one machine the file system is always shared, which is what IF_NEEDED asks).  Lists are
    separated by commas (white space around names ignored); inputs are relative to ``initialdir``."""
    mode = ex.get("should_transfer_files", "").strip().upper()
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


def _expr(desc: SubmitDescription, key: str, text: str) -> classad.Expr:
    """A ClassAd expression from the submit file (``classad.parse`` caches text -> Expr)."""
    try:
        return classad.parse(text)
    except ValueError as exc:
        line = desc.values.get(key.lower(), ("", None))[1]
        raise _error(desc.path, line, f"{key} is not a ClassAd expression",
                     "the value is a ClassAd expression", text) from exc


# submit command -> job ad attribute, checked by ``classad.request_expr`` (request_gpus is checked
# and advertised, though the local pool has no GPUs to match it against)
_REQUESTS = (("request_cpus", "RequestCpus"), ("request_memory", "RequestMemory"),
             ("request_disk", "RequestDisk"), ("request_gpus", "RequestGpus"), ("priority", "JobPrio"))


# submit command -> job ad attribute holding its ClassAd expression; the periodic_* policy is
# evaluated by the local backend as the schedd evaluates it
_EXPRESSIONS = (("requirements", "Requirements"), ("rank", "Rank"), ("periodic_hold", "PeriodicHold"),
                ("periodic_release", "PeriodicRelease"), ("periodic_remove", "PeriodicRemove"),
                ("periodic_hold_reason", "PeriodicHoldReason"),
                ("periodic_hold_subcode", "PeriodicHoldSubCode"))


# submit command -> job ad attribute holding its value as a string, as condor_submit sets them; a
# backend reads them (a grid universe job's ``grid_resource = batch slurm`` routes it to Slurm, and
# the ``batch_*`` commands are BLAHP's options for the batch system)
_STRINGS = (("grid_resource", "GridResource"), ("batch_extra_submit_args", "BatchExtraSubmitArgs"),
            ("batch_queue", "BatchQueue"), ("batch_project", "BatchProject"))

# submit command -> string attribute whose value condor_submit takes without its surrounding quotes
_QUOTED_STRINGS = (("batch_name", "JobBatchName"),)


@functools.lru_cache(maxsize=1 << 16)
def _literal(value: str | int) -> classad.Expr:
    """The Expr of a literal, shared between ads (most values repeat: executables, directories, ints)."""
    scratch = ClassAd()
    scratch["v"] = value
    return scratch.lookup("v")


def _ad_vars(desc: SubmitDescription, ex: MacroSource,
             values: Mapping[str, str]) -> list[tuple[str, classad.Expr]]:
    """VARS ``+Attr="v"`` and ``My.Attr="v"`` go to the ad as-is."""
    out = []
    for key, raw in values.items():
        if key.startswith("+") or key.lower().startswith("my."):
            out.append((key[1:] if key.startswith("+") else key[3:], _expr(desc, key, ex.expand(raw))))
    return out


# the (submit command, default) calls the shared part of a job ad is made of, asked in one batch
_AD_CALLS = (*((key, "1" if key == "request_cpus" else "") for key, _ in _REQUESTS),
             *((key, "") for key, _ in _EXPRESSIONS), ("concurrency_limits", ""),
             *((key, "") for key, _ in _STRINGS), *((key, "") for key, _ in _QUOTED_STRINGS),
             ("notification", "never"))
_SHARED_LIMIT = 4096
# (the values of _AD_CALLS, Cmd, Iwd, universe) -> the ad they make: the same for every node of a
# description, as a rule; an error is raised again each time, with the description's line
_SHARED: dict[tuple[object, ...], ClassAd] = {}


def _job_ad(desc: SubmitDescription, ex: MacroSource, attrs_raw: Mapping[str, str], node: str, attempt: int,
            cluster: int, exe: str, iwd: str, universe: str, vars_: Mapping[str, str],
            before: Mapping[str, str]) -> ClassAd:
    """The job ad: a copy of a shared template (the attributes every node of a description has alike:
    command, directories, requests, policy expressions), then the ``+Attr`` lines and VARS (which
    differ per node: ``$(JOB)``, a task id) and the three attributes that differ per attempt.
    Literals need no parsing; expressions are parsed once."""
    values = ex.get_all(_AD_CALLS)
    key = (values, exe, iwd, universe)
    shared = _SHARED.get(key)
    if shared is None:
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        shared = _SHARED[key] = _shared_ad(desc, values, exe, iwd, universe)
    ad = shared.copy()
    # the +Attr lines and VARS: set in this order, so that a later one overrides an earlier one
    for name, expr in _ad_vars(desc, ex, before):  # prepended: the file's own +Attr lines win
        ad[name] = expr
    for name, raw in attrs_raw.items():
        ad[name] = _expr(desc, "+" + name, ex.expand(raw))
    for name, expr in _ad_vars(desc, ex, vars_):
        ad[name] = expr
    ad["ClusterId"] = cluster  # a literal each: these differ per node (no cache would hit)
    ad["DAGNodeName"] = node
    ad["DAGNodeRetry"] = _literal(attempt)  # always the attempt number, whatever VARS said
    return ad


_NOTIFICATIONS = {"never": 0, "always": 1, "complete": 2, "error": 3, "start": 4}  # proc.h's NOTIFY_*


def _notification(desc: SubmitDescription, value: str) -> int:
    """``notification``: the job ad's ``JobNotification`` (condor_submit's default: Never)."""
    number = _NOTIFICATIONS.get(value.strip().lower())
    if number is None:
        raise _error(desc.path, desc.values.get("notification", ("", None))[1], "unknown notification",
                     "notification is Always, Complete, Start, Error or Never", value)
    return number


def _shared_ad(desc: SubmitDescription, values: tuple[str, ...], exe: str, iwd: str,
               universe: str) -> ClassAd:
    """The attributes of a job ad that do not depend on the node, from the values of ``_AD_CALLS``."""
    attrs: list[tuple[str, classad.Expr]] = [
        ("ProcId", _literal(0)), ("Cmd", _literal(exe)), ("Iwd", _literal(iwd)),
        ("JobUniverse", _literal(UNIVERSES[universe])), ("Universe", _literal(universe)),
        ("Owner", _literal(_OWNER))]
    got = dict(zip((key for key, _ in _AD_CALLS), values, strict=True))
    for key, attr in _REQUESTS:
        value = got[key]
        if value or key == "request_cpus":
            line = desc.values.get(key, ("", None))[1]
            attrs.append((attr, _expr(desc, key, _request(key, value or "1", desc.path, line))))
    for key, attr in _EXPRESSIONS:
        if got[key]:
            attrs.append((attr, _expr(desc, key, got[key])))
    if got["concurrency_limits"]:
        attrs.append(("ConcurrencyLimits", _literal(got["concurrency_limits"])))
    attrs.append(("JobNotification", _literal(_notification(desc, got["notification"]))))
    for key, attr in _STRINGS:
        if got[key]:
            attrs.append((attr, _literal(got[key])))
    for key, attr in _QUOTED_STRINGS:
        value = _unquoted(got[key])
        if value:
            attrs.append((attr, _literal(value)))
    ad = ClassAd()
    for name, expr in attrs:
        ad[name] = expr
    return ad


def _unquoted(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
