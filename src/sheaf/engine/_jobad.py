"""The job ad of one node attempt, as condor_submit makes it from an expanded submit description.

An ad is made in three layers, set in this order (a later assignment overrides an earlier one; an
attribute keeps the position and the spelling of its first assignment, as ClassAd assignment does):

1. the *shared* attributes, alike for every node of a description as a rule - command, initial
   directory, universe, owner, requests, policy expressions, concurrency limits, batch strings,
   notification: one ad per distinct set of their values (``_SHARED``), copied for each node;
2. the ``+Attr``/``MY.Attr`` assignments: the prepended VARS, the file's own lines, then the
   appended VARS (which differ per node: ``$(JOB)``, a task id);
3. ``ClusterId``, ``DAGNodeName`` and ``DAGNodeRetry``, which differ per attempt.

Recipes.  The nodes expanded through one memoised template (``sheaf.condor._submit_template``)
have the same layer-2 assignments, and for each the same text wherever the template knows its
expansion to be the same for every node (a file's ``+pegasus_site = "local"``; not a VARS value
without ``$``, nor ``$(JOB)``).  So a recipe is made for them once: the base ad, with layers 1 to 3
assigned in order, the constant expressions in place and a stand-in for the others (so that every
attribute has its position and spelling), and the assignments each node still makes, with its own
values.  Per node the base is copied and only those are made; one that a later assignment
overrides is parsed (its error is raised as before) but not set.  A recipe is keyed on the
template, the shared ad, the file's ``+Attr`` mapping (both held, so that the identities stay
theirs) and the appended VARS' keys (the prepended layer is the template's own).  It is made when
its key is met the second time - nodes whose shared ads all differ (a ``request_memory`` of their
own) pay for no recipe they would not reuse - and only when every constant text parses; otherwise,
and for a description expanded without a template, the ad is built assignment by assignment.
"""

from __future__ import annotations

__all__ = ["AD_CALLS", "UNIVERSES", "job_ad", "literal", "request_text", "reset_caches"]

import functools
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass

from sheaf import classad
from sheaf.classad import ClassAd
from sheaf.condor import MacroSource, SubmitDescription, submit_error, template_of


