"""Gathering a run's inputs: properties in layers, catalogs found as Pegasus 5 finds them.

Properties (the command-line contract, ``docs/command-line.md``), later layers winning: ``~/.pegasusrc`` if
present (as in
Pegasus, under everything), ``./pegasus.properties`` if present, then ``--conf FILE``, then the
environment's ``_PEGASUS__*`` variables (Pegasus's configuration reference, "Properties as Environment
Variables": ``_PEGASUS__TRANSFER__THREADS`` is ``pegasus.transfer.threads``), then each ``-D key=value``.

Each catalog comes from the option, the property or the default names Pegasus looks for
(``_catalog_files``); relative paths are taken from the current directory (``cwd``).  ``${NAME}`` in
the workflow and the catalogs is expanded before they are parsed (``_expand``).

Inline and standalone entries: a catalog may also be inline in the workflow.  When both name the
same transformation (``namespace::name:version``) or site handle, the *standalone* entry wins -- it
is what the user pointed at for this run -- and the inline entries fill in the rest (``merged_with``
in ``sheaf.model``).  Replicas follow Pegasus (its configuration reference,
``pegasus.catalog.replica.dax.asrc``): the workflow's own locations of an lfn are used instead of the
replica catalog's, and with ``pegasus.catalog.replica.dax.asrc = true`` both are candidates, the
workflow's first (``_replicas``).  ``Inputs.tc/sc/rc`` are the merged catalogs, ``None`` when there
is none at all.
"""

from __future__ import annotations

import getpass
import os
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, TypeVar

from sheaf._gc import gc_paused
from sheaf.errors import InputError, UsageError, ValidationError
from sheaf.formats._catalog_files import (
    catalog_path,
    holds_nothing,
    property_base,
    remote_site_catalog,
    replica_directories,
    under,
)
from sheaf.formats._common import PathLike, locate_error
from sheaf.formats._expand import Variables
from sheaf.formats._pegasus_notes import deprecated_layer, feature_warnings, mode_layer
from sheaf.model import (
    Graph,
    Properties,
    ReplicaCatalog,
    SiteCatalog,
    Summary,
    TransformationCatalog,
    Workflow,
    validate,
)

_E = TypeVar("_E", bound=InputError)


@dataclass(frozen=True)
class Inputs:
    """Everything a run reads: the workflow, properties, merged catalogs, warnings, the paths used."""

    workflow: Workflow
    properties: Properties
    tc: TransformationCatalog | None
    sc: SiteCatalog | None
    rc: ReplicaCatalog | None
    warnings: list[str] = field(default_factory=list)
    #: ``workflow``, ``properties`` (the layers, joined by ``os.pathsep``), ``tc``, ``sc``, ``rc`` ->
    #: the file read, or ``None``.
    paths: Mapping[str, str | None] = field(default_factory=dict)
    #: directories searched for inputs, as ``--input-dir`` ones are: ``load_inputs`` gives those a
    #: ``Directory`` replica catalog names (``_catalog_files.replica_directories``); ``sheaf.app`` puts
    #: the command line's before them
    input_dirs: tuple[str, ...] = ()
    #: ``pegasus.dir.storage.mapper = Replica``: the catalog naming where each output is delivered
    #: (``pegasus.dir.storage.mapper.replica.file``, a replica catalog file, regex entries included)
    storage_map: ReplicaCatalog | None = None

    def locate(self, exc: _E) -> _E:
        """``exc`` (a model rule broken, raised while planning) with the file and line where its anchor
        or value is: the workflow file, then the catalogs (``locate_error``)."""
        return locate_error(exc, [self.paths.get(k) for k in ("workflow", "tc", "sc")])


