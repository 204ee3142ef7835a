"""Pegasus 5.0 YAML catalogs: transformations, sites, replicas -- standalone files or inline sections.

The same converters serve a standalone catalog file (``pegasus: '5.0'`` plus the entries) and the
``transformationCatalog``/``siteCatalog``/``replicaCatalog`` sections of a workflow.  Readers take
the loaded YAML and a ``TextSource`` (for locations); writers return plain data in the key order of the
Pegasus Python API, which ``yaml_rs`` dumps.

Policy:

- Scalars become text (``version: 4.0`` -> ``"4.0"``); profiles go through ``normalize_profiles``;
  unknown keys are warned about and ignored; ``x-*`` vendor keys are ignored.
- A transformation whose namespace and name look swapped (``namespace: seqexec, name: pegasus``,
  as in a seed) is kept as written and warned about, naming the intended ``pegasus::seqexec``.
- A replica entry may give ``pfns: [{pfn, site}]`` (5.0) or ``pfn``/``site`` directly (the older
  schema); both read into ``Replica.pfns``.  Writers always write ``pfns``.
"""

from __future__ import annotations

from typing import Any

from sheaf.formats._common import (
    HEADER_KEYS,
    ProfileReader,
    TextSource,
    check_header,
    flag,
    hooks,
    integer,
    mapping,
    seq,
    string_map,
    text,
    texts,
)
from sheaf.model import (
    PFN,
    Container,
    Directory,
    FileServer,
    Grid,
    Replica,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
)

#: Transformations sheaf (like Pegasus) looks up by a fixed ``namespace::name``.
KNOWN_TRANSFORMATIONS = frozenset({
    ("pegasus", "seqexec"), ("pegasus", "mpiexec"), ("dataflow", "decaf"), ("pegasus", "transfer"),
    ("pegasus", "cleanup"), ("pegasus", "dirmanager"), ("pegasus", "kickstart"), ("condor", "dagman"),
    ("pegasus", "pegasus-plan"),
})

_TC_KEYS = frozenset({"pegasus", "transformations", "containers"}) | HEADER_KEYS
_TR_KEYS = frozenset({"namespace", "name", "version", "requires", "sites", "profiles", "hooks", "metadata",
                      "checksum"})
_TR_SITE_KEYS = frozenset({"name", "pfn", "type", "bypass", "arch", "os.type", "os.release", "os.version",
                           "container", "profiles", "metadata", "glibc"})
_CONTAINER_KEYS = frozenset({"name", "type", "image", "mounts", "mount", "bypass", "image.site", "imageSite",
                             "checksum", "metadata", "profiles"})
_SC_KEYS = frozenset({"pegasus", "scVersion", "sites"}) | HEADER_KEYS
_SITE_KEYS = frozenset({"name", "arch", "os.type", "os.release", "os.version", "directories", "grids",
                        "profiles", "metadata", "glibc", "replica-catalogs"})
_DIR_KEYS = frozenset({"type", "path", "sharedFileSystem", "fileServers", "freeSize", "totalSize"})
_FS_KEYS = frozenset({"url", "operation", "profiles"})
_GRID_KEYS = frozenset({"type", "contact", "scheduler", "jobtype", "freeMem", "totalMem", "maxCount",
                        "maxCPUTime", "runningJobs", "jobsInQueue", "idleNodes", "totalNodes"})
_RC_KEYS = frozenset({"pegasus", "rcVersion", "replicas"}) | HEADER_KEYS
_REPLICA_KEYS = frozenset({"lfn", "pfns", "pfn", "site", "checksum", "metadata", "regex"})
_PFN_KEYS = frozenset({"pfn", "site"})
_TR_TYPES = ("installed", "stageable")
#: Pegasus's catalog parsers refuse a key their schema lacks ("Illegal key"): a misspelt key would
#: change where and how jobs run
_STRICT = "keys of the Pegasus 5.0 catalog schemas (or x-*)"
_DIR_TYPES = ("sharedScratch", "sharedStorage", "localScratch", "localStorage")
_OPERATIONS = ("all", "get", "put")


# --- transformation catalog --------------------------------------------------------------------