def _account() -> str:
    """The user running sheaf, as condor_submit names a job's Owner: the account of the process's
    uid, else ``$USER`` (a uid with no account)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER", "sheaf")


OWNER = _account()  # the job ads' Owner (and DAGMan's @(OWNER): the user who submitted the DAG)
UNIVERSES = {"vanilla": 5, "local": 12, "scheduler": 7, "grid": 9, "java": 10, "parallel": 11,
             "standard": 1, "vm": 13, "docker": 5, "container": 5}


def request_text(key: str, value: str, path: str, line: int | None = None) -> str:
    """A request or priority as ClassAd text (``classad.request_expr``: sizes in the request's unit,
    infinite, NaN, negative and out-of-range constants refused), or a located ``FormatError``."""
    try:
        return classad.request_expr(key, value)
    except classad.RequestError as exc:
        raise submit_error(path, line, exc.message, exc.rule, value) from None


def _expr(desc: SubmitDescription, key: str, text: str) -> classad.Expr:
    """A ClassAd expression from the submit file (``classad.parse`` caches text -> Expr)."""
    try:
        return classad.parse(text)
    except ValueError as exc:
        line = desc.values.get(key.lower(), ("", None))[1]
        raise submit_error(desc.path, line, f"{key} is not a ClassAd expression",
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
                ("periodic_hold_subcode", "PeriodicHoldSubCode"), ("on_exit_hold", "OnExitHold"),
                ("on_exit_hold_reason", "OnExitHoldReason"), ("on_exit_hold_subcode", "OnExitHoldSubCode"),
                ("allowed_job_duration", "AllowedJobDuration"),
                ("allowed_execute_duration", "AllowedExecuteDuration"))

# the submit commands condor_submit builds a job's ``OnExitRemove`` from (``SubmitHash::SetJobRetries``)
_RETRIES = ("on_exit_remove", "max_retries", "success_exit_code", "retry_until")


# submit command -> job ad attribute holding its value as a string, as condor_submit sets them; a
# backend reads them (a grid universe job's ``grid_resource = batch slurm`` routes it to Slurm, and
# the ``batch_*`` commands are BLAHP's options for the batch system)
_STRINGS = (("grid_resource", "GridResource"), ("batch_extra_submit_args", "BatchExtraSubmitArgs"),
            ("batch_queue", "BatchQueue"), ("batch_project", "BatchProject"))

# submit command -> string attribute whose value condor_submit takes without its surrounding quotes
_QUOTED_STRINGS = (("batch_name", "JobBatchName"),)


@functools.lru_cache(maxsize=1 << 16)
def literal(value: str | int) -> classad.Expr:
    """The Expr of a literal, shared between ads (most values repeat: executables, directories, ints)."""
    scratch = ClassAd()
    scratch["v"] = value
    return scratch.lookup("v")


#: one ``+Attr``/``MY.Attr`` assignment: the attribute, the submit key that locates an error, where
#: its value as written is - the layer (0 the prepended VARS, 1 the file's lines, 2 the appended
#: VARS) and its key there - and whether that value is the same for every node of a template (a
#: file's line; a VARS value with ``$``, which is part of the template's key).  Its text is the value
#: expanded.
Assignment = tuple[str, str, int, str, bool]


def _vars_assignments(values: Mapping[str, str], layer: int) -> list[Assignment]:
    """VARS ``+Attr="v"`` and ``My.Attr="v"`` go to the ad as-is."""
    return [(key[1:] if key.startswith("+") else key[3:], key, layer, key, "$" in raw)
            for key, raw in values.items() if key.startswith("+") or key.lower().startswith("my.")]


def _assignments(attrs_raw: Mapping[str, str], vars_: Mapping[str, str],
                 before: Mapping[str, str]) -> list[Assignment]:
    """Layer 2 in the order it is set: the prepended VARS (the file's own +Attr lines win over
    them), the file's lines, the appended VARS."""
    return [*_vars_assignments(before, 0), *((name, "+" + name, 1, name, True) for name in attrs_raw),
            *_vars_assignments(vars_, 2)]


# the (submit command, default) calls the shared part of a job ad is made of, asked in one batch;
# condor_submit gives every job RequestCpus 1 and JobPrio 0 when its file sets none
_DEFAULTS = {"request_cpus": "1", "priority": "0"}
AD_CALLS = (*((key, _DEFAULTS.get(key, "")) for key, _ in _REQUESTS),
            *((key, "") for key, _ in _EXPRESSIONS), *((key, "") for key in _RETRIES),
            ("concurrency_limits", ""), ("transfer_executable", ""),
            *((key, "") for key, _ in _STRINGS), *((key, "") for key, _ in _QUOTED_STRINGS),
            ("notification", "never"))
_SHARED_LIMIT = 4096
# (the values of AD_CALLS, Cmd, Iwd, universe) -> the ad they make: the same for every node of a
# description, as a rule; an error is raised again each time, with the description's line
_SHARED: dict[tuple[object, ...], ClassAd] = {}


def job_ad(desc: SubmitDescription, ex: MacroSource, attrs_raw: Mapping[str, str], node: str, attempt: int,
           cluster: int, exe: str, iwd: str, universe: str, vars_: Mapping[str, str],
           before: Mapping[str, str]) -> ClassAd:
    """The job ad (see the module docstring): from the template's recipe, else assignment by
    assignment.  Literals need no parsing; expressions are parsed once."""
    values = ex.get_all(AD_CALLS)
    alike = (values, exe, iwd, universe)
    shared = _SHARED.get(alike)
    if shared is None:
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        shared = _SHARED[alike] = _shared_ad(desc, values, exe, iwd, universe)
    layers = (before, attrs_raw, vars_)
    recipe = _recipe(desc, ex, shared, attrs_raw, vars_, before)
    if recipe is None:
        ad = shared.copy()
        for name, where, layer, key, _ in _assignments(attrs_raw, vars_, before):
            ad[name] = _expr(desc, where, ex.expand(layers[layer][key]))
    else:  # the recipe's base has every attribute in place, with its spelling: values bound anew
        own: dict[str, object] = {}
        for lname, where, layer, key, live in recipe.varying:  # each with this node's own value
            expr = _expr(desc, where, ex.expand(layers[layer][key]))
            if live:
                own[lname] = expr
        own["clusterid"], own["dagnodename"], own["dagnoderetry"] = cluster, node, literal(attempt)
        return ClassAd.derived(recipe.base, own)
    ad["ClusterId"] = cluster  # a literal each: these differ per node (no cache would hit)
    ad["DAGNodeName"] = node
    ad["DAGNodeRetry"] = literal(attempt)  # always the attempt number, whatever VARS said
    return ad


