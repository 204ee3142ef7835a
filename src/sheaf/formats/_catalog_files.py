"""Which file each catalog comes from, found as the Pegasus 5 planner finds it.

Per catalog, the first of:

1. the command-line option (``--tc``/``--sc``/``--rc``): the file must exist;
2. the property ``pegasus.catalog.{transformation,site,replica}.file``: a file that does not exist is
   a *warning* naming it, and the run goes on without that catalog (Pegasus logs it and uses an
   empty catalog);
3. the default names Pegasus looks for in the directory it runs in, YAML first, then the older
   format: ``transformations.yml`` then ``tc.txt``; ``sites.yml`` then ``sites.xml``;
   ``replicas.yml`` then ``rc.txt``;
4. ``sheaf.inherited.catalog.{transformation,site,replica}.file``: the parent's catalog, which a
   sub-workflow job that gives its own ``--conf`` does not inherit as its own (module
   ``sheaf.codegen._subworkflow_node``), but falls back on where its properties and directory name none.

A relative path a property names is taken from the directory the planner runs in, as pegasus-plan's
Java takes it -- except in a sub-workflow's planner, which its parent gives
``sheaf.inherited.planning.dir``, the directory the parent was planned in: Pegasus plans a
sub-workflow in a PegasusLite directory holding the job's files for planning under their names
(``forPlanning``), the files beside the parent, so ``pegasus.catalog.transformation.file =
inner_tc.yml`` in the job's ``--conf`` file names the ``inner_tc.yml`` beside the parent, as the
job's own relative arguments do.

A catalog file that holds nothing (empty, or only blanks and comments) is a warning naming it and an
empty catalog, as in Pegasus; it is not parsed.

The replica catalog's type, ``pegasus.catalog.replica``: ``YAML`` (the default), ``File`` and
``Regex`` are files, read as above.  ``Directory`` is Pegasus's directory replica catalog: the files
under ``pegasus.catalog.replica.directory`` (required), each ``DIR/<lfn>`` a replica on ``local`` --
what ``--input-dir DIR`` gives (``replica_directories``); its ``.site``, ``.flat.lfn`` and
``.url.prefix`` settings other than their defaults are warned about by name, for it and for
``--input-dir`` alike (``directory_settings``: pegasus-plan reads input directories through that
catalog).  Pegasus's other types (a database: ``JDBCRC``, ``MRC``, ...) are refused by name, and so is
an unknown one, as Pegasus fails to load either.

Remote site catalog (Pegasus's "site catalog repository"): with ``pegasus.catalog.site.repo.file =
NAME`` the planner downloads ``<repo>/5.0/conf/NAME``, ``<repo>`` being
``pegasus.catalog.site.repo`` (default Pegasus's GitHub repository of site catalogs), into ``NAME``
in the directory it runs in -- again only when that copy is older than
``pegasus.catalog.site.repo.interval`` seconds (default a day).  Its sites are merged under those of
the local site catalog (a local entry wins).  A download that fails is an ``InputError`` naming the
URL and the reason.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from sheaf.errors import InputError
from sheaf.formats._common import PathLike, read_text
from sheaf.model import Properties

#: catalog kind -> (property naming its file, default file names in the order Pegasus looks for them)
CATALOG_FILES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "transformation": ("pegasus.catalog.transformation.file", ("transformations.yml", "tc.txt")),
    "site": ("pegasus.catalog.site.file", ("sites.yml", "sites.xml")),
    "replica": ("pegasus.catalog.replica.file", ("replicas.yml", "rc.txt")),
}

DEFAULT_SITE_REPO = "https://raw.githubusercontent.com/pegasushub/pegasus-site-catalogs"
#: the Pegasus release whose site catalogs are fetched (the format sheaf reads)
SITE_REPO_RELEASE = "5.0"
_FETCH_TIMEOUT = 30.0


#: the property a parent gives its sub-workflow's planner: where relative paths in properties are from
PLANNING_DIR_PROPERTY = "sheaf.inherited.planning.dir"


def under(here: Path, path: PathLike) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else here / candidate


def property_base(properties: Properties, here: Path) -> Path:
    """Where a relative path a property names is taken from (module docstring)."""
    inherited = properties.get_str(PLANNING_DIR_PROPERTY)
    return Path(inherited) if inherited else here


def catalog_path(kind: str, option: PathLike | None, properties: Properties, here: Path,
                 warnings: list[str]) -> Path | None:
    """The file the ``kind`` catalog is read from, or ``None`` (module docstring)."""
    prop, defaults = CATALOG_FILES[kind]
    if option is not None:
        path = under(here, option)
        if not _is_file(path):
            raise InputError(f"the {kind} catalog given on the command line {_not_a_file(path)}",
                             rule="catalog files exist", path=str(path))
        return path
    named = properties.get_str(prop)
    if named:
        path = under(property_base(properties, here), named)
        if _is_file(path):
            return path
        warnings.append(f"{path}: the {kind} catalog named by the property {prop} {_not_a_file(path)}; "
                        f"planning without it")
        return None
    found = next((here / name for name in defaults if (here / name).is_file()), None)
    inherited = properties.get_str(f"sheaf.inherited.catalog.{kind}.file")
    return found if found is not None or not inherited else under(here, inherited)


def _is_file(path: Path) -> bool:
    """``path.is_file()``, false for a name the system cannot look up (``ENAMETOOLONG``: a component
    longer than 255 bytes), which ``pathlib`` raises as ``OSError``."""
    try:
        return path.is_file()
    except OSError:
        return False


def _not_a_file(path: Path) -> str:
    """What ``path``, which is no regular file, is instead."""
    try:
        path.exists()
    except OSError as exc:
        return f"cannot be looked up ({exc.strerror})"
    if not path.exists():
        return "does not exist"
    if path.is_dir():
        return "is not a regular file but a directory"
    return "is not a regular file but a device" if path.is_char_device() or path.is_block_device() \
        else "is not a regular file"


#: ``pegasus.catalog.replica`` types read from a file (lower case; Pegasus reads ``File`` as ``SimpleFile``)
_FILE_REPLICA_TYPES = ("yaml", "file", "simplefile", "regex")
#: Pegasus's other replica catalog types, which sheaf does not implement -> what they are
_UNIMPLEMENTED_REPLICA_TYPES: Mapping[str, str] = {"jdbcrc": "a database catalog", "mrc": "several catalogs",
                                                   "meta": "a catalog of metadata", "flushedcache": "a cache"}
#: the directory replica catalog's settings sheaf does not read -> the value that needs nothing
_DIRECTORY_DEFAULTS: Mapping[str, str] = {"pegasus.catalog.replica.directory.site": "local",
                                          "pegasus.catalog.replica.directory.flat.lfn": "false",
                                          "pegasus.catalog.replica.directory.url.prefix": "file://"}


def replica_directories(properties: Properties, here: Path, warnings: list[str]) -> tuple[str, ...]:
    """The directories the replica catalog's type names (module docstring): one for ``Directory``."""
    key = "pegasus.catalog.replica"
    kind = (properties.get_str(key) or "YAML").strip()
    if kind.lower() in _FILE_REPLICA_TYPES:
        return ()
    if kind.lower() != "directory":
        # Pegasus fails to load a type it has no class for; reading ./replicas.yml instead would plan
        # with other replicas than the user named
        what = _UNIMPLEMENTED_REPLICA_TYPES.get(kind.lower())
        message = (f"{key} = {kind} ({what}) is not implemented by sheaf" if what
                   else f"unknown replica catalog type in {key}")
        raise InputError(message, rule=f"{key} is YAML, File, SimpleFile, Regex or Directory", value=kind,
                         path=properties.origin(key), line=properties.origin_line(key))
    named = properties.get_str("pegasus.catalog.replica.directory")
    if not named or not named.strip():
        raise InputError("a Directory replica catalog names no directory",
                         rule="pegasus.catalog.replica = Directory needs pegasus.catalog.replica.directory")
    directory = under(property_base(properties, here), named.strip())
    if not directory.is_dir() or os.pathsep in str(directory):
        raise InputError("the directory of the Directory replica catalog does not exist, or its name "
                         f"holds {os.pathsep!r}", rule="pegasus.catalog.replica.directory is a directory",
                         value=str(directory))
    warnings.extend(directory_settings(properties))
    return (str(directory),)


