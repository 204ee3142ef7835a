"""Bridge: the JSON transfer lists the data pass writes, read by the pairs-only ``sheaf-transfer``.

Until the full transfer tool (``load_transfer_list``: every scheme, replica fall-through, checksums)
replaces it, a JSON list is read as the pairs it implies: each entry's first source URL and its one
destination (a ``file://`` URL made a path), ``x`` for ``executable: true``.  Later sources and
checksums are ignored here; the full tool honours them.
"""

from __future__ import annotations

import json
from urllib.parse import unquote, urlsplit

from sheaf.errors import FormatError


def pairs_of(text: str, path: str) -> list[tuple[str, ...]]:
    """The (source, destination[, "x"]) words of the JSON list ``text`` read from ``path``."""
    try:
        data = json.loads(text)
        out = []
        for entry in data:
            dest = urlsplit(entry["dest_urls"][0]["url"])
            if dest.scheme != "file":
                raise ValueError(f"a destination is not a file:// URL: {entry['dest_urls'][0]['url']}")
            words: tuple[str, ...] = (entry["src_urls"][0]["url"], unquote(dest.path))
            out.append((*words, "x") if entry.get("executable") else words)
        return out
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise FormatError(f"not a transfer list: {exc}", rule="a JSON list of transfers", path=path) from None