def load_inputs(
    workflow_path: PathLike,
    *,
    conf: PathLike | None = None,
    defines: Iterable[str] = (),
    tc: PathLike | None = None,
    sc: PathLike | None = None,
    rc: PathLike | None = None,
    cwd: PathLike | None = None,
    env_defaults: Mapping[str, str] | None = None,
) -> Inputs:
    """Read the workflow, properties and catalogs (module docstring).  ``env_defaults``: variables
    ``${NAME}`` takes when the environment lacks them (``_expand``)."""
    from sheaf import formats  # the package's readers (imported late: they import this module)

    here = Path(cwd) if cwd is not None else Path.cwd()
    warnings: list[str] = []
    properties, property_files = _properties(here, conf, defines, warnings)
    variables = Variables.of(properties.profiles().get("env"), env_defaults)
    workflow = formats.read_workflow(under(here, workflow_path), warnings=warnings, variables=variables)
    paths: dict[str, str | None] = {"workflow": str(under(here, workflow_path)),
                                    "properties": os.pathsep.join(property_files) or None}
    found = {kind: catalog_path(kind, option, properties, here, warnings)
             for kind, option in (("transformation", tc), ("site", sc), ("replica", rc))}
    found = {kind: None if path is None or holds_nothing(path, kind, warnings) else path
             for kind, path in found.items()}
    tc_file, sc_file, rc_file = found["transformation"], found["site"], found["replica"]
    remote = remote_site_catalog(properties, here, warnings)
    for key, file in (("tc", tc_file), ("sc", sc_file or remote), ("rc", rc_file)):
        paths[key] = str(file) if file else None
    tc_variables = variables if properties.get_bool("pegasus.catalog.transformation.expand", True) else None
    tcat = (formats.read_transformation_catalog(tc_file, warnings=warnings, variables=tc_variables)
            if tc_file else None)
    scat = formats.read_site_catalog(sc_file, warnings=warnings, variables=variables) if sc_file else None
    if remote is not None:
        downloaded = formats.read_site_catalog(remote, warnings=warnings, variables=variables)
        scat = scat.merged_with(downloaded) if scat is not None else downloaded
    expand_rc = properties.get_bool("pegasus.catalog.replica.expand", True)
    rc_variables = Variables.of(defaults=env_defaults) if expand_rc else None
    rcat = (formats.read_replica_catalog(rc_file, warnings=warnings, variables=rc_variables)
            if rc_file else None)
    merged_tc, merged_sc = _merge(tcat, workflow.transformation_catalog), _merge(scat, workflow.site_catalog)
    merged_sc = site_profile_overrides(properties, merged_sc, warnings)
    directories = replica_directories(properties, here, warnings)
    storage_map = _storage_map(properties, here, rc_variables, warnings)
    return Inputs(
        workflow=workflow, properties=properties, tc=merged_tc, sc=merged_sc,
        rc=_replicas(rcat, workflow.replica_catalog, properties),
        warnings=_known_label_key(warnings + feature_warnings(properties, workflow, merged_tc, merged_sc),
                                  properties),
        paths=paths, input_dirs=directories, storage_map=storage_map)


def _storage_map(properties: Properties, here: Path, variables: Variables | None,
                 warnings: list[str]) -> ReplicaCatalog | None:
    """The catalog of Pegasus's Replica output mapper (``pegasus.dir.storage.mapper = Replica``): its
    ``pegasus.dir.storage.mapper.replica.file``, read as a replica catalog (the ``Regex`` and ``File``
    backends both read the text format, regex entries included); None for another mapper."""
    from sheaf import formats

    mapper = properties.get_str("pegasus.dir.storage.mapper")
    if mapper is None or mapper.strip().lower() != "replica":
        return None
    key = "pegasus.dir.storage.mapper.replica.file"
    name = properties.get_str(key)
    if not name:
        raise InputError("the Replica output mapper names no catalog", path=properties.origin(
            "pegasus.dir.storage.mapper"), line=properties.origin_line("pegasus.dir.storage.mapper"),
            rule=f"pegasus.dir.storage.mapper = Replica needs {key}", value=mapper)
    backend = (properties.get_str("pegasus.dir.storage.mapper.replica") or "Regex").strip()
    if backend.lower() not in ("regex", "file"):
        raise InputError("unknown backend of the Replica output mapper",
                         path=properties.origin("pegasus.dir.storage.mapper.replica"),
                         line=properties.origin_line("pegasus.dir.storage.mapper.replica"),
                         rule="pegasus.dir.storage.mapper.replica is Regex or File", value=backend)
    path = under(property_base(properties, here), os.path.expanduser(name.strip()))
    if not path.is_file():
        raise InputError("the Replica output mapper's catalog does not exist", path=properties.origin(key),
                         line=properties.origin_line(key),
                         rule=f"{key} names a replica catalog file", value=str(path))
    return formats.read_replica_catalog(path, warnings=warnings, variables=variables)


_SITE_PROFILE: Final = re.compile(r"pegasus\.catalog\.site\.sites\.([^.]+)\.profiles\.([^.]+)\.(.+)\Z")