def tc_from_data(data: Any, src: TextSource, profiles: ProfileReader | None = None, *,
                 inline: bool = False) -> TransformationCatalog:
    what = "the inline transformation catalog" if inline else "a transformation catalog"
    raw = mapping(src, data, what, _TC_KEYS, strict=_STRICT)
    check_header(src, raw)
    read_profiles = profiles or ProfileReader(src)
    catalog = TransformationCatalog()
    for entry in seq(src, raw, "containers", what):
        container = _container(entry, src, read_profiles)
        catalog.containers[container.name] = container
    for entry in seq(src, raw, "transformations", what):
        transformation = _transformation(entry, src, read_profiles)
        if transformation.key in catalog.transformations:
            src.warn(f"transformation '{transformation.fqn}' is declared twice; the last one wins",
                     value=transformation.name, key="name")
        catalog.add(transformation)
    return catalog


def _transformation(entry: Any, src: TextSource, profiles: ProfileReader) -> Transformation:
    raw = mapping(src, entry, "a transformation", _TR_KEYS, required=("name",), strict=_STRICT)
    name = text(src, raw, "name", "a transformation", required=True) or ""
    namespace = text(src, raw, "namespace", f"transformation '{name}'")
    version = text(src, raw, "version", f"transformation '{name}'")
    fqn = f"{namespace}::{name}" if namespace else name
    if namespace and (name, namespace) in KNOWN_TRANSFORMATIONS:
        src.warn(f"transformation '{fqn}' looks like '{name}::{namespace}' with namespace and name swapped",
                 value=namespace, key="namespace")
    sites = tuple(_tr_site(s, src, profiles, fqn) for s in seq(src, raw, "sites", f"transformation '{fqn}'"))
    if not sites:
        src.warn(f"transformation '{fqn}' lists no sites", value=name, key="name")
    return Transformation(
        name=name, namespace=namespace, version=version, sites=sites,
        requires=texts(src, raw, "requires", f"transformation '{fqn}'"),
        profiles=profiles(raw.get("profiles"), f"profiles of transformation '{fqn}'"),
        hooks=hooks(src, raw.get("hooks"), f"transformation '{fqn}'"),
        metadata=string_map(src, raw.get("metadata"), f"metadata of transformation '{fqn}'"),
        checksum=string_map(src, raw.get("checksum"), f"checksum of transformation '{fqn}'"))


def _tr_site(entry: Any, src: TextSource, profiles: ProfileReader, fqn: str) -> TransformationSite:
    what = f"a site of transformation '{fqn}'"
    raw = mapping(src, entry, what, _TR_SITE_KEYS, required=("name", "pfn"), anchor=fqn, strict=_STRICT)
    if raw.get("type") is None:  # required by the schema: no default that would move the job elsewhere
        src.fail(f"{what} is missing the required key 'type' (installed or stageable)",
                 rule="a transformation site has 'type'", value=text(src, raw, "pfn", what), key="pfn")
    kind = (text(src, raw, "type", what) or "").lower()
    if kind not in _TR_TYPES:
        src.fail(f"type of {what} must be installed or stageable", rule="type is installed|stageable",
                 value=raw.get("type"), key="type")
    return TransformationSite(
        name=text(src, raw, "name", what, required=True) or "",
        pfn=text(src, raw, "pfn", what, required=True) or "",
        type="stageable" if kind == "stageable" else "installed",
        arch=text(src, raw, "arch", what), os_type=text(src, raw, "os.type", what),
        os_release=text(src, raw, "os.release", what), os_version=text(src, raw, "os.version", what),
        container=text(src, raw, "container", what), bypass=flag(src, raw, "bypass", what),
        profiles=profiles(raw.get("profiles"), f"profiles of {what}"),
        metadata=string_map(src, raw.get("metadata"), f"metadata of {what}"))


