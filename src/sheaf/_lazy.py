"""Lazy re-exports for a package's ``__init__`` (PEP 562 module ``__getattr__``).

Importing any module of a package runs the package's ``__init__`` first.  An ``__init__`` that
imports its whole public surface makes every import of one private module (the engine's
``sheaf.condor._dagman``, say) pay for all the package's readers and writers: ``sheaf run`` and
each ``sheaf-cluster`` start-up paid for the YAML loaders, the catalogs and the planner.  So a
package's ``__init__`` names where each public name lives, and :func:`lazy_exports` imports that
module when the name is first asked for (then caches it in the package).  Under ``TYPE_CHECKING``
the ``__init__`` imports the names as usual, so type checkers and readers see them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package`` for the names ``where`` maps to their module (``"_x"``, or
    ``"_x:name"`` for a name exported under another one)."""

    def __getattr__(name: str) -> object:
        place = where.get(name)
        if place is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = place.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
