"""Hypothesis strategies for random workflows and catalogs in sheaf's canonical form.

Canonical means what a reader returns: profile keys already canonical (``normalize_profiles`` is
the identity on them), profile values strings, empty mappings equal to ``EMPTY``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from sheaf.model import (
    PEGASUS_KEYS,
    PFN,
    Container,
    Directory,
    FileServer,
    Grid,
    Job,
    Replica,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Use,
    Workflow,
)

# Text that stresses the writer's quoting: YAML indicators, words YAML reads as other types,
# leading dashes, digits, quotes, line breaks, non-ASCII and astral characters.
_TRICKY = st.sampled_from(["", " ", "-", "--x", "-a", "007", "4.0", "1e3", "0x1F", "true", "No", "null", "~",
                           "a: b", "a #b", "[x]", "{y}", "'q'", '"d"', "multi\nline", "tab\there",
                           "caf\u00e9", "\U0001f600", "x\u2028y", "\\back", "*star", "&amp", "!bang", "@at",
                           "%pct", "`tick`", "?q", "|pipe", ">gt", "=", "<<", ".inf", ".nan", "y",
                           "_0", "-_1", "_.5"])
# no NUL: readers refuse it (no program, file name or environment can take one); names (which
# become file names and ClassAd strings) hold no line break either
_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
_NAME_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00\n\r")
text = st.one_of(_TRICKY, st.text(_CHARS, max_size=12))
name = st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,8}", fullmatch=True),
                 _TRICKY.filter(lambda t: t and "\n" not in t), st.text(_NAME_CHARS, min_size=1, max_size=8))
small_map = st.dictionaries(text, text, max_size=3)
_LOWER_KEY = st.from_regex(r"[a-z][a-z0-9_.]{0,10}", fullmatch=True)


@st.composite
def profiles(draw: Any) -> dict[str, dict[str, str]]:
    result: dict[str, dict[str, str]] = {}
    for ns in draw(st.lists(st.sampled_from(["pegasus", "condor", "dagman", "env", "globus"]), unique=True,
                            max_size=3)):
        if ns == "pegasus":
            keys = st.sampled_from(sorted(PEGASUS_KEYS))
        elif ns == "env":
            keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
        else:
            keys = _LOWER_KEY
        result[ns] = draw(st.dictionaries(keys, text, max_size=3))
    return result


hooks = st.one_of(st.just({}), st.builds(lambda cmd: {"shell": [{"_on": "end", "cmd": cmd}]}, text))


@st.composite
def uses(draw: Any) -> Use:
    return Use(lfn=draw(name), type=draw(st.sampled_from(["input", "output", "checkpoint"])),
               stage_out=draw(st.booleans()), register_replica=draw(st.booleans()),
               optional=draw(st.booleans()), bypass_staging=draw(st.booleans()),
               size=draw(st.none() | st.integers(0, 2**40)), metadata=draw(small_map),
               for_planning=draw(st.booleans()))


@st.composite
def jobs(draw: Any, jid: str) -> Job:
    kind = draw(st.sampled_from(["job", "job", "pegasusWorkflow", "condorWorkflow"]))
    optional = st.none() | name
    if kind == "job":
        job_name, file = draw(name), None
    else:
        file = draw(name)
        job_name = draw(st.just(file) | name)
    return Job(
        id=jid, name=job_name, namespace=draw(optional) if kind == "job" else None,
        version=draw(optional) if kind == "job" else None, type=kind,
        arguments=tuple(draw(st.lists(text, max_size=5))), uses=tuple(draw(st.lists(uses(), max_size=4))),
        profiles=draw(profiles()), node_label=draw(optional), file=file, stdin=draw(optional),
        stdout=draw(optional), stderr=draw(optional), hooks=draw(hooks), metadata=draw(small_map))


@st.composite
def transformation_catalogs(draw: Any) -> TransformationCatalog:
    tc = TransformationCatalog()
    for container_name in draw(st.lists(name, unique=True, max_size=2)):
        tc.containers[container_name] = Container(
            name=container_name, type=draw(st.sampled_from(["docker", "singularity", "shifter"])),
            image=draw(name), image_site=draw(st.none() | name), checksum=draw(small_map),
            mounts=tuple(draw(st.lists(name, max_size=2))), bypass=draw(st.booleans()),
            profiles=draw(profiles()), metadata=draw(small_map))
    for _ in range(draw(st.integers(0, 3))):
        sites = tuple(TransformationSite(
            name=draw(name), pfn=draw(name), type=draw(st.sampled_from(["installed", "stageable"])),
            arch=draw(st.none() | name), os_type=draw(st.none() | name), os_release=draw(st.none() | name),
            os_version=draw(st.none() | name), container=draw(st.none() | name), bypass=draw(st.booleans()),
            profiles=draw(profiles()), metadata=draw(small_map)) for _ in range(draw(st.integers(1, 2))))
        tc.add(Transformation(
            name=draw(name), namespace=draw(st.none() | name), version=draw(st.none() | name), sites=sites,
            requires=tuple(draw(st.lists(name, max_size=2))), profiles=draw(profiles()), hooks=draw(hooks),
            metadata=draw(small_map), checksum=draw(small_map)))
    return tc


@st.composite
def site_catalogs(draw: Any) -> SiteCatalog:
    sc = SiteCatalog()
    count = st.none() | st.integers(0, 10**6)
    for site_name in draw(st.lists(name, unique=True, max_size=3)):
        directories = tuple(Directory(
            type=draw(st.sampled_from(["sharedScratch", "sharedStorage", "localScratch", "localStorage"])),
            path=draw(text), shared_file_system=draw(st.booleans()),
            file_servers=tuple(FileServer(draw(name), draw(st.sampled_from(["all", "get", "put"])),
                                          draw(profiles())) for _ in range(draw(st.integers(1, 2)))))
            for _ in range(draw(st.integers(0, 2))))
        grids = tuple(Grid(draw(name), draw(name), draw(name), draw(st.none() | name),
                           *[draw(count) for _ in range(8)])
                      for _ in range(draw(st.integers(0, 1))))
        sc.add(Site(name=site_name, arch=draw(st.none() | name), os_type=draw(st.none() | name),
                    os_release=draw(st.none() | name), os_version=draw(st.none() | name),
                    directories=directories, grids=grids, profiles=draw(profiles()),
                    metadata=draw(small_map)))
    return sc


@st.composite
def replica_catalogs(draw: Any) -> ReplicaCatalog:
    rc = ReplicaCatalog()
    for _ in range(draw(st.integers(0, 3))):
        regex = draw(st.booleans())
        lfn = draw(st.from_regex(r"[a-z]{1,4}\\\.[0-9]\+", fullmatch=True) if regex else name)
        pfns = tuple(PFN(draw(name), draw(st.none() | name)) for _ in range(draw(st.integers(1, 2))))
        rc.add(Replica(lfn, pfns, regex=regex, checksum=draw(small_map), metadata=draw(small_map)))
    return rc


@st.composite
def workflows(draw: Any, catalogs: bool = True) -> Workflow:
    ids = draw(st.lists(name, unique=True, max_size=6))
    wf = Workflow(name=draw(name))
    for jid in ids:
        wf.jobs[jid] = draw(jobs(jid))
    for parent in draw(st.lists(st.sampled_from(ids), unique=True, max_size=3)) if ids else []:
        wf.dependencies[parent] = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3))
    wf.hooks = draw(hooks)
    wf.metadata = draw(small_map)
    wf.profiles = draw(profiles())
    wf.header = draw(st.dictionaries(st.sampled_from(["apiLang", "createdBy", "createdOn"]), text))
    wf.format_version = draw(st.sampled_from(["5.0", "5.0.4"]))
    if catalogs:
        wf.transformation_catalog = draw(st.none() | transformation_catalogs())
        wf.site_catalog = draw(st.none() | site_catalogs())
        wf.replica_catalog = draw(st.none() | replica_catalogs())
    return wf
