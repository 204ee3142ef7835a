"""Pegasus's text replica catalog (the ``File`` RC format), read only.

One replica a line::

    # comment
    f.a   file:///data/f.a   site="local"
    "f b" "file:///data/f b" site="local" checksum.type="sha256" checksum.value="..."
    f\\.[0-9]+   file:///data/[0]   site="local" regex="true"

The lfn and the pfn are words or double-quoted strings (``\\"`` and ``\\\\`` escape inside quotes);
attributes are ``key="value"`` (or ``key=value``).  ``site`` (alias ``pool``) names the pfn's site,
``regex="true"`` makes the lfn a regular expression, ``checksum.*`` go to the replica's checksum and
every other attribute to its metadata.  Lines with the same lfn add pfns to one replica, as in
Pegasus.  A malformed line is a ``FormatError`` with its line and column, and so is a regex entry
that does not compile or whose pfn names a group it lacks (found here, not when planning).
"""

from __future__ import annotations

import re

from sheaf.errors import FormatError
from sheaf.formats._common import refuse_nul
from sheaf.formats._yaml_catalogs import REGEX_RULE
from sheaf.model import EMPTY, PFN, Replica, ReplicaCatalog

_WORD = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"=]+)(?:=(?:"((?:[^"\\]|\\.)*)"|([^\s"]*)))?)')


def parse_file_rc(text: str, path: str | None = None) -> ReplicaCatalog:
    refuse_nul(text, path)
    entries: dict[tuple[str, bool], list[PFN]] = {}
    lines: dict[tuple[str, bool], int] = {}
    extras: dict[tuple[str, bool], tuple[dict[str, str], dict[str, str]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        words, attrs = _tokens(line, path, number)
        if len(words) != 2:
            raise FormatError("a replica line is: lfn pfn [key=\"value\"]...",
                              rule="text replica catalog lines have an lfn and a pfn",
                              value=stripped, path=path, line=number, column=1)
        lfn, pfn = words
        regex = attrs.pop("regex", "false").lower() == "true"
        site = attrs.pop("site", None) or attrs.pop("pool", None)
        key = (lfn, regex)
        lines.setdefault(key, number)
        entries.setdefault(key, []).append(PFN(pfn, site))
        checksum, metadata = extras.setdefault(key, ({}, {}))
        for name, value in attrs.items():
            if name.startswith("checksum."):
                checksum[name.removeprefix("checksum.")] = value
            else:
                metadata[name] = value
    catalog = ReplicaCatalog()
    for (lfn, regex), pfns in entries.items():
        checksum, metadata = extras[(lfn, regex)]
        replica = Replica(lfn, tuple(pfns), regex=regex, checksum=checksum or EMPTY,
                          metadata=metadata or EMPTY)
        problem = replica.regex_problem()
        if problem:
            raise FormatError(f"regex replica: {problem}", rule=REGEX_RULE, value=lfn, path=path,
                              line=lines[(lfn, regex)], column=1)
        catalog.add(replica)
    return catalog


def _tokens(line: str, path: str | None, number: int) -> tuple[list[str], dict[str, str]]:
    words: list[str] = []
    attrs: dict[str, str] = {}
    pos = 0
    end = len(line.rstrip())
    while pos < end:
        if len(words) < 2 and not attrs:  # lfn and pfn: any word, '=' included (URLs with queries)
            word_match = _WORD.match(line, pos)
            if word_match is not None and word_match.end() > pos:
                quoted, plain = word_match.groups()
                words.append(_unquote(quoted) if quoted is not None else plain)
                pos = word_match.end()
                continue
        match = _TOKEN.match(line, pos)
        if match is None or match.end() == pos:
            raise FormatError("unexpected text in a replica line",
                              rule='words, "quoted words" or key="value"',
                              value=line[pos:].strip(), path=path, line=number, column=pos + 1)
        quoted, word, attr_quoted, attr_plain = match.groups()
        if quoted is not None:
            words.append(_unquote(quoted))
        elif attr_quoted is not None or attr_plain is not None:
            attrs[word.lower()] = _unquote(attr_quoted) if attr_quoted is not None else attr_plain
        else:
            words.append(word)
        pos = match.end()
    return words, attrs


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def looks_like_file_rc(text: str) -> bool:
    """True when ``text`` reads as the text format rather than YAML (first significant line); a text of
    blanks and comments only is an empty catalog of the text format (what a plan writes as the cache of
    a sub-workflow with no outputs)."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return not (stripped.startswith(("-", "{", "[", "---"))
                    or re.match(r"^[\w.\-\"']+\s*:(\s|$)", stripped))
    return True
