"""Parsing the XML inputs (DAX, site catalog XML) the one safe way both readers share.

Entities: *internal* entities (``<!ENTITY dir "/data">`` in the DOCTYPE) are expanded as XML says
(``-i &dir;/f.a`` reads ``-i /data/f.a``); they used to vanish, silently changing arguments.
*External* entities (``SYSTEM``/``PUBLIC``, parameter entities too) are never loaded -- reading a
local file into a workflow is what an XXE attack wants -- and a document declaring one is refused
with its line, used or not.  Limits are libxml2's, kept on: no network, 256 levels of nesting
(``huge_tree`` off), and its entity-amplification bound, which stops a "billion laughs" document
after a few kilobytes of expansion.  Every failure is one ``FormatError`` with line and column.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from sheaf.errors import FormatError

_EXTERNAL = re.compile(rb"<!ENTITY\s+(?:%\s+)?([^\s>]+)\s+(?:SYSTEM|PUBLIC)\b")


def parse_xml(data: bytes, source: str, what: str) -> Any:
    """The root element of ``data`` (module docstring); ``what`` names the document in rules."""
    parser = etree.XMLParser(resolve_entities="internal", no_network=True, remove_comments=True,
                             huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        _refuse_external(data, source, what)  # an undefined entity may be an external one
        line, column = exc.position or (None, None)
        raise FormatError("malformed XML", rule=f"{what} is well-formed XML", value=exc.msg, path=source,
                          line=line, column=(column + 1) if column is not None else None) from None
    if root.getroottree().docinfo.internalDTD is not None:
        _refuse_external(data, source, what)
    return root


def _refuse_external(data: bytes, source: str, what: str) -> None:
    found = _EXTERNAL.search(data)
    if found is not None:
        raise FormatError("external entities are not read",
                          rule=f"{what} declares no SYSTEM or PUBLIC entity",
                          value=found.group(1).decode("utf-8", "replace"), path=source,
                          line=data.count(b"\n", 0, found.start()) + 1)