@dataclass(frozen=True, slots=True)
class _Recipe:
    """A template's base ad and the assignments each node makes: (attribute, lower-case, submit key,
    layer, key there, live - False where a later assignment overrides it)."""

    base: ClassAd
    varying: tuple[tuple[str, str, int, str, bool], ...]


_PER_ATTEMPT = ("clusterid", "dagnodename", "dagnoderetry")  # layer 3: set last, for every attempt
_RECIPE_LIMIT = 512
_ONCE = "once"  # a key met once: no recipe yet (nodes whose shared ads all differ pay for none)
# (template, id of the shared ad, id of the file's +Attr mapping, appended VARS keys) ->
# (the shared ad, the +Attr mapping, the recipe, None where a constant text does not parse, or _ONCE)
_RECIPES: dict[tuple[object, ...], tuple[ClassAd, Mapping[str, str], _Recipe | str | None]] = {}


def _recipe(desc: SubmitDescription, ex: MacroSource, shared: ClassAd, attrs_raw: Mapping[str, str],
            vars_: Mapping[str, str], before: Mapping[str, str]) -> _Recipe | None:
    template = template_of(ex)
    if template is None:
        return None
    key = (template, id(shared), id(attrs_raw), tuple(vars_))
    entry = _RECIPES.get(key)
    if entry is None or entry[0] is not shared or entry[1] is not attrs_raw:
        if len(_RECIPES) >= _RECIPE_LIMIT:
            _RECIPES.clear()
        _RECIPES[key] = (shared, attrs_raw, _ONCE)
        return None
    recipe = entry[2]
    if recipe is _ONCE:
        recipe = _new_recipe(desc, ex, shared, attrs_raw, vars_, before)
        _RECIPES[key] = (shared, attrs_raw, recipe)
    return recipe if isinstance(recipe, _Recipe) else None


def reset_caches() -> None:
    """Forget the shared ads and the recipes (tests start from none)."""
    _SHARED.clear()
    _RECIPES.clear()


def _new_recipe(desc: SubmitDescription, ex: MacroSource, shared: ClassAd, attrs_raw: Mapping[str, str],
                vars_: Mapping[str, str], before: Mapping[str, str]) -> _Recipe | None:
    assignments = _assignments(attrs_raw, vars_, before)
    layers = (before, attrs_raw, vars_)
    last = {name.lower(): index for index, (name, *_) in enumerate(assignments)}
    base = shared.copy()
    varying: list[tuple[str, str, int, str, bool]] = []
    for index, (name, where, layer, key, fixed) in enumerate(assignments):
        text = ex.constant(layers[layer][key]) if fixed else None
        if text is None:
            base[name] = literal(0)  # a stand-in: the attribute's position and spelling
            live = last[name.lower()] == index and name.lower() not in _PER_ATTEMPT
            varying.append((name.lower(), where, layer, key, live))
            continue
        try:
            base[name] = _expr(desc, where, text)
        except ValueError:
            return None  # each node raises it, assignment by assignment
    for name in ("ClusterId", "DAGNodeName", "DAGNodeRetry"):
        base[name] = literal(0)
    return _Recipe(base, tuple(varying))


_NOTIFICATIONS = {"never": 0, "always": 1, "complete": 2, "error": 3, "start": 4}  # proc.h's NOTIFY_*


