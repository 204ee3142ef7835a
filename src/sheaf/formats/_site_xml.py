"""Site catalog XML (read only): schema 4 ``<sitecatalog>`` and the older elements the Pegasus manual show.

Read into ``sheaf.model.SiteCatalog``.  Elements (namespace URIs are ignored, names matter):

- ``<site handle arch os osrelease osversion>``: a site; ``os="LINUX"`` is stored lower-case.
- ``<directory type path [free-size total-size]>`` with ``<file-server operation url>`` children;
  ``shared-scratch`` -> ``sharedScratch`` and likewise for the other three types.
- ``<grid type contact scheduler jobtype ...>``; ``<profile namespace key>value</profile>``;
  ``<metadata key>value</metadata>``.
- Older (XML3, the ``siteX`` example of Pegasus 4.x's job clustering documentation):
  ``<jobmanager universe url>`` -> a gt2 grid whose job type is ``compute`` for ``vanilla`` and
  ``auxillary`` for ``transfer``; ``<workdirectory>`` -> the shared-scratch directory; ``<gridftp url
  storage>`` -> a shared-storage directory with that file server.  ``<lrc>`` and the ``gridlaunch``
  attribute have no sheaf meaning: kept out, with a warning.

The root may be ``<sitecatalog>`` or a single ``<site>`` (as documentation snippets are).  Unknown
elements are warned about and skipped; a malformed document or a missing required attribute is a
``FormatError`` with the element's line; parsing is ``_xml``'s (internal entities expanded,
external ones refused).
"""

from __future__ import annotations

import os

from lxml import etree

from sheaf.errors import FormatError
from sheaf.formats._common import read_bytes
from sheaf.formats._xml import parse_xml
from sheaf.model import Directory, FileServer, Grid, Site, SiteCatalog, normalize_profiles

_DIRECTORY_TYPES = {
    "shared-scratch": "sharedScratch", "shared-storage": "sharedStorage",
    "local-scratch": "localScratch", "local-storage": "localStorage",
    "sharedscratch": "sharedScratch", "sharedstorage": "sharedStorage",
    "localscratch": "localScratch", "localstorage": "localStorage",
}
_JOB_TYPES = {"vanilla": "compute", "transfer": "auxillary", "globus": "compute"}


def _name(element: etree._Element) -> str:
    return str(etree.QName(element).localname) if isinstance(element.tag, str) else ""


class _Reader:
    def __init__(self, path: str, warnings: list[str] | None) -> None:
        self.path = path
        self.warnings = warnings

    def warn(self, element: etree._Element, message: str) -> None:
        if self.warnings is not None:
            self.warnings.append(f"{self.path}:{element.sourceline}: {message}")

    def required(self, element: etree._Element, attribute: str) -> str:
        value = element.get(attribute)
        if value is None or value.strip() == "":
            raise FormatError(f"<{_name(element)}> has no '{attribute}'",
                              rule=f"<{_name(element)}> requires the '{attribute}' attribute",
                              value=etree.tostring(element, encoding="unicode").split(">")[0] + ">",
                              path=self.path, line=element.sourceline)
        return str(value).strip()

    def catalog(self, root: etree._Element) -> SiteCatalog:
        catalog = SiteCatalog()
        sites = [root] if _name(root) == "site" else [e for e in root if _name(e) == "site"]
        if _name(root) not in ("site", "sitecatalog"):
            raise FormatError("not a site catalog", rule="the root element is <sitecatalog> or <site>",
                              value=f"<{_name(root)}>", path=self.path, line=root.sourceline)
        for element in root if _name(root) == "sitecatalog" else ():
            if _name(element) not in ("site", "") and not isinstance(element, etree._Comment):
                self.warn(element, f"<{_name(element)}> is not a site; skipped")
        for element in sites:
            site = self.site(element)
            if site.name in catalog:
                raise FormatError("duplicate site", rule="site handles are unique", value=site.name,
                                  path=self.path, line=element.sourceline)
            catalog.add(site)
        return catalog

    def site(self, element: etree._Element) -> Site:
        handle = self.required(element, "handle")
        directories: list[Directory] = []
        grids: list[Grid] = []
        raw_profiles: dict[str, dict[str, str]] = {}
        metadata: dict[str, str] = {}
        if element.get("gridlaunch") is not None:
            self.warn(element, "the 'gridlaunch' attribute has no meaning in sheaf; ignored")
        for child in element:
            kind = _name(child)
            if kind == "directory":
                directories.append(self.directory(child))
            elif kind == "grid":
                grids.append(self.grid(child))
            elif kind == "profile":
                namespace = self.required(child, "namespace")
                value = (child.text or "").strip()
                raw_profiles.setdefault(namespace, {})[self.required(child, "key")] = value
            elif kind == "metadata":
                metadata[self.required(child, "key")] = (child.text or "").strip()
            elif kind == "jobmanager":
                universe = child.get("universe", "vanilla")
                grids.append(Grid("gt2", self.required(child, "url"), "unknown",
                                  _JOB_TYPES.get(universe, universe)))
            elif kind == "workdirectory":
                path = (child.text or "").strip()
                directories.append(Directory("sharedScratch", path, True, (FileServer(f"file://{path}"),)))
            elif kind == "gridftp":
                storage = child.get("storage", "/")
                server = FileServer(self.required(child, "url").rstrip("/") + storage)
                directories.append(Directory("sharedStorage", storage, False, (server,)))
            elif kind:
                self.warn(child, f"<{kind}> in site '{handle}' has no meaning in sheaf; ignored")
        profiles, found = normalize_profiles(raw_profiles)
        for message in found:
            self.warn(element, message)
        os_type = element.get("os")
        return Site(name=handle, arch=_lower(element.get("arch")), os_type=_lower(os_type),
                    os_release=element.get("osrelease"), os_version=element.get("osversion"),
                    directories=tuple(directories), grids=tuple(grids), profiles=profiles, metadata=metadata)

    def directory(self, element: etree._Element) -> Directory:
        raw_type = self.required(element, "type")
        kind = _DIRECTORY_TYPES.get(raw_type.lower())
        if kind is None:
            raise FormatError("unknown directory type",
                              rule="type is shared-scratch, shared-storage, local-scratch or local-storage",
                              value=raw_type, path=self.path, line=element.sourceline)
        servers = []
        for child in element:
            if _name(child) == "file-server":
                operation = child.get("operation", "all")
                if operation not in ("all", "get", "put"):
                    raise FormatError("unknown file-server operation", rule="operation is all, get or put",
                                      value=operation, path=self.path, line=child.sourceline)
                servers.append(FileServer(self.required(child, "url"), operation))
            elif _name(child):
                self.warn(child, f"<{_name(child)}> inside <directory> is ignored")
        shared = kind.startswith("shared") or element.get("sharedFileSystem", "").lower() == "true"
        return Directory(kind, self.required(element, "path"), shared, tuple(servers))

    def grid(self, element: etree._Element) -> Grid:
        return Grid(self.required(element, "type"), self.required(element, "contact"),
                    element.get("scheduler", "unknown"), element.get("jobtype"))


def _lower(value: str | None) -> str | None:
    return value.lower() if value is not None else None


def loads_site_xml(data: bytes | str, *, source: str = "<site catalog>",
                   warnings: list[str] | None = None) -> SiteCatalog:
    raw = data.encode() if isinstance(data, str) else data
    return _Reader(source, warnings).catalog(parse_xml(raw, source, "a site catalog"))


def read_site_xml(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> SiteCatalog:
    return loads_site_xml(read_bytes(path), source=str(path), warnings=warnings)
