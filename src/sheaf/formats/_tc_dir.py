"""``pegasus-plan --transformations-dir DIR``: every file in DIR is a stageable transformation on site
``local``, named by the file's name, as Pegasus's transformation factory adds them.  The transformation
catalog's own entries win: the directory only adds the transformations the catalog does not name."""

from __future__ import annotations

import os

from sheaf.errors import UsageError
from sheaf.model import Transformation, TransformationCatalog, TransformationSite

__all__ = ["transformations_dir"]


def transformations_dir(directory: str, catalog: TransformationCatalog | None) -> TransformationCatalog:
    """``catalog`` (may be None) with a stageable entry on site ``local`` for each file of ``directory``
    that it does not name; a directory that cannot be read is a usage error naming it."""
    try:
        names = sorted(entry.name for entry in os.scandir(directory) if entry.is_file())
    except OSError as exc:
        raise UsageError(f"--transformations-dir {directory}: {exc.strerror or exc}") from None
    found = TransformationCatalog()
    root = os.path.abspath(directory)
    for name in names:
        site = TransformationSite("local", f"file://{os.path.join(root, name)}", type="stageable")
        found.add(Transformation(name, sites=(site,)))
    return catalog.merged_with(found) if catalog is not None else found