def _notification(desc: SubmitDescription, value: str) -> int:
    """``notification``: the job ad's ``JobNotification`` (condor_submit's default: Never)."""
    number = _NOTIFICATIONS.get(value.strip().lower())
    if number is None:
        raise submit_error(desc.path, desc.values.get("notification", ("", None))[1], "unknown notification",
                           "notification is Always, Complete, Start, Error or Never", value)
    return number


def _shared_ad(desc: SubmitDescription, values: tuple[str, ...], exe: str, iwd: str,
               universe: str) -> ClassAd:
    """The attributes of a job ad that do not depend on the node, from the values of ``AD_CALLS``."""
    attrs: list[tuple[str, classad.Expr]] = [
        ("ProcId", literal(0)), ("Cmd", literal(exe)), ("Iwd", literal(iwd)),
        ("JobUniverse", literal(UNIVERSES[universe])), ("Universe", literal(universe)),
        ("Owner", literal(OWNER))]
    got = dict(zip((key for key, _ in AD_CALLS), values, strict=True))
    for key, attr in _REQUESTS:
        value = got[key]
        if value or key == "request_cpus":
            line = desc.values.get(key, ("", None))[1]
            attrs.append((attr, _expr(desc, key, request_text(key, value or "1", desc.path, line))))
    for key, attr in _EXPRESSIONS:
        if got[key]:
            attrs.append((attr, _expr(desc, key, got[key])))
    attrs += _exit_remove(desc, got)
    if got["transfer_executable"].strip()[:1] in ("f", "F"):  # condor_submit's reading of it
        attrs.append(("TransferExecutable", _FALSE))
    if got["concurrency_limits"]:
        attrs.append(("ConcurrencyLimits", literal(got["concurrency_limits"])))
    attrs.append(("JobNotification", literal(_notification(desc, got["notification"]))))
    for key, attr in _STRINGS:
        if got[key]:
            attrs.append((attr, literal(got[key])))
    for key, attr in _QUOTED_STRINGS:
        value = _unquoted(got[key])
        if value:
            attrs.append((attr, literal(value)))
    ad = ClassAd()
    for name, expr in attrs:
        ad[name] = expr
    return ad


def _exit_remove(desc: SubmitDescription, got: Mapping[str, str]) -> list[tuple[str, classad.Expr]]:
    """``OnExitRemove`` (with ``JobMaxRetries`` and ``JobSuccessExitCode``), as condor_submit makes it:
    ``on_exit_remove`` as written, unless ``max_retries``, ``success_exit_code`` or ``retry_until`` is
    given -- then the job leaves the queue after ``JobMaxRetries`` retries (default 2) or on its success
    exit code (default 0) or the ``retry_until`` code or expression, or when ``on_exit_remove`` says so."""
    own = got["on_exit_remove"].strip()
    if not (got["max_retries"] or got["success_exit_code"] or got["retry_until"]):
        return [("OnExitRemove", _expr(desc, "on_exit_remove", own))] if own else []
    out = [("JobMaxRetries", literal(_integer(desc, "max_retries", got["max_retries"] or "2")))]
    check = "NumJobCompletions > JobMaxRetries || ExitCode =?= 0"
    if got["success_exit_code"]:
        code = _integer(desc, "success_exit_code", got["success_exit_code"])
        out.append(("JobSuccessExitCode", literal(code)))
        check = "NumJobCompletions > JobMaxRetries || ExitCode =?= JobSuccessExitCode"
    until = got["retry_until"].strip()
    if until:
        try:
            code = int(until)
        except ValueError:
            _expr(desc, "retry_until", until)  # an expression: refused here when it does not parse
            check += f" || ({until})"
        else:
            check += f" || ExitCode =?= {code}"
    if own:
        _expr(desc, "on_exit_remove", own)
        check += f" || ({own})"
    return [*out, ("OnExitRemove", _expr(desc, "on_exit_remove", check))]


_FALSE = classad.parse("false")


def _integer(desc: SubmitDescription, key: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise submit_error(desc.path, desc.values.get(key, ("", None))[1], f"{key} is not an integer",
                           f"{key} is an integer", text) from None


def _unquoted(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