def _container(entry: Any, src: TextSource, profiles: ProfileReader) -> Container:
    raw = mapping(src, entry, "a container", _CONTAINER_KEYS, required=("name", "type", "image"),
                  strict=_STRICT)
    name = text(src, raw, "name", "a container", required=True) or ""
    what = f"container '{name}'"
    mounts = texts(src, raw, "mounts", what)
    if raw.get("mount") is not None:
        mounts += (text(src, raw, "mount", what) or "",)
    return Container(
        name=name, type=text(src, raw, "type", what, required=True) or "",
        image=text(src, raw, "image", what, required=True) or "",
        image_site=text(src, raw, "image.site", what) or text(src, raw, "imageSite", what),
        checksum=string_map(src, raw.get("checksum"), f"checksum of {what}"), mounts=mounts,
        bypass=flag(src, raw, "bypass", what),
        profiles=profiles(raw.get("profiles"), f"profiles of {what}"),
        metadata=string_map(src, raw.get("metadata"), f"metadata of {what}"))


def tc_to_data(tc: TransformationCatalog, *, inline: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {} if inline else {"pegasus": "5.0"}
    data["transformations"] = [_transformation_data(t) for t in tc]
    if tc.containers:
        data["containers"] = [_container_data(c) for c in tc.containers.values()]
    return data


def _transformation_data(t: Transformation) -> dict[str, Any]:
    data: dict[str, Any] = {}
    _put(data, "namespace", t.namespace)
    data["name"] = t.name
    _put(data, "version", t.version)
    _put(data, "requires", list(t.requires))
    data["sites"] = [_tr_site_data(s) for s in t.sites]
    _put_maps(data, profiles=t.profiles, hooks=t.hooks, metadata=t.metadata, checksum=t.checksum)
    return data


def _tr_site_data(s: TransformationSite) -> dict[str, Any]:
    data: dict[str, Any] = {"name": s.name, "pfn": s.pfn, "type": s.type}
    if s.bypass:
        data["bypass"] = True
    for key, value in (("arch", s.arch), ("os.type", s.os_type), ("os.release", s.os_release),
                       ("os.version", s.os_version), ("container", s.container)):
        _put(data, key, value)
    _put_maps(data, profiles=s.profiles, metadata=s.metadata)
    return data


def _container_data(c: Container) -> dict[str, Any]:
    data: dict[str, Any] = {"name": c.name, "type": c.type, "image": c.image}
    _put(data, "mounts", list(c.mounts))
    if c.bypass:
        data["bypass"] = True
    _put(data, "image.site", c.image_site)
    _put_maps(data, checksum=c.checksum, metadata=c.metadata, profiles=c.profiles)
    return data


# --- site catalog --------------------------------------------------------------------------------

def sc_from_data(data: Any, src: TextSource, profiles: ProfileReader | None = None, *,
                 inline: bool = False) -> SiteCatalog:
    what = "the inline site catalog" if inline else "a site catalog"
    raw = mapping(src, data, what, _SC_KEYS, strict=_STRICT)
    check_header(src, raw)
    read_profiles = profiles or ProfileReader(src)
    catalog = SiteCatalog()
    kinds: dict[str, int] = {}
    for entry in seq(src, raw, "sites", what):
        site = _site(entry, src, read_profiles, kinds)
        if site.name in catalog:
            src.warn(f"site '{site.name}' is declared twice; the last one wins", value=site.name, key="name")
        catalog.add(site)
    return catalog


def _site(entry: Any, src: TextSource, profiles: ProfileReader, kinds: dict[str, int]) -> Site:
    raw = mapping(src, entry, "a site", _SITE_KEYS, required=("name",), strict=_STRICT)
    name = text(src, raw, "name", "a site", required=True) or ""
    what = f"site '{name}'"
    return Site(
        name=name, arch=text(src, raw, "arch", what), os_type=text(src, raw, "os.type", what),
        os_release=text(src, raw, "os.release", what), os_version=text(src, raw, "os.version", what),
        directories=tuple(_directory(d, src, profiles, name, kinds)
                          for d in seq(src, raw, "directories", what)),
        grids=tuple(_grid(g, src, what) for g in seq(src, raw, "grids", what)),
        profiles=profiles(raw.get("profiles"), f"profiles of {what}"),
        metadata=string_map(src, raw.get("metadata"), f"metadata of {what}"))


def _directory(entry: Any, src: TextSource, profiles: ProfileReader, name: str,
               kinds: dict[str, int]) -> Directory:
    """One directory of the site ``name``; ``kinds`` counts the directory types read so far, so that a
    message about this one cites its own ``type:`` line, not the first directory's of the same type."""
    site = f"site '{name}'"
    what = f"a directory of {site}"
    raw = mapping(src, entry, what, _DIR_KEYS, required=("type",), anchor=name, strict=_STRICT)
    kind = text(src, raw, "type", what, required=True) or ""
    nth = kinds[kind] = kinds.get(kind, 0) + 1
    if kind not in _DIR_TYPES:
        src.fail(f"directory type '{kind}' of {site} is not one of {', '.join(_DIR_TYPES)}",
                 rule="a directory's type is sharedScratch|sharedStorage|localScratch|localStorage",
                 value=kind, key="type", nth=nth)
    if not seq(src, raw, "fileServers", what):  # the schema requires one: a directory nothing serves
        src.fail(f"the {kind} directory of {site} lists no file servers",
                 rule="a directory has 'fileServers'", value=kind, key="type", nth=nth)
    servers = []
    for server in seq(src, raw, "fileServers", what):
        fs = mapping(src, server, f"a file server of {site}", _FS_KEYS, required=("url",), strict=_STRICT)
        operation = text(src, fs, "operation", "a file server") or "all"
        if operation not in _OPERATIONS:
            src.fail(f"operation of a file server of {site} must be all, get or put",
                     rule="operation is all|get|put", value=operation, key="operation")
        url = text(src, fs, "url", "a file server", required=True) or ""
        server_profiles = profiles(fs.get("profiles"), f"profiles of a file server of {site}")
        servers.append(FileServer(url=url, operation=operation, profiles=server_profiles))
    path = text(src, raw, "path", what) or ""
    if not path:  # the schema allows it, but sheaf places the site's files by this path
        src.warn(f"the {kind} directory of {site} has no path, which sheaf needs: the site's default "
                 "directory is used instead", value=kind, key="type", nth=nth)
    elif not path.startswith("/"):
        src.warn(f"the {kind} directory of {site} has a relative path, {path!r}, which sheaf does not use: "
                 "the site's default directory is used instead", value=path, key="path")
    return Directory(type=kind, path=path, shared_file_system=flag(src, raw, "sharedFileSystem", what),
                     file_servers=tuple(servers))


def _grid(entry: Any, src: TextSource, site: str) -> Grid:
    what = f"a grid of {site}"
    raw = mapping(src, entry, what, _GRID_KEYS, required=("type", "contact", "scheduler"), strict=_STRICT)
    return Grid(
        type=text(src, raw, "type", what, required=True) or "",
        contact=text(src, raw, "contact", what, required=True) or "",
        scheduler=text(src, raw, "scheduler", what, required=True) or "",
        job_type=text(src, raw, "jobtype", what),
        free_mem=integer(src, raw, "freeMem", what), total_mem=integer(src, raw, "totalMem", what),
        max_count=integer(src, raw, "maxCount", what), max_cpu_time=integer(src, raw, "maxCPUTime", what),
        running_jobs=integer(src, raw, "runningJobs", what),
        jobs_in_queue=integer(src, raw, "jobsInQueue", what),
        idle_nodes=integer(src, raw, "idleNodes", what), total_nodes=integer(src, raw, "totalNodes", what))


def sc_to_data(sc: SiteCatalog, *, inline: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {} if inline else {"pegasus": "5.0"}
    data["sites"] = [_site_data(s) for s in sc]
    return data


def _site_data(s: Site) -> dict[str, Any]:
    data: dict[str, Any] = {"name": s.name}
    for key, value in (("arch", s.arch), ("os.type", s.os_type), ("os.release", s.os_release),
                       ("os.version", s.os_version)):
        _put(data, key, value)
    data["directories"] = [_directory_data(d) for d in s.directories]
    _put(data, "grids", [_grid_data(g) for g in s.grids])
    _put_maps(data, profiles=s.profiles, metadata=s.metadata)
    return data


def _directory_data(d: Directory) -> dict[str, Any]:
    servers = []
    for fs in d.file_servers:
        server: dict[str, Any] = {"url": fs.url, "operation": fs.operation}
        _put_maps(server, profiles=fs.profiles)
        servers.append(server)
    return {"type": d.type, "path": d.path, "sharedFileSystem": d.shared_file_system, "fileServers": servers}


_GRID_FIELDS = (("jobtype", "job_type"), ("freeMem", "free_mem"), ("totalMem", "total_mem"),
                ("maxCount", "max_count"), ("maxCPUTime", "max_cpu_time"), ("runningJobs", "running_jobs"),
                ("jobsInQueue", "jobs_in_queue"), ("idleNodes", "idle_nodes"), ("totalNodes", "total_nodes"))


def _grid_data(g: Grid) -> dict[str, Any]:
    data: dict[str, Any] = {"type": g.type, "contact": g.contact, "scheduler": g.scheduler}
    for key, attribute in _GRID_FIELDS:
        _put(data, key, getattr(g, attribute))
    return data


# --- replica catalog -----------------------------------------------------------------------------

def rc_from_data(data: Any, src: TextSource, *, inline: bool = False) -> ReplicaCatalog:
    what = "the inline replica catalog" if inline else "a replica catalog"
    raw = mapping(src, data, what, _RC_KEYS, strict=_STRICT)
    check_header(src, raw)
    catalog = ReplicaCatalog()
    for entry in seq(src, raw, "replicas", what):
        catalog.add(_replica(entry, src))
    return catalog


def _replica(entry: Any, src: TextSource) -> Replica:
    raw = mapping(src, entry, "a replica", _REPLICA_KEYS, required=("lfn",), strict=_STRICT)
    lfn = text(src, raw, "lfn", "a replica", required=True) or ""
    what = f"replica '{lfn}'"
    pfns = []
    for item in seq(src, raw, "pfns", what):
        pfn = mapping(src, item, f"a pfn of {what}", _PFN_KEYS, required=("pfn",), anchor=lfn, strict=_STRICT)
        pfns.append(PFN(text(src, pfn, "pfn", what, required=True) or "", text(src, pfn, "site", what)))
    if raw.get("pfn") is not None:
        pfns.append(PFN(text(src, raw, "pfn", what) or "", text(src, raw, "site", what)))
    if not pfns:
        src.fail(f"{what} has no pfns", rule="a replica lists at least one pfn", value=lfn, key="lfn")
    replica = Replica(lfn=lfn, pfns=tuple(pfns), regex=flag(src, raw, "regex", what),
                      checksum=string_map(src, raw.get("checksum"), f"checksum of {what}"),
                      metadata=string_map(src, raw.get("metadata"), f"metadata of {what}"))
    problem = replica.regex_problem()
    if problem:
        src.fail(f"regex replica: {problem}", rule=REGEX_RULE, value=lfn, key="lfn")
    return replica


#: the rule a regex replica entry breaks when ``Replica.regex_problem`` finds a problem
REGEX_RULE = "a regex lfn compiles and its pfns name only groups it has"


def rc_to_data(rc: ReplicaCatalog, *, inline: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {} if inline else {"pegasus": "5.0"}
    data["replicas"] = [_replica_data(r) for r in rc]
    return data


def _replica_data(r: Replica) -> dict[str, Any]:
    pfns = []
    for p in r.pfns:
        pfn: dict[str, Any] = {"pfn": p.pfn}
        _put(pfn, "site", p.site)
        pfns.append(pfn)
    data: dict[str, Any] = {"lfn": r.lfn, "pfns": pfns}
    _put_maps(data, checksum=r.checksum, metadata=r.metadata)
    if r.regex:
        data["regex"] = True
    return data


# --- shared writer helpers -----------------------------------------------------------------------

def _put(data: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != []:
        data[key] = value


def _put_maps(data: dict[str, Any], **maps: Any) -> None:
    """Copy non-empty mappings as plain dicts (``profiles`` as ``{ns: {key: value}}``)."""
    for key, value in maps.items():
        if value:
            data[key] = {k: dict(v) if isinstance(v, dict) else v for k, v in value.items()}
