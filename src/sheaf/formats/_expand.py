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
  Names are looked up exactly, then ignoring case (Pegasus's lookup ignores case; an exact match
  wins here when two variables differ only in case).  A value is inserted as it is (not expanded
  again).
- An unset variable is an error (Pegasus: "Unable to expand variable"): a ``FormatError`` with the
  file, line, column and the variable.
- Switches: ``pegasus.catalog.replica.expand = false`` and ``pegasus.catalog.transformation.expand =
  false`` turn expansion off for that catalog (Pegasus honours the second for its text format only;
  sheaf for both formats).

Cost: a file without ``${`` is returned untouched after one ``str.find``; otherwise one regex pass.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from sheaf.errors import FormatError
from sheaf.formats._locate import position

__all__ = ["Variables", "expand_text"]

_REFERENCE = re.compile(r"(\\?)\$\{([^}\n]*)\}")


class Variables:
    """The values ``${NAME}`` may take: exact names first, then names ignoring case."""

    __slots__ = ("_exact", "_folded")

    def __init__(self, values: Mapping[str, str]) -> None:
        self._exact = dict(values)
        self._folded: dict[str, str] = {}
        for name, value in self._exact.items():
            self._folded.setdefault(name.lower(), value)

    @classmethod
    def of(cls, env_profiles: Mapping[str, str] | None = None) -> Variables:
        """The planner's environment, with ``env_profiles`` (from the properties) on top."""
        return cls({**os.environ, **(env_profiles or {})})

    def get(self, name: str) -> str | None:
        found = self._exact.get(name)
        return found if found is not None else self._folded.get(name.lower())


def expand_text(text: str, variables: Variables | None, path: str | None) -> str:
    """``text`` with every ``${NAME}`` replaced (module docstring); ``variables is None``: unchanged."""
    if variables is None or "${" not in text:
        return text

    def value(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)[1:]  # \${NAME}: the reference, as written
        found = variables.get(match.group(2))
        if found is None:
            line, column = position(text, match.start())
            raise FormatError(f"cannot expand {match.group(0)}: no such environment variable",
                              rule="${NAME} in workflows and catalogs names a set environment variable "
                                   "(or an env profile of the properties)",
                              path=path, line=line, column=column, value=match.group(2))
        return found

    return _REFERENCE.sub(value, text)
