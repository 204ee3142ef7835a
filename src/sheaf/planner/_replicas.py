"""Replica selection: where a workflow input is read from, as a ranked list of source URLs.

Candidates of an lfn, for a job on site S:

1. ``--input-dir`` directories (as PATH lists them, ``os.pathsep``): ``D/<lfn>`` when that file
   exists -- Pegasus's directory replica catalog; the first directory holding it wins;
2. the replica catalog's PFNs (exact entries first, then regex entries, in file order).  A PFN without
   a scheme is a path, relative ones from the planning directory (``DataOptions.cwd``).

``pegasus.selector.replica`` orders (and filters) the catalog's candidates; ``sheaf-transfer`` tries
them in that order at run time, a failed source falling through to the next:

- ``Default``: ``file://`` URLs (files of this host) before remote ones; within each group replicas on
  S first, then on ``local``, then the others; otherwise file order;
- ``Local``: only replicas on ``local`` (Pegasus's Local selector, for stage-in from the submit host);
- ``Restricted``: ``pegasus.selector.replica.ignore.stagein.sites`` (comma list) drops replicas of those
  sites, ``pegasus.selector.replica.prefer.stagein.sites`` puts those first; the ``.<site>.`` forms of
  both (``pegasus.selector.replica.S.ignore.stagein.sites``) apply to jobs on S only;
- ``Regex``: ``pegasus.selector.replica.regex.rank.N = <regex>`` -- a PFN matching rank N's regex
  sorts before one matching a higher N, unmatched PFNs last (Pegasus drops them; sheaf keeps them
  as last resorts and says so in the README).

Nothing here touches the file system except the ``--input-dir`` existence test.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from sheaf.errors import PlanningError
from sheaf.model import PFN, Properties, ReplicaCatalog, file_url_path, url_scheme

SELECTORS = ("default", "local", "restricted", "regex")
_KEPT_BY_QUOTE = re.compile(r"[A-Za-z0-9_.~/-]*")  # urllib.parse.quote's always-safe characters and "/"


@dataclass(frozen=True, slots=True)
class Source:
    """One candidate: its URL and the site label the transfer list records."""

    url: str
    site: str


def path_url(path: str) -> str:
    """A ``file://`` URL of the absolute ``path`` (percent-encoded as ``file_url_path`` decodes)."""
    return "file://" + quote(path)


def url_in(directory: str, name: str) -> str:
    """``path_url(os.path.join(directory, name))``, quoting only ``name``: the data pass makes one
    URL per file of every transfer list, nearly all under a handful of directories.  Percent-encoding
    is per character, so the directory's prefix is quoted once."""
    if not directory or name.startswith("/"):
        return path_url(os.path.join(directory, name))
    return dir_url(directory) + quoted_name(name)


def quoted_name(name: str) -> str:
    """``name`` percent-encoded as ``path_url`` does: ASCII letters, digits and ``_.~/-`` and ``%``
    escapes only, so its JSON text is itself in quotes."""
    # a name of characters quote() keeps is its own quoting: one regex where quote() costs several calls
    return name if _KEPT_BY_QUOTE.fullmatch(name) else quote(name)


def dir_url(directory: str) -> str:
    """The ``file://`` URL of the non-empty ``directory`` with a trailing ``/``: a name's URL under it
    is this plus ``quoted_name(name)``."""
    return _dir_url(directory if directory.endswith("/") else directory + "/")


@functools.lru_cache(maxsize=64)
def _dir_url(directory: str) -> str:
    return path_url(directory)


def local_path(url: str) -> str | None:
    """The local path a ``file://`` URL names (``None`` for other URLs)."""
    return file_url_path(url)