def site_profile_overrides(properties: Properties, sites: SiteCatalog | None,
                           warnings: list[str]) -> SiteCatalog | None:
    """The site catalog with the profiles of ``pegasus.catalog.site.sites.SITE.profiles.NS.KEY``
    properties over its own (Pegasus's catalogs reference, "Site Profiles Overriding in Properties");
    a property naming a site the catalog does not have is warned about."""
    found = [(m.group(1), m.group(2).lower(), m.group(3), value) for key, value in properties.items()
             if key.startswith("pegasus.catalog.site.sites.") and (m := _SITE_PROFILE.match(key))]
    if not found:
        return sites
    out = SiteCatalog(dict(sites.sites) if sites is not None else {})
    for site, namespace, key, value in found:
        entry = out.get(site)
        if entry is None:
            warnings.append(f"pegasus.catalog.site.sites.{site}.profiles.{namespace}.{key}: site {site!r} is "
                            "not in the site catalog; the property is ignored")
            continue
        profiles = {ns: dict(values) for ns, values in entry.profiles.items()}
        profiles.setdefault(namespace, {})[key] = value
        out.add(replace(entry, profiles=profiles))
    return out


def _known_label_key(warnings: list[str], properties: Properties) -> list[str]:
    """Drop the reader's 'unknown key' warning for the key ``pegasus.clusterer.label.key`` names:
    the user declared it (the Pegasus manual's ``user_label``), so it is known after all."""
    key = properties.get_str("pegasus.clusterer.label.key")
    if not key:
        return warnings
    needle = f"unknown pegasus profile key '{key}' "
    return [w for w in warnings if needle not in w]


_C = TypeVar("_C", TransformationCatalog, SiteCatalog, ReplicaCatalog)


def _merge(standalone: _C | None, inline: _C | None) -> _C | None:
    """The standalone catalog's entries win; inline entries fill in the rest (module docstring)."""
    if standalone is None:
        return inline
    return standalone.merged_with(inline)


def _replicas(standalone: ReplicaCatalog | None, inline: ReplicaCatalog | None,
              properties: Properties) -> ReplicaCatalog | None:
    """The workflow's replicas over the catalog's, or beside them (module docstring)."""
    if standalone is None or inline is None:
        return inline if standalone is None else standalone
    if properties.get_bool("pegasus.catalog.replica.dax.asrc", False):
        return ReplicaCatalog(inline.replicas + standalone.replicas)
    return inline.merged_with(standalone)


def _properties(here: Path, conf: PathLike | None, defines: Iterable[str],
                warnings: list[str]) -> tuple[Properties, list[str]]:
    from sheaf.formats._properties import read_properties

    files = [str(default) for default in (_pegasusrc(), here / "pegasus.properties")
             if default is not None and default.is_file()]
    if conf is not None:
        files.append(str(under(here, conf)))
    known: dict[str, str] = {}
    lines: dict[str, dict[str, int]] = {name: {} for name in files}
    layers: list[tuple[str, Mapping[str, str]]] = [
        (name, substituted(name, read_properties(name, lines[name]), known, _system_properties(here),
                           warnings))
        for name in files]
    if conf is not None:
        _warn_replica_conf(files[-1], warnings)
    from_environment = environment_properties(os.environ)
    if from_environment:
        layers.append((ENVIRONMENT, from_environment))
    overrides = parse_defines(defines)
    if overrides:
        layers.append(("-D", overrides))
    for name, layer in layers:
        _refuse_lone_surrogates(name, layer)
    renamed = deprecated_layer(Properties.layered(*layers), warnings)
    if renamed:  # under every layer: a key set under its new name wins
        layers.insert(0, ("deprecated keys", renamed))
    moded = mode_layer(Properties.layered(*layers), warnings)
    if moded:  # under every layer, as Pegasus sets a mode's properties only where none is set
        layers.insert(0, ("pegasus.mode", moded))
    return Properties.layered(*layers, lines=lines), files


