"""``${VAR}`` in workflows and catalogs, expanded as the Pegasus planner expands it.

What Pegasus 5 does (its manual's "Variable Expansion" chapter, and the planner's readers):

- Which files: the workflow (YAML and DAX XML), the site catalog (YAML and XML), the transformation
  catalog (YAML and text) and the replica catalog (YAML and the text ``File`` format).  Not
  WfCommons JSON, which Pegasus does not read.  The text of the file is expanded *before* it is
  parsed, every line of it (comments included), so a variable may stand for any part of any value.
- Syntax: ``${NAME}`` only; ``$NAME`` is left as written.  A backslash right before ``${``
  escapes it: ``\\${NAME}`` gives ``${NAME}``.  A ``${`` without a closing ``}`` is left as written.
- Values: the planner's environment, with the ``env`` profiles of the properties
  (``env.PROJECT = ...``) on top -- for the replica catalog the environment only, as in Pegasus.
  Under the environment lie the variables the planner defines itself when the environment lacks
  them (pegasus-plan evaluates ``pegasus-config --sh-dump`` first: ``PEGASUS_BIN_DIR`` and the
  others); the caller passes them (``defaults``), so this layer knows nothing of where sheaf is
  installed.
  Names are looked up exactly, then ignoring case (Pegasus's lookup ignores case; an exact match
  wins here when two variables differ only in case).  A value is inserted as it is (not expanded
  again).
- An unset variable is an error (Pegasus: "Unable to expand variable"): a ``FormatError`` with the
  file, line, column and the variable.
- Switches: ``pegasus.catalog.replica.expand = false`` and ``pegasus.catalog.transformation.expand =
  false`` turn expansion off for that catalog (Pegasus honours the second for its text format only;
  sheaf for both formats).

Cost: a file without ``${`` is returned untouched after one ``str.find``; otherwise one pass: a
``${`` whose line has no ``}`` after it skips to the next line, so the work is linear in the text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from sheaf.errors import FormatError
from sheaf.formats._locate import position

__all__ = ["Variables", "expand_text"]


class Variables:
    """The values ``${NAME}`` may take: exact names first, then names ignoring case."""

    __slots__ = ("_exact", "_folded")

    def __init__(self, values: Mapping[str, str]) -> None:
        self._exact = dict(values)
        self._folded: dict[str, str] = {}
        for name, value in self._exact.items():
            self._folded.setdefault(name.lower(), value)

    @classmethod
    def of(cls, env_profiles: Mapping[str, str] | None = None,
           defaults: Mapping[str, str] | None = None) -> Variables:
        """The planner's environment over ``defaults``, with ``env_profiles`` (from the properties)
        on top."""
        return cls({**(defaults or {}), **os.environ, **(env_profiles or {})})

    def get(self, name: str) -> str | None:
        found = self._exact.get(name)
        return found if found is not None else self._folded.get(name.lower())


def expand_text(text: str, variables: Variables | None, path: str | None) -> str:
    """``text`` with every ``${NAME}`` replaced (module docstring); ``variables is None``: unchanged."""
    if variables is None or "${" not in text:
        return text

    pieces: list[str] = []
    done = 0
    for start, end, escaped in _references(text):
        pieces.append(text[done:start])
        name = text[start + 2 + escaped:end - 1]
        found = text[start + 1:end] if escaped else variables.get(name)
        if found is None:
            line, column = position(text, start)
            raise FormatError(f"cannot expand {text[start:end]}: no such environment variable",
                              rule="${NAME} in workflows and catalogs names a set environment variable "
                                   "(or an env profile of the properties)",
                              path=path, line=line, column=column, value=name)
        pieces.append(found)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _references(text: str) -> Iterator[tuple[int, int, bool]]:
    """``(start, end, escaped)`` of each ``${NAME}`` (with its escaping backslash, if any), left to
    right: a ``}`` is looked for only up to the end of the line of the ``${``."""
    pos = line_end = 0
    while (at := text.find("${", pos)) >= 0:
        if at >= line_end:  # found once a line, not once a reference
            line_end = text.find("\n", at)
            line_end = len(text) if line_end < 0 else line_end
        close = text.find("}", at + 2, line_end)
        if close < 0:  # no reference closes on this line: neither does any later ${ of it
            pos = line_end + 1
            continue
        escaped = at > pos and text[at - 1] == "\\"
        yield at - escaped, close + 1, escaped
        pos = close + 1
