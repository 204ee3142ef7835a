"""URLs where catalogs expect paths: what a ``file://`` PFN names, and which scheme a URL has.

Pegasus catalogs hold PFNs as URLs or plain paths (``file:///opt/bin/keg`` and ``/opt/bin/keg``
name the same file).  ``file://`` URLs name a file of this host: the host part is empty or
``localhost`` (``file://localhost/opt/bin/keg``); the path is percent-decoded.  Any other host is not
a local file.  A *scheme* is what RFC 3986 allows before ``://``; a PFN without one is a path.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

__all__ = ["file_url_path", "url_scheme"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")


def url_scheme(pfn: str) -> str | None:
    """The lower-cased scheme of ``pfn`` (``file``, ``http``, ``gsiftp``), or ``None`` for a path."""
    found = _SCHEME.match(pfn)
    return found.group(1).lower() if found else None


def file_url_path(pfn: str) -> str | None:
    """The local path a ``file://`` URL names; ``None`` for another host or another scheme."""
    if url_scheme(pfn) != "file":
        return None
    parts = urlsplit(pfn)
    if parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path)