def _refuse_lone_surrogates(name: str, layer: Mapping[str, str]) -> None:
    """Refuse a property that is no Unicode text -- a ``-D`` option or ``_PEGASUS__*`` variable of bytes
    that are not UTF-8 (Python holds them as lone surrogates), a file's ``\\uDC80`` escape --, which no
    file the plan writes could hold."""
    for key, value in layer.items():
        try:
            key.encode("utf-8")
            value.encode("utf-8")
        except UnicodeEncodeError:
            shown = f"{key}={value}".encode("utf-8", "backslashreplace").decode()
            rule = "properties are Unicode text (UTF-8 bytes, no lone \\uD800-\\uDFFF escape)"
            if name == "-D":
                raise UsageError(f"-D {shown}: the property is not UTF-8 text (rule: {rule})") from None
            where = "set by the environment " if name == ENVIRONMENT else ""
            raise InputError(f"the property {shown.partition('=')[0]} {where}is not UTF-8 text", rule=rule,
                             value=shown, path=None if name == ENVIRONMENT else name) from None


def _warn_replica_conf(path: str, warnings: list[str]) -> None:
    """A ``--conf`` file that holds a replica catalog's line is read as properties, with a warning: it is
    likely pegasus-plan's ``-c``, which is ``--cache`` (a replica file), where sheaf's is ``--conf``."""
    from sheaf.formats._properties import replica_catalog_line

    found = replica_catalog_line(path)
    if found is not None:
        warnings.append(f"{path}: line {found[0]} is a replica catalog's, not a property: {found[1]!r}; "
                        "-c/--conf names a properties file, and the file is read as one -- pegasus-plan's -c "
                        "is --cache (a replica file): give it as --cache FILE (sheaf plan) or --rc FILE")


#: ``${key}`` in a property's value: a reference to another property (Pegasus's configuration reference)
_REFERENCE: Final = re.compile(r"\$\{([-a-zA-Z0-9._]+)\}")


def substituted(name: str, layer: Mapping[str, str], known: dict[str, str], system: Mapping[str, str],
                warnings: list[str]) -> dict[str, str]:
    """A properties file's values with each ``${key}`` replaced once, as Pegasus loads a file: by the
    value of ``key`` in this file (read before it) or the files read before (``known``, which this
    file's values are then added to), else by the system property (``system``), else by nothing --
    which Pegasus does silently and sheaf warns about."""
    result: dict[str, str] = {}
    for key, value in layer.items():

        def resolve(match: re.Match[str], key: str = key, value: str = value) -> str:
            found = result.get(match[1], known.get(match[1], system.get(match[1])))
            if found is None:
                warnings.append(f"{name}: {key} = {value}: {match[0]} names no property nor system property "
                                "sheaf defines; replaced by nothing, as Pegasus does")
            return found or ""

        result[key] = _REFERENCE.sub(resolve, value)
    known.update(result)
    return result


def _system_properties(here: Path) -> dict[str, str]:
    """The Java system properties a property may refer to (``${user.home}``), as the planner's JVM
    would define them."""
    return {"user.home": os.path.expanduser("~"), "user.dir": os.path.abspath(here),
            "user.name": getpass.getuser(), "file.separator": os.sep, "path.separator": os.pathsep,
            "line.separator": "\n", "java.io.tmpdir": "/tmp", "os.name": platform.system()}


#: the name of the properties layer the environment gives
ENVIRONMENT: Final = "the environment (_PEGASUS__*)"


def environment_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The properties the environment sets, as Pegasus reads them: each variable whose name starts with
    ``_PEGASUS``, that ``_`` dropped, lower-cased, ``__`` made ``.``."""
    return {name[1:].lower().replace("__", "."): value
            for name, value in sorted(environ.items()) if name.startswith("_PEGASUS")}


def parse_defines(defines: Iterable[str]) -> dict[str, str]:
    """``-D key=value`` options as a mapping (a define without ``=`` is a usage error)."""
    result: dict[str, str] = {}
    for define in defines:
        key, sep, value = define.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-D expects key=value, got {define!r}")
        result[key.strip()] = value.strip()
    return result


def _pegasusrc() -> Path | None:
    """``~/.pegasusrc`` (``$HOME``), the user's properties under every other layer."""
    home = os.environ.get("HOME")
    return Path(home) / ".pegasusrc" if home else None


def validate_inputs(inputs: Inputs) -> tuple[Graph, list[int], Summary]:
    """``sheaf.model.validate`` on ``inputs``, with a ``ValidationError`` located in the files read.

    The model's errors carry the offending job id or lfn as ``value``; this finds its line in the
    workflow file (then in the catalog files) -- only on the error path.
    """
    try:
        with gc_paused():
            return validate(inputs.workflow, inputs.tc, inputs.sc)
    except ValidationError as exc:
        raise inputs.locate(exc) from None


