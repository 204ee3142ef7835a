"""Pegasus properties and features users' inputs hold that sheaf renames or does not do yet.

Policy: nothing a Pegasus user wrote is dropped in silence.

- **Deprecated property keys** are read under their new name, with a warning naming it
  (``DEPRECATED``): ``pegasus.job.aggregator`` is ``pegasus.clusterer.job.aggregator``.  The new key
  wins when both are set.  (``pegasus.code.generator = PMC``, the whole workflow as one PMC job, is
  handled by the planner: it is ``--cluster whole`` with the ``mpiexec`` aggregator.)
- ``pegasus.mode`` sets its properties under the user's (``MODE_DEFAULTS``, ``mode_layer``), as
  Pegasus does; one Pegasus does not define is refused, naming those it does (``MODES``).
- **Features not implemented yet** are a warning naming the property or the feature and saying that
  sheaf does not implement it (``NOT_YET``): hooks
  (notifications) on transformations or of another type than ``shell`` (the workflow's and the jobs'
  shell hooks run: ``sheaf.monitor``).  (The data properties -- integrity checking, bypass -- are the
  planner's data pass's.)
- **Properties sheaf does not read** whose value changes what Pegasus does (``NOT_YET`` too, each
  with the values that need nothing): the output directory layout (``pegasus.dir.storage.deep``,
  ``pegasus.dir.storage.mapper``), the transformation mapper and selector, data reuse's scope,
  cleanup's scope, strategy and tool, the submit and staging directories' layouts, the transfer tools,
  where transfer jobs run, transfers inside containers, the worker package, chmod jobs, edges from
  data dependencies left out, catalog types sheaf does not read, the post script's scope, metrics, the
  monitoring database and the notifications' limits; a key may be a glob (``pegasus.transfer.*.impl``).
- **Profile keys sheaf knows but does not honour** (``UNHONOURED``): Pegasus documents them, so they
  are not "unknown", yet ignoring them in silence would hide a difference -- kickstart's
  (``gridstart*``: sheaf runs jobs without kickstart), profile expressions (``*.expr``, which
  pegasus-exitcode evaluates on a retry), the container launcher, the options of pegasus-transfer and
  pegasus-cleanup, PegasusLite's setup script; and a few honoured for some values only
  (``UNHONOURED_VALUES``: a ``style`` other than ``condor``, ``glite``, ``ssh``).  One warning per key
  (and value), naming where it is set (the
  properties, sites, transformations or jobs, the first three).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

from sheaf.errors import InputError
from sheaf.model import EMPTY, Properties, SiteCatalog, TransformationCatalog, Workflow, join_arguments

__all__ = ["deprecated_layer", "feature_warnings", "mode_layer"]

#: old property key -> its Pegasus 5 name
DEPRECATED: Mapping[str, str] = {
    "pegasus.job.aggregator": "pegasus.clusterer.job.aggregator",
}

_LATER = "sheaf does not implement it"

_NOT_READ = "sheaf does not read it"

_EVENTS = "events go to the submit directory"

_TC_TYPES = (f"{_NOT_READ}: transformation catalogs are YAML or Text files (a directory of executables: "
             "--transformations-dir)")

_STAGING = f"{_NOT_READ}: files go flat into the staging site's directory"
_ONHOST = f"{_NOT_READ}: a container job's files are moved on the host, outside its container"
_WORKER = f"{_NOT_READ}: sheaf deploys no worker package; jobs run sheaf's tools where it is installed"
_CHMOD = f"{_NOT_READ}: a staged executable is always made executable"
_EDGES = f"{_NOT_READ}: a job that reads a file another job writes always runs after it"
_HOOKS_AT_ONCE = "sheaf runs at most 10 hooks at once (0, which turns them off, is read)"

#: property (or a glob of properties) -> (values that need nothing, none: every value; what implements it)
NOT_YET: Mapping[str, tuple[tuple[str, ...], str]] = {
    "pegasus.dir.storage.deep": (("false",), f"{_NOT_READ}: outputs go flat into the output directory"),
    "pegasus.dir.storage.mapper": (("flat", "replica"),
                                   f"{_NOT_READ}: outputs go flat into the output directory"),
    "pegasus.catalog.transformation.mapper": (("all",), f"{_NOT_READ}: every catalog entry is used"),
    "pegasus.data.reuse.scope": (("full",), f"{_NOT_READ}: data reuse is full (--force turns it off)"),
    "pegasus.file.cleanup.scope": (("fullahead",), f"{_NOT_READ}: cleanup is --cleanup's"),
    "pegasus.file.cleanup.strategy": (("inplace",), f"{_NOT_READ}: cleanup is --cleanup's"),
    "pegasus.selector.transformation": (("random",), f"{_NOT_READ}: entries go in catalog order"),
    "pegasus.dir.submit.mapper": ((), f"{_NOT_READ}: sheaf lays out the submit directory its own way"),
    "pegasus.dir.submit.mapper.*": ((), f"{_NOT_READ}: sheaf lays out the submit directory its own way"),
    "pegasus.dir.staging.mapper": (("flat",), _STAGING),
    "pegasus.dir.staging.mapper.*": ((), _STAGING),
    "pegasus.dir.submit.logs": ((), f"{_NOT_READ}: the DAG's logs are in the submit directory"),
    "pegasus.dir.create.strategy": (("minimal",), f"{_NOT_READ}: one create_dir job per site"),
    "pegasus.transfer.*.impl": (("transfer",), f"{_NOT_READ}: sheaf-transfer moves every file"),
    "pegasus.transfer.*.remote.sites": ((), f"{_NOT_READ}: transfer jobs run on the submit host"),
    "pegasus.transfer.container.onhost": (("true",), _ONHOST),
    "pegasus.transfer.worker.package": (("false",), _WORKER),
    "pegasus.transfer.disable.chmod.sites": ((), _CHMOD),
    "pegasus.file.cleanup.impl": (("cleanup",), f"{_NOT_READ}: sheaf-cleanup removes every file"),
    "pegasus.parser.dax.data.dependencies": (("true",), _EDGES),
    "pegasus.catalog.site": (("yaml", "xml"), f"{_NOT_READ}: site catalogs are YAML or XML files"),
    "pegasus.catalog.transformation": (("yaml", "text"), _TC_TYPES),
    "dagman.post.scope": (("all",), f"{_NOT_READ}: every job's exit code is checked"),
    "pegasus.metrics.app*": ((), f"{_NOT_READ}: sheaf sends no metrics"),
    "pegasus.monitord.events": (("true",), f"{_NOT_READ}: a run's events are always kept"),
    "pegasus.monitord.notifications.max": (("10", "0"), _HOOKS_AT_ONCE),
    "pegasus.monitord.notifications.timeout": (("0",), f"{_NOT_READ}: hooks run until they end"),
    "pegasus.catalog.workflow.url": ((), f"{_NOT_READ}: {_EVENTS}"),
    "pegasus.monitord.output": ((), f"{_NOT_READ}: {_EVENTS}"),
    "pegasus.catalog.workflow.amqp.url": ((), f"{_NOT_READ}: {_EVENTS}, never to a queue"),
    "pegasus.catalog.master.url": ((), f"{_NOT_READ}: sheaf keeps no dashboard database"),
    "pegasus.dashboard.output": ((), f"{_NOT_READ}: sheaf keeps no dashboard database"),
}
#: pegasus.mode's values (Pegasus's configuration reference); another is refused
MODES = ("production", "development", "tutorial", "debug")
_HELD_30S = "(JobStatus == 5) && ((CurrentTime - EnteredCurrentStatus) > 30)"
#: the properties each mode sets where the user's properties do not (Pegasus's configuration
#: reference: no retries but tutorial's one, no integrity checking, held jobs removed after 30 s); the
#: transfers' single attempt is ``sheaf.planner``'s (``pegasus.mode`` read by the transfer jobs)
MODE_DEFAULTS: Mapping[str, Mapping[str, str]] = {
    "production": {},
    "development": {"dagman.retry": "0", "pegasus.integrity.checking": "none",
                    "condor.periodic_remove": _HELD_30S},
    "debug": {"dagman.retry": "0", "pegasus.integrity.checking": "none", "condor.periodic_remove": _HELD_30S},
    "tutorial": {"dagman.retry": "1", "condor.periodic_remove": _HELD_30S},
}


def mode_layer(properties: Properties, warnings: list[str]) -> dict[str, str]:
    """The defaults ``pegasus.mode`` sets (``MODE_DEFAULTS``), a layer under the user's properties; debug's
    extra logging is warned about."""
    mode = (properties.get_str("pegasus.mode") or "production").strip().lower()
    if mode == "debug":
        warnings.append("property pegasus.mode = debug: applied as development (no retries, no integrity "
                        "checking, one transfer attempt); its extra logging is not implemented")
    return dict(MODE_DEFAULTS.get(mode, {}))

#: property -> (the values Pegasus defines, exactly as its enum spells them; the one it reads any other
#: value as): a value outside them is no feature sheaf lacks -- Pegasus ignores it too
DEFINED: Mapping[str, tuple[tuple[str, ...], str]] = {
    "pegasus.file.cleanup.scope": (("fullahead", "deferred"), "fullahead"),
}

_KICKSTART = "sheaf runs jobs without kickstart"
_EXPRESSIONS = "profile expressions (pegasus-exitcode -U on a retry) are not evaluated"
_TOOLS = "sheaf's transfer and cleanup programs take their own options"

#: Pegasus profile keys (pegasus namespace) sheaf knows and does not honour -> why
UNHONOURED: Mapping[str, str] = {
    **dict.fromkeys(("gridstart", "gridstart.path", "gridstart.arguments", "gridstart.launcher",
                     "gridstart.launcher.arguments"), _KICKSTART),
    **dict.fromkeys(("runtime.expr", "memory.expr", "diskspace.expr", "cores.expr", "gpus.expr",
                     "queue.expr", "project.expr", "glite.arguments.expr"), _EXPRESSIONS),
    **dict.fromkeys(("container.launcher", "container.launcher.arguments"), "not implemented yet"),
    **dict.fromkeys(("transfer.arguments", "transfer.lite.arguments", "cleanup.arguments"), _TOOLS),
    "pegasus_lite_env_source": "sheaf-lite sources no setup script",
}
#: Pegasus profile keys sheaf honours for some values only -> (those values, lower case; why not the others)
UNHONOURED_VALUES: Mapping[str, tuple[tuple[str, ...], str]] = {
    "style": (("condor", "glite", "ssh"), ("sheaf submits through a batch system only the glite and ssh "
                                            "styles' grid_resource names; these jobs run on sheaf run's "
                                            "--backend")),
}
#: keys Pegasus reads from the properties and the site catalog only: on a transformation or a job,
#: Pegasus and sheaf ignore them
PROPERTY_ONLY: Mapping[str, str] = {
    "data.configuration": "Pegasus reads it from the properties and the site catalog",
}


def deprecated_layer(properties: Properties, warnings: list[str]) -> dict[str, str]:
    """The deprecated keys set in ``properties``, under their new names (a layer below the others)."""
    layer: dict[str, str] = {}
    for old, new in DEPRECATED.items():
        value = properties.get_str(old)
        if value is None:
            continue
        warnings.append(f"property {old} is deprecated: read as {new}")
        if properties.get_str(new) is None:
            layer[new] = value
    return layer


def feature_warnings(properties: Properties, workflow: Workflow, tc: TransformationCatalog | None,
                     sc: SiteCatalog | None = None) -> list[str]:
    """A warning per property, profile key or feature in the inputs that sheaf does not implement yet."""
    mode = properties.get_str("pegasus.mode")
    if mode is not None and mode.lower() not in MODES:
        raise InputError("unknown pegasus.mode", path=properties.origin("pegasus.mode"),
                         line=properties.origin_line("pegasus.mode"),
                         rule=f"pegasus.mode is one of {', '.join(MODES)}", value=mode)
    found = _unhonoured_keys(properties, workflow, tc, sc)
    for pattern, (fine, owner) in NOT_YET.items():
        for key in sorted(k for k in properties if fnmatchcase(k, pattern)):
            value = properties[key].strip()
            defined, default = DEFINED.get(key, ((), ""))
            if defined and value not in defined:
                found.append(f"property {key} = {value} is not a value Pegasus defines "
                             f"({', '.join(defined)}): read as {default}, as Pegasus reads it")
            elif value.lower() not in fine:
                found.append(f"property {key} = {value} is not implemented yet (ignored): {owner}")
    # shell hooks of the workflow, its jobs and their transformations run (sheaf.monitor); other hook
    # types (Pegasus knows only shell hooks today) do not
    hooked = [t.fqn for t in (tc or ()) if set(t.hooks) - {"shell"}]
    hooked += [job.id for job in workflow.jobs.values() if set(job.hooks) - {"shell"}]
    if set(workflow.hooks) - {"shell"}:
        hooked.insert(0, "the workflow")
    if hooked:
        where = ", ".join(hooked[:3]) + (" ..." if len(hooked) > 3 else "")
        found.append(f"hooks (notifications) other than shell hooks are not "
                     f"implemented yet (ignored) on {where}: {_LATER}")
    found.extend(_kickstart_variables(workflow))
    return found


#: a variable pegasus-kickstart replaces in a job's arguments: ``$NAME`` or ``${NAME}`` not escaped
_VARIABLE = re.compile(r"(?<!\\)\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[^}]*\})")
#: text kickstart takes literally: single-quoted
_SINGLE_QUOTED = re.compile(r"'[^']*'")


def _kickstart_variables(workflow: Workflow) -> list[str]:
    """A warning naming the jobs whose arguments hold a variable pegasus-kickstart's variable rewriting
    would replace from the job's environment when it starts the program: sheaf starts it as written.
    (``${NAME}`` in a workflow file is replaced when the file is read; this sees what is left, such
    as ``$NAME``, which Pegasus leaves to kickstart.)"""
    jobs: list[str] = []
    first = ""
    for job in workflow.jobs.values():
        args = job.arguments
        try:
            if not any("$" in a for a in args):  # type: ignore[operator]  # str: the common case
                continue
        except TypeError:  # a FileRef among them (DAX)
            pass
        match = _VARIABLE.search(_SINGLE_QUOTED.sub("", join_arguments(args)))
        if match is not None:
            jobs.append(job.id)
            first = first or match.group()
    if not jobs:
        return []
    where = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more" if len(jobs) > 3 else "")
    text = (f"the arguments of {'jobs' if len(jobs) > 1 else 'job'} {where} hold {first}, which "
            f"pegasus-kickstart replaces from the job's environment when the job starts: sheaf runs jobs "
            f"without kickstart, so the program receives '{first}' as written (write ${{NAME}} to have the "
            f"planner replace it from the environment)")
    return [text]


def _unhonoured_keys(properties: Properties, workflow: Workflow, tc: TransformationCatalog | None,
                     sc: SiteCatalog | None) -> list[str]:
    """One warning per ``UNHONOURED`` key set anywhere, naming where (module docstring)."""
    where: dict[str, list[str]] = {}
    why = {**UNHONOURED, **PROPERTY_ONLY}

    def look(profiles: Mapping[str, Mapping[str, str]], owner: str) -> None:
        for key, value in profiles.get("pegasus", EMPTY).items():
            if key in UNHONOURED or (key in PROPERTY_ONLY and owner != "the properties"
                                     and not owner.startswith("site ")):
                where.setdefault(key, []).append(owner)
            elif key in UNHONOURED_VALUES and value.strip().lower() not in UNHONOURED_VALUES[key][0]:
                label = f"{key}' = '{value.strip()}"  # the key and its value, quoted as the key alone is
                why[label] = UNHONOURED_VALUES[key][1]
                where.setdefault(label, []).append(owner)

    look(properties.profiles(), "the properties")
    for site in sc or ():
        look(site.profiles, f"site {site.name}")
    for t in tc or ():
        look(t.profiles, f"transformation {t.fqn}")
        for entry in t.sites:
            look(entry.profiles, f"transformation {t.fqn} on {entry.name}")
    for job in workflow.jobs.values():
        if job.profiles is not EMPTY:
            look(job.profiles, f"job {job.id}")
    return [f"pegasus profile key '{key}' is not honoured (ignored; {why[key]}): set on "
            + ", ".join(dict.fromkeys(owners[:3])) + (" ..." if len(owners) > 3 else "")
            for key, owners in where.items()]