@dataclass(slots=True)
class ReplicaSelector:
    """Ranks the candidates of an lfn for a site (module docstring)."""

    rc: ReplicaCatalog | None
    properties: Properties
    input_dirs: tuple[str, ...] = ()
    cwd: str = "."
    kind: str = "default"
    ranks: list[tuple[int, re.Pattern[str]]] = field(default_factory=list)
    checksums: dict[str, str] = field(default_factory=dict)
    #: exact entries by lfn (``ReplicaCatalog.lookup`` scans the catalog: O(entries) per lfn)
    exact: dict[str, list[PFN]] = field(default_factory=dict)
    regex: ReplicaCatalog | None = None

    def __post_init__(self) -> None:
        name = (self.properties.get_str("pegasus.selector.replica") or "Default").strip().lower()
        if name not in SELECTORS:
            raise PlanningError("unknown replica selector", value=name,
                                rule="pegasus.selector.replica is Default, Local, Restricted or Regex")
        self.kind = name
        self.ranks = _regex_ranks(self.properties) if name == "regex" else []
        self.checksums = _checksums(self.rc)
        for replica in self.rc or ():
            if not replica.regex:
                self.exact.setdefault(replica.lfn, []).extend(replica.pfns)
        regex = [replica for replica in self.rc or () if replica.regex]
        self.regex = ReplicaCatalog(regex) if regex else None

    def sources(self, lfn: str, site: str) -> list[Source]:
        found = [Source(path_url(os.path.abspath(os.path.join(d, lfn))), "local")
                 for d in self.input_dirs if d and os.path.isfile(os.path.join(d, lfn))][:1]
        pfns = self.exact.get(lfn, []) + (self.regex.lookup(lfn) if self.regex is not None else [])
        if pfns:
            found += self._ranked(pfns, site)
        return found

    def known(self, lfn: str) -> bool:
        """Whether the replica catalog has any replica of ``lfn``, on whatever site."""
        return bool(self.exact.get(lfn)) or (self.regex is not None and bool(self.regex.lookup(lfn)))

    def checksum(self, lfn: str) -> str | None:
        return self.checksums.get(lfn)

    def _ranked(self, pfns: list[PFN], site: str) -> list[Source]:
        sources = [Source(self._url(p.pfn), p.site or "local") for p in pfns]
        if self.kind == "local":
            return [s for s in sources if s.site == "local"]
        if self.kind == "restricted":
            ignore = self._site_list("ignore", site)
            prefer = self._site_list("prefer", site)
            sources = [s for s in sources if s.site not in ignore]
            return sorted(sources, key=lambda s: s.site not in prefer)
        if self.kind == "regex":
            return sorted(sources, key=lambda s: _rank_of(self.ranks, s.url))
        return sorted(sources, key=lambda s: (url_scheme(s.url) != "file", _site_rank(s.site, site)))

    def _url(self, pfn: str) -> str:
        if url_scheme(pfn) is not None:
            return pfn
        return path_url(os.path.normpath(os.path.join(self.cwd, pfn)))

    def _site_list(self, which: str, site: str) -> set[str]:
        out: set[str] = set()
        for key in (f"pegasus.selector.replica.*.{which}.stagein.sites",
                    f"pegasus.selector.replica.{site}.{which}.stagein.sites"):
            raw = self.properties.get_str(key) or ""
            out.update(part.strip() for part in raw.split(",") if part.strip())
        return out


def find_local(lfn: str, site: str, input_dir: str | None, rc: ReplicaCatalog | None) -> str | None:
    """A local path of ``lfn`` (a sub-workflow's file): ``<input dir>/lfn``, else a local replica
    (``site``, then ``local``, then any; a relative path from the planning directory)."""
    for directory in (input_dir or "").split(os.pathsep):
        candidate = os.path.join(directory, lfn)
        if directory and os.path.isfile(candidate):
            return os.path.abspath(candidate)
    pfns = rc.lookup(lfn) if rc is not None else []
    for wanted in (site, "local", None):
        for pfn in pfns:
            path = os.path.abspath(pfn.pfn) if url_scheme(pfn.pfn) is None else file_url_path(pfn.pfn)
            if path is not None and (wanted is None or pfn.site == wanted):
                return path
    return None


def _site_rank(replica_site: str, site: str) -> int:
    return 0 if replica_site == site else 1 if replica_site == "local" else 2


def _regex_ranks(properties: Properties) -> list[tuple[int, re.Pattern[str]]]:
    prefix = "pegasus.selector.replica.regex.rank."
    ranks = []
    for key in properties:
        if key.startswith(prefix):
            number = key[len(prefix):]
            try:
                ranks.append((int(number), re.compile(properties[key])))
            except (ValueError, re.error) as exc:
                raise PlanningError("a replica regex rank cannot be used", value=f"{key} = {properties[key]}",
                                    rule="pegasus.selector.replica.regex.rank.N = a regular expression",
                                    detail=str(exc)) from None
    return sorted(ranks, key=lambda pair: pair[0])


def _rank_of(ranks: Sequence[tuple[int, re.Pattern[str]]], url: str) -> int:
    for position, (_, pattern) in enumerate(ranks):
        if pattern.search(url):
            return position
    return len(ranks)


def _checksums(rc: ReplicaCatalog | None) -> dict[str, str]:
    """lfn -> ``sha256`` of the catalog's exact entries that carry one: YAML's ``checksum: {sha256: ..}``,
    the text catalog's ``checksum.type="sha256" checksum.value=..``, or ``checksum.sha256`` metadata."""
    out: dict[str, str] = {}
    for replica in rc or ():
        if replica.regex:
            continue
        checksum = replica.checksum
        value = (checksum.get("sha256")
                 or (checksum.get("value") if checksum.get("type", "").lower() == "sha256" else None)
                 or replica.metadata.get("checksum.sha256"))
        if value:
            out.setdefault(replica.lfn, value.lower())
    return out
