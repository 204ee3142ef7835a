"""Catalogs: where transformations are installed, what the sites are, where files live.

Three catalogs, each a plain container of slotted records, readable from a standalone file or
inline in the workflow:

- ``TransformationCatalog``: transformations keyed by ``(namespace, name, version)``, each with
  per-site entries (pfn, installed/stageable, arch/os, container), profiles, ``requires``; and
  containers by name.
- ``SiteCatalog``: sites by handle, with arch/os, directories (with file servers), grids, profiles.
- ``ReplicaCatalog``: lfn -> pfns at sites, regex entries, checksums, metadata.

Lookup policy (``TransformationCatalog.lookup``): an exact ``(namespace, name, version)`` key wins;
otherwise a job that leaves namespace or version unset matches the one entry that agrees on the
parts it does set.  Two candidates is ambiguous and matches nothing (``candidates`` lists them so
the caller can say so).

Inline and standalone catalogs (documented in the README): when both name the same entry, the
standalone catalog's entry wins (it is the one the user passed with ``--tc``/``--sc``/``--rc`` or the
properties), and inline entries fill in what it does not name.  ``merged_with`` implements this.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import regex  # type: ignore[import-untyped]

from sheaf.errors import ValidationError
from sheaf.model._empty import EMPTY as _EMPTY

TransformationKey = tuple[str | None, str, str | None]
TransformationType = Literal["installed", "stageable"]


@dataclass(frozen=True, slots=True)
class TransformationSite:
    name: str
    pfn: str
    type: TransformationType = "installed"
    arch: str | None = None
    os_type: str | None = None
    os_release: str | None = None
    os_version: str | None = None
    container: str | None = None
    bypass: bool = False
    profiles: Mapping[str, Mapping[str, str]] = _EMPTY
    metadata: Mapping[str, str] = _EMPTY


@dataclass(frozen=True, slots=True)
class Transformation:
    name: str
    namespace: str | None = None
    version: str | None = None
    sites: tuple[TransformationSite, ...] = ()
    requires: tuple[str, ...] = ()
    profiles: Mapping[str, Mapping[str, str]] = _EMPTY
    hooks: Mapping[str, Any] = _EMPTY
    metadata: Mapping[str, str] = _EMPTY
    checksum: Mapping[str, str] = _EMPTY

    @property
    def key(self) -> TransformationKey:
        return (self.namespace, self.name, self.version)

    @property
    def fqn(self) -> str:
        text = f"{self.namespace}::{self.name}" if self.namespace else self.name
        return f"{text}:{self.version}" if self.version else text

    def site(self, name: str) -> TransformationSite | None:
        for entry in self.sites:
            if entry.name == name:
                return entry
        return None


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    type: str  # docker | singularity | shifter
    image: str
    image_site: str | None = None
    checksum: Mapping[str, str] = _EMPTY
    mounts: tuple[str, ...] = ()
    bypass: bool = False
    profiles: Mapping[str, Mapping[str, str]] = _EMPTY
    metadata: Mapping[str, str] = _EMPTY


@dataclass(slots=True, eq=True)
class TransformationCatalog:
    transformations: dict[TransformationKey, Transformation] = field(default_factory=dict)
    containers: dict[str, Container] = field(default_factory=dict)

    def add(self, transformation: Transformation) -> None:
        self.transformations[transformation.key] = transformation

    def __iter__(self) -> Iterator[Transformation]:
        return iter(self.transformations.values())

    def __len__(self) -> int:
        return len(self.transformations)

    def candidates(self, namespace: str | None, name: str, version: str | None) -> list[Transformation]:
        return [
            t for t in self.transformations.values()
            if t.name == name
            and (namespace is None or t.namespace == namespace)
            and (version is None or t.version == version)
        ]

    def lookup(self, namespace: str | None, name: str, version: str | None) -> Transformation | None:
        """The entry for a job's transformation (policy in the module docstring)."""
        exact = self.transformations.get((namespace, name, version))
        if exact is not None:
            return exact
        if namespace is not None and version is not None:
            return None
        found = self.candidates(namespace, name, version)
        return found[0] if len(found) == 1 else None

    def merged_with(self, fallback: TransformationCatalog | None) -> TransformationCatalog:
        """This catalog's entries, plus the fallback's entries this one does not name."""
        if fallback is None:
            return self
        merged = TransformationCatalog(dict(fallback.transformations), dict(fallback.containers))
        merged.transformations.update(self.transformations)
        merged.containers.update(self.containers)
        return merged


DirectoryType = Literal["sharedScratch", "sharedStorage", "localScratch", "localStorage"]


@dataclass(frozen=True, slots=True)
class FileServer:
    url: str
    operation: str = "all"  # all | get | put
    profiles: Mapping[str, Mapping[str, str]] = _EMPTY


@dataclass(frozen=True, slots=True)
class Directory:
    type: str
    path: str
    shared_file_system: bool = False
    file_servers: tuple[FileServer, ...] = ()


@dataclass(frozen=True, slots=True)
class Grid:
    type: str
    contact: str
    scheduler: str
    job_type: str | None = None
    free_mem: int | None = None
    total_mem: int | None = None
    max_count: int | None = None
    max_cpu_time: int | None = None
    running_jobs: int | None = None
    jobs_in_queue: int | None = None
    idle_nodes: int | None = None
    total_nodes: int | None = None