def directory_settings(properties: Properties) -> list[str]:
    """A warning per setting of Pegasus's directory replica catalog that sheaf does not read, set to
    another value than its default: they apply to the ``Directory`` replica catalog and, as pegasus-plan
    reads ``--input-dir`` through that catalog with the same properties, to ``--input-dir`` too."""
    found = []
    for key, default in _DIRECTORY_DEFAULTS.items():
        value = properties.get_str(key)
        if value is not None and value.strip().lower() != default:
            found.append(f"property {key} = {value} is not implemented (ignored): the directory's "
                         "files are replicas on local, each named by its path under the directory")
    return found


def holds_nothing(path: Path, kind: str, warnings: list[str]) -> bool:
    """Whether the catalog file is empty (blanks and comments only): then a warning naming it."""
    if path.stat().st_size > 65536 or not _blanks_and_comments(read_text(path)):
        return False
    warnings.append(f"{path}: the {kind} catalog is empty")
    return True


def _blanks_and_comments(text: str) -> bool:
    """Whether every line is blank or a comment (one pass over the lines: linear in the text)."""
    for line in text.split("\n"):
        content = line.lstrip(" \t\r")
        if content and not content.startswith("#"):
            return False
    return True


def remote_site_catalog(properties: Properties, here: Path, warnings: list[str]) -> Path | None:
    """The site catalog downloaded from the repository ``pegasus.catalog.site.repo.file`` names, or
    ``None`` when the property is not set (module docstring)."""
    name = properties.get_str("pegasus.catalog.site.repo.file")
    if not name:
        return None
    if "/" in name or name in (".", ".."):
        raise InputError("pegasus.catalog.site.repo.file names a file of the repository's conf directory",
                         rule="a base name", value=name)
    base = (properties.get_str("pegasus.catalog.site.repo") or DEFAULT_SITE_REPO).rstrip("/")
    url = f"{base}/{SITE_REPO_RELEASE}/conf/{urllib.parse.quote(name)}"
    target = here / name
    interval = _interval(properties)
    if _is_file(target) and time.time() - target.stat().st_mtime < interval:
        return target
    try:
        _download(url, target)
    except InputError as exc:  # as pegasus-plan: the failure is logged and planning goes on
        kept = " (an earlier download is used)" if _is_file(target) else ""
        warnings.append(f"{exc.message}; planning goes on with the local site catalog{kept}")
        return target if _is_file(target) else None
    warnings.append(f"{target}: site catalog downloaded from {url}")
    return target


def _interval(properties: Properties) -> float:
    raw = properties.get_str("pegasus.catalog.site.repo.interval") or "86400"
    try:
        return float(raw)
    except ValueError:
        raise InputError("pegasus.catalog.site.repo.interval is a number of seconds",
                         rule="an interval in seconds", value=raw) from None


def _download(url: str, target: Path) -> None:
    if not url.startswith(("http://", "https://")):
        raise InputError("the site catalog repository is not an http(s):// URL",
                         rule="pegasus.catalog.site.repo is an http(s):// URL", value=url)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.download")
    try:
        with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as response:
            data = response.read()
        tmp.write_bytes(data)
        tmp.replace(target)
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ValueError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise InputError(f"cannot download the site catalog from {url}: {reason}",
                         rule="pegasus.catalog.site.repo.file names a file the repository serves",
                         value=url) from None
    finally:
        with contextlib.suppress(OSError, ValueError):  # a name too long, or with a NUL, was never created
            tmp.unlink(missing_ok=True)
