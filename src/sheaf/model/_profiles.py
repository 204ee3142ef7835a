"""Profiles: namespaced key/value settings, their canonical spellings and their precedence.

A profile set is a plain ``dict[namespace, dict[key, str]]``.  Values are always strings (as in
Pegasus; readers stringify YAML numbers and booleans), parsed where they are used, with
``profile_int``/``profile_float`` reporting a malformed value as a ``ValidationError``.

Canonical keys
    Every reader passes user profiles through ``normalize_profiles``, which returns canonical keys
    and warnings.  Namespaces are lower-case.  Per namespace:

    - ``pegasus``: the canonical spelling is Pegasus's dotted one (``clusters.size``).  The spellings
      users also write (``clusters_size``, the Python API's keyword names such as ``job_aggregator``)
      are mapped through the explicit ``PEGASUS_ALIASES`` table -- never a blanket ``_`` -> ``.``
      rewrite, because real keys keep their underscores (``pmc_request_memory``).  A key that is
      neither known nor an alias is kept as written and warned about, naming the nearest known key
      (the Pegasus manual's runtime example writes ``maxruntime`` for ``clusters.maxruntime``).
    - ``dagman``, ``globus``, ``selector``, ``condor``: case-insensitive, canonical lower-case; the
      Python API writes ``RETRY``/``MAXJOBS``, properties write ``dagman.retry``.  Condor custom
      attributes (``+Name``, ``MY.Name``) keep their case: ClassAd names are case-insensitive anyway.
    - ``env``: case-sensitive, kept as written.
    - ``hints`` (Pegasus 4) is read as ``selector`` (``execution.site``); other namespaces are kept
      and warned about.

Precedence (lowest to highest), as the Pegasus manual state: properties < the job in the workflow < the site
catalog < the transformation catalog (its transformation-level profiles, then the profiles of the
transformation's entry for the site).  ``merge_profiles`` applies layers in that order.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from sheaf._fields import INT_MAX, INT_MIN
from sheaf._text import did_you_mean
from sheaf.errors import ValidationError

Profiles = dict[str, dict[str, str]]

NAMESPACES = ("pegasus", "condor", "dagman", "env", "globus", "selector")

#: Pegasus-namespace keys sheaf knows, in their canonical spelling.
PEGASUS_KEYS = frozenset(
    """
    clusters.num clusters.size clusters.maxruntime job.aggregator job.aggregator.arguments
    gridstart gridstart.path gridstart.arguments gridstart.launcher gridstart.launcher.arguments
    stagein.clusters stagein.local.clusters stagein.remote.clusters stageout.clusters
    stageout.local.clusters stageout.remote.clusters group change.dir create.dir transfer.proxy style
    pmc_request_memory pmc_request_cpus pmc_priority pmc_task_arguments
    exitcode.failuremsg exitcode.successmsg checkpoint.time maxwalltime glite.arguments
    glite.arguments.expr auxillary.local condor.arguments.quote runtime runtime.expr cores cores.expr
    gpus gpus.expr nodes ppn memory memory.expr diskspace diskspace.expr data.configuration queue
    queue.expr project project.expr container.arguments container.launcher
    container.launcher.arguments label pegasus_lite_env_source relative.submit.dir tag
    dagman.post dagman.post.arguments dagman.pre dagman.pre.arguments transfer.threads
    transfer.arguments cleanup.arguments nosetup enable_for_data_reuse bypass.staging
    cluster.arguments bundle.stageout bundle.remote.stagein chain.stagein collapse collapser workdir
    wntmp type transfer.lite.arguments transfer.lite.threads nosymlink local.visible gpus
    ssh_private_key s3cfg pegasus_credentials irodsenvfile x509_user_proxy boto_config google_pkcs12
    """.split()  # noqa: SIM905 -- a word list reads best as words
)
"""Every key of Pegasus 5's profile tables (configuration.rst) and of its ``Pegasus`` namespace class,
credential file keys included (``SSH_PRIVATE_KEY``, ``S3CFG``, ...: Pegasus compares them lower-case)."""

#: deprecated Pegasus keys -> the key Pegasus 5 reads instead; accepted with a warning naming it
PEGASUS_DEPRECATED: Mapping[str, str] = {
    "job.runtime": "runtime",
    "bundle.stagein": "stagein.clusters",
}

#: Spellings users write for Pegasus keys -> canonical key.  Explicit on purpose (see module doc).
PEGASUS_ALIASES: Mapping[str, str] = {
    "clusters_num": "clusters.num",
    "clusters_size": "clusters.size",
    "clusters_maxruntime": "clusters.maxruntime",
    "clusters_max_runtime": "clusters.maxruntime",
    "job_aggregator": "job.aggregator",
    "job_aggregator_arguments": "job.aggregator.arguments",
    "grid_start": "gridstart",
    "grid_start_path": "gridstart.path",
    "grid_start_arguments": "gridstart.arguments",
    "grid_start_launcher": "gridstart.launcher",
    "grid_start_launcher_arguments": "gridstart.launcher.arguments",
    "stagein_clusters": "stagein.clusters",
    "stagein_local_clusters": "stagein.local.clusters",
    "stagein_remote_clusters": "stagein.remote.clusters",
    "stageout_clusters": "stageout.clusters",
    "stageout_local_clusters": "stageout.local.clusters",
    "stageout_remote_clusters": "stageout.remote.clusters",
    "change_dir": "change.dir",
    "create_dir": "create.dir",
    "transfer_proxy": "transfer.proxy",
    "exitcode_failure_msg": "exitcode.failuremsg",
    "exitcode_failuremsg": "exitcode.failuremsg",
    "exitcode_success_msg": "exitcode.successmsg",
    "exitcode_successmsg": "exitcode.successmsg",
    "checkpoint_time": "checkpoint.time",
    "max_walltime": "maxwalltime",
    "max_wall_time": "maxwalltime",
    "glite_arguments": "glite.arguments",
    "glite_arguments_expr": "glite.arguments.expr",
    "auxillary_local": "auxillary.local",
    "condor_arguments_quote": "condor.arguments.quote",
    "runtime_expr": "runtime.expr",
    "cores_expr": "cores.expr",
    "gpus_expr": "gpus.expr",
    "memory_expr": "memory.expr",
    "diskspace_expr": "diskspace.expr",
    "data_configuration": "data.configuration",
    "queue_expr": "queue.expr",
    "project_expr": "project.expr",
    "container_arguments": "container.arguments",
    "container_launcher": "container.launcher",
    "container_launcher_arguments": "container.launcher.arguments",
    "relative_submit_dir": "relative.submit.dir",
    "dagman_post": "dagman.post",
    "dagman_post_arguments": "dagman.post.arguments",
    "dagman_pre": "dagman.pre",
    "transfer_threads": "transfer.threads",
}

#: Selector-namespace keys (``hints`` in Pegasus 4).
SELECTOR_KEYS = frozenset({"execution.site", "pfn", "grid.jobtype"})
SELECTOR_ALIASES: Mapping[str, str] = {
    "execution_site": "execution.site",
    "executionpool": "execution.site",
    "grid_job_type": "grid.jobtype",
}

#: Pegasus keys whose value must be an integer / a number; validated by ``check_profile_values``.
INT_KEYS: Mapping[tuple[str, str], int | None] = {
    # (namespace, key) -> minimum allowed value (None: any integer)
    ("pegasus", "clusters.num"): 1,
    ("pegasus", "clusters.size"): 1,
    ("pegasus", "cores"): 0,
    ("pegasus", "gpus"): 0,
    ("pegasus", "nodes"): 1,
    ("pegasus", "ppn"): 1,
    ("pegasus", "pmc_request_cpus"): 0,
    ("pegasus", "pmc_priority"): None,
    ("pegasus", "stagein.clusters"): 1,
    ("pegasus", "stageout.clusters"): 1,
    ("dagman", "retry"): 0,
    ("dagman", "priority"): None,
    ("dagman", "maxjobs"): 0,
    ("dagman", "maxidle"): 0,
    ("dagman", "maxpre"): 0,
    ("dagman", "maxpost"): 0,
    ("globus", "xcount"): 1,
    ("globus", "host_xcount"): 1,
    ("globus", "count"): 1,
}
#: Keys written into the DAG file as numbers (``RETRY``, ``PRIORITY``): a C ``int``, as DAGMan reads them.
DAG_INT_KEYS = frozenset({("dagman", "retry"), ("dagman", "priority")})
NUMBER_KEYS: Mapping[tuple[str, str], float] = {
    ("pegasus", "runtime"): 0.0,
    ("pegasus", "clusters.maxruntime"): 0.0,
    ("pegasus", "maxwalltime"): 0.0,
    ("pegasus", "memory"): 0.0,
    ("pegasus", "diskspace"): 0.0,
    ("pegasus", "pmc_request_memory"): 0.0,
    ("pegasus", "checkpoint.time"): 0.0,
    ("globus", "maxwalltime"): 0.0,
}

#: Keys that may also be ``auto``: the planner chooses the value (``--cluster auto``'s rule).
AUTO_KEYS = frozenset({("pegasus", "clusters.size"), ("pegasus", "clusters.maxruntime")})


def is_auto(raw: object) -> bool:
    return isinstance(raw, str) and raw.strip().lower() == "auto"


_NAMESPACE_ALIASES = {"hints": "selector"}


# Python refuses to write an integer of more digits than this as text (a guard against quadratic
# conversion); YAML loads one fine, so such a value is refused here by name, not with a traceback
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300


def stringify(value: Any) -> str:
    """A profile value as Pegasus holds it: a string (YAML ``true`` -> ``"true"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    try:
        return str(value)
    except ValueError:  # an integer too long to write as text
        raise ValidationError(f"a profile value is an integer of more than {_MAX_DIGITS} digits",
                              rule=f"integers in profiles have at most {_MAX_DIGITS} digits") from None


def canonical_namespace(namespace: str) -> str:
    ns = namespace.strip().lower()
    return _NAMESPACE_ALIASES.get(ns, ns)


def canonical_key(namespace: str, key: str) -> tuple[str, str | None]:
    """Return ``(canonical key, warning or None)`` for a key of a canonical namespace."""
    if namespace == "pegasus":
        if key in PEGASUS_KEYS:
            return key, None
        lowered = key.lower()
        if lowered in PEGASUS_KEYS:
            return lowered, None
        alias = PEGASUS_ALIASES.get(lowered)
        if alias is not None:
            return alias, None
        new = PEGASUS_DEPRECATED.get(lowered)
        if new is not None:
            return new, f"pegasus profile key '{key}' is deprecated: read as '{new}'"
        return key, _unknown_key_warning(namespace, key, PEGASUS_KEYS)
    if namespace == "env":
        return key, None
    if namespace == "condor" and (key.startswith("+") or key[:3].lower() == "my."):
        return key, None
    lowered = key.lower()
    if namespace == "selector":
        lowered = SELECTOR_ALIASES.get(lowered, lowered)
        if lowered not in SELECTOR_KEYS:
            return lowered, _unknown_key_warning(namespace, key, SELECTOR_KEYS)
    return lowered, None


def _unknown_key_warning(namespace: str, key: str, known: Iterable[str]) -> str:
    candidates = list(known)
    if namespace == "pegasus":
        candidates += list(PEGASUS_ALIASES)
    # 'maxruntime' is the last part of 'clusters.maxruntime': a known key ending with it is nearest.
    close = [k for k in sorted(known) if k.endswith("." + key.lower())][:1]
    if not close:
        close = difflib.get_close_matches(key.lower(), candidates, n=1, cutoff=0.6)
    hint = ""
    if close:
        nearest = PEGASUS_ALIASES.get(close[0], close[0]) if namespace == "pegasus" else close[0]
        hint = f"; did you mean '{nearest}'?"
    return f"unknown {namespace} profile key '{key}' (kept as written){hint}"


#: Pegasus's profile namespaces are a closed list (its schemas and its Profile class refuse others)
NAMESPACE_RULE = "a profile namespace is condor, dagman, env, globus, hints, pegasus or selector"


def unknown_namespace(namespace: str) -> str:
    """The message for a profile namespace Pegasus does not have, with the nearest one it has."""
    hint = did_you_mean(namespace.lower(), [*NAMESPACES, "hints"])
    return f"unknown profile namespace '{namespace}'{hint}"


def normalize_profiles(raw: Mapping[str, Any] | None) -> tuple[Profiles, list[str]]:
    """Canonical profiles from a reader's ``{namespace: {key: value}}`` mapping, plus warnings."""
    result: Profiles = {}
    warnings: list[str] = []
    if not raw:
        return result, warnings
    for namespace, entries in raw.items():
        if str(namespace).startswith("x-"):  # a vendor extension, which Pegasus's schema lets through
            continue
        ns = canonical_namespace(str(namespace))
        if ns not in NAMESPACES:
            raise ValidationError(unknown_namespace(str(namespace)), rule=NAMESPACE_RULE,
                                  value=str(namespace))
        if not isinstance(entries, Mapping):
            raise ValidationError(
                f"profiles of namespace '{namespace}' must be a mapping of key to value",
                rule="profiles are {namespace: {key: value}}",
                value=entries,
            )
        target = result.setdefault(ns, {})
        for key, value in entries.items():
            canon, warning = canonical_key(ns, str(key))
            if warning:
                warnings.append(warning)
            if value is None:
                warnings.append(f"{ns} profile '{key}' has no value (a missing space after ':'?)")
            target[canon] = stringify("" if value is None else value)
    return result, warnings


def merge_profiles(*layers: Mapping[str, Mapping[str, str]] | None) -> Profiles:
    """Merge profile layers, later layers winning key by key (lowest precedence first)."""
    merged: Profiles = {}
    for layer in layers:
        if not layer:
            continue
        for ns, entries in layer.items():
            if entries:
                merged.setdefault(ns, {}).update(entries)
    return merged


def profile_int(profiles: Mapping[str, Mapping[str, str]], namespace: str, key: str,
                default: int | None = None, *, subject: str | None = None) -> int | None:
    """An integer profile value, or ``default``; a malformed value is a ``ValidationError``."""
    raw = profiles.get(namespace, {}).get(key)
    if raw is None or raw == "":
        return default
    return parse_int(raw, namespace, key, subject)


def profile_float(profiles: Mapping[str, Mapping[str, str]], namespace: str, key: str,
                  default: float | None = None, *, subject: str | None = None) -> float | None:
    raw = profiles.get(namespace, {}).get(key)
    if raw is None or raw == "":
        return default
    return parse_number(raw, namespace, key, subject)


def _malformed(namespace: str, key: str, raw: str, expected: str, subject: str | None) -> ValidationError:
    where = f" of {subject}" if subject else ""
    return ValidationError(
        f"malformed {namespace} profile '{key}'{where}",
        rule=f"'{key}' must be {expected}",
        value=raw,
    )


def parse_int(raw: str, namespace: str, key: str, subject: str | None = None) -> int:
    text = raw.strip()
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            raise _malformed(namespace, key, raw, "an integer", subject) from None
        if not as_float.is_integer():
            raise _malformed(namespace, key, raw, "an integer", subject) from None
        value = int(as_float)
    minimum = INT_KEYS.get((namespace, key))
    if (namespace, key) in DAG_INT_KEYS:
        low = INT_MIN if minimum is None else minimum
        if not low <= value <= INT_MAX:
            raise _malformed(namespace, key, raw, f"an integer {low} to {INT_MAX}", subject)
    elif minimum is not None and value < minimum:
        raise _malformed(namespace, key, raw, f"an integer >= {minimum}", subject)
    return value


def parse_number(raw: str, namespace: str, key: str, subject: str | None = None) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise _malformed(namespace, key, raw, "a number", subject) from None
    if not math.isfinite(value):
        raise _malformed(namespace, key, raw, "a finite number", subject)
    minimum = NUMBER_KEYS.get((namespace, key))
    if minimum is not None and value < minimum:
        raise _malformed(namespace, key, raw, f"a number >= {minimum:g}", subject)
    return value


def check_profile_values(profiles: Mapping[str, Mapping[str, str]], subject: str | None = None) -> None:
    """Validate the values of the numeric keys sheaf uses; raise on the first malformed one."""
    for ns, entries in profiles.items():
        for key, raw in entries.items():
            if (ns, key) in AUTO_KEYS and is_auto(raw):
                continue
            if (ns, key) in INT_KEYS:
                parse_int(raw, ns, key, subject)
            elif (ns, key) in NUMBER_KEYS:
                parse_number(raw, ns, key, subject)