@dataclass(frozen=True, slots=True)
class Site:
    name: str
    arch: str | None = None
    os_type: str | None = None
    os_release: str | None = None
    os_version: str | None = None
    directories: tuple[Directory, ...] = ()
    grids: tuple[Grid, ...] = ()
    profiles: Mapping[str, Mapping[str, str]] = _EMPTY
    metadata: Mapping[str, str] = _EMPTY

    def directory(self, type_: str) -> Directory | None:
        for directory in self.directories:
            if directory.type == type_:
                return directory
        return None


@dataclass(slots=True, eq=True)
class SiteCatalog:
    sites: dict[str, Site] = field(default_factory=dict)

    def add(self, site: Site) -> None:
        self.sites[site.name] = site

    def get(self, name: str) -> Site | None:
        return self.sites.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.sites

    def __iter__(self) -> Iterator[Site]:
        return iter(self.sites.values())

    def __len__(self) -> int:
        return len(self.sites)

    def merged_with(self, fallback: SiteCatalog | None) -> SiteCatalog:
        if fallback is None:
            return self
        merged = SiteCatalog(dict(fallback.sites))
        merged.sites.update(self.sites)
        return merged


@dataclass(frozen=True, slots=True)
class PFN:
    pfn: str
    site: str | None = None


@dataclass(frozen=True, slots=True)
class Replica:
    lfn: str
    pfns: tuple[PFN, ...]
    regex: bool = False
    checksum: Mapping[str, str] = _EMPTY
    metadata: Mapping[str, str] = _EMPTY

    def regex_problem(self) -> str | None:
        """Why this regex entry cannot be used -- its lfn does not compile, or a pfn names a group
        (``[n]``) it does not have -- or ``None``.  Readers refuse such an entry when they read it,
        so that planning never meets it."""
        if not self.regex:
            return None
        try:
            pattern = _compiled(self.lfn)  # warnings silenced: a FutureWarning on stderr is not an answer
        except (regex.error, RecursionError, OverflowError, ValueError) as exc:
            return f"the regular expression does not compile: {exc}"
        for pfn in self.pfns:
            for group in _GROUP.finditer(pfn.pfn):
                if _group_number(group.group(1)) > pattern.groups:
                    return (f"pfn '{pfn.pfn}' names group {group.group(0)} but the expression has "
                            f"{pattern.groups} group(s)")
        return None


@dataclass(slots=True, eq=True)
class ReplicaCatalog:
    """Replicas in file order; exact entries are indexed by lfn, regex entries scanned in order."""

    replicas: list[Replica] = field(default_factory=list)

    def add(self, replica: Replica) -> None:
        self.replicas.append(replica)

    def __iter__(self) -> Iterator[Replica]:
        return iter(self.replicas)

    def __len__(self) -> int:
        return len(self.replicas)

    def lookup(self, lfn: str) -> list[PFN]:
        """All pfns of ``lfn``: exact entries first, then regex entries (groups as ``[n]``)."""
        found: list[PFN] = []
        for replica in self.replicas:
            if not replica.regex and replica.lfn == lfn:
                found.extend(replica.pfns)
        for replica in self.replicas:
            if replica.regex:
                match = _regex_match(replica.lfn, lfn)
                if match:
                    found.extend(PFN(_expand_groups(p.pfn, match), p.site) for p in replica.pfns)
        return found

    def merged_with(self, fallback: ReplicaCatalog | None) -> ReplicaCatalog:
        if fallback is None:
            return self
        mine = {r.lfn for r in self.replicas}
        return ReplicaCatalog(self.replicas + [r for r in fallback.replicas if r.lfn not in mine])


_GROUP = re.compile(r"\[(\d+)\]")
REGEX_TIMEOUT = 2.0  # seconds one regex replica may take to match one lfn


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> regex.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return regex.compile(pattern)


def _regex_match(pattern: str, lfn: str) -> regex.Match[str] | None:
    """``pattern`` matched against the whole ``lfn``, bounded in time.

    The ``regex`` engine (not ``re``) because it takes a timeout: a user's expression that
    backtracks exponentially (``(a|a)+$``) must end in a message naming it, never stall planning.
    """
    try:
        return _compiled(pattern).fullmatch(lfn, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        raise ValidationError(f"regex replica took over {REGEX_TIMEOUT:g} s to match lfn {lfn!r}",
                              rule="regex replicas match in bounded time", value=pattern) from None


def _group_number(digits: str) -> int:
    """``[n]``'s group number; past nine digits, more than any expression has (and no 4,300-digit ``int``)."""
    return int(digits) if len(digits) <= 9 else 10**9


def _expand_groups(pfn: str, match: regex.Match[str]) -> str:
    """Pegasus regex replicas write ``[1]`` for the first group of the lfn's match (a group the
    expression lacks, which readers refuse, expands to nothing)."""
    def group(found: re.Match[str]) -> str:
        number = _group_number(found.group(1))
        return (match.group(number) or "") if number <= match.re.groups else ""

    return _GROUP.sub(group, pfn)
