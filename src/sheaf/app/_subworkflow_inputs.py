"""What a plan reads when it plans a sub-workflow (the parent's PRE script runs ``sheaf plan``).

- ``--cache F``: a text replica catalog of where an upstream sibling sub-workflow's outputs were
  planned to be (its ``<basename>.cache``).  Its locations are preferred over the replica catalog's,
  as in Pegasus, so that the files of this run are used; with
  ``pegasus.catalog.replica.cache.asrc = true`` they are only added to it (the catalog's own
  locations come first).  A cache file that does not exist is skipped: the sibling planned nothing.
- ``--inherited-rc-files F``: the parent's inline replica catalog, below every other location.
- ``--output-map F``: lfn -> where the parent wants a copy of that output (a text replica file);
  the plan copies each one there once the job writing it is done.
- ``--reuse D``: the output replica catalog of each earlier submit directory D (where its register
  jobs wrote, named in its ``plan.json``): what that run registered is reusable data, below the cache
  files and above the replica catalog, as Pegasus reads earlier runs' output catalogs.  A directory
  whose plan registered nothing, or whose catalog does not exist yet, is warned about and skipped.
- ``--deferred`` into a directory where the sub-workflow already ran (a ``plan.json`` and the
  engine's ``.sheaf`` journal): the plan is kept and the run resumes from its journal and rescue
  DAG, as Pegasus submits a sub-workflow's rescue DAG rather than replanning it (``--force-replan``
  replans).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from sheaf.errors import UsageError
from sheaf.formats import read_replica_catalog
from sheaf.model import ReplicaCatalog, file_url_path
from sheaf.monitor import plan_json


def _read(paths: Sequence[str], warn: Callable[[str], None]) -> ReplicaCatalog | None:
    merged: ReplicaCatalog | None = None
    for path in paths:
        if not os.path.exists(path):  # an upstream sibling that planned nothing, or a user's typo
            warn(f"replica file {path} does not exist; skipped")
            continue
        catalog = read_replica_catalog(path)
        merged = catalog if merged is None else merged.merged_with(catalog)
    return merged


def reused_catalogs(directories: Sequence[str], warn: Callable[[str], None]) -> list[str]:
    """The output replica catalogs of the earlier submit directories ``directories`` that exist."""
    found = []
    for directory in directories:
        plan = plan_json(directory)
        if plan is None:
            raise UsageError(f"--reuse {directory}: its plan.json cannot be read")
        output = plan.options.get("replica_output") if isinstance(plan.options, dict) else None
        catalog = output.get("file") if isinstance(output, dict) else None
        if not isinstance(catalog, str):
            warn(f"--reuse {directory}: its plan registers no outputs; nothing reused from it")
        elif not os.path.isfile(catalog):
            warn(f"--reuse {directory}: its output replica catalog {catalog} does not exist (the run has "
                 "registered nothing yet); nothing reused from it")
        else:
            found.append(catalog)
    return found


def with_replica_files(rc: ReplicaCatalog | None, caches: Sequence[str], inherited: Sequence[str],
                       cache_as_rc: bool, warn: Callable[[str], None],
                       reused: Sequence[str] = ()) -> ReplicaCatalog | None:
    cache, parent, previous = _read(caches, warn), _read(inherited, warn), _read(reused, warn)
    if previous is not None:  # earlier runs' outputs: above the catalog, below the cache files
        rc = previous if rc is None else previous.merged_with(rc)
    if cache is not None:
        if rc is None:
            rc = cache
        elif cache_as_rc:
            rc = ReplicaCatalog(rc.replicas + cache.replicas)
        else:
            rc = cache.merged_with(rc)
    if parent is not None:
        rc = parent if rc is None else rc.merged_with(parent)
    return rc


def read_output_map(path: str | None) -> dict[str, tuple[str, ...]]:
    """lfn -> every absolute local path an output map gives it (its ``file://`` and path pfns)."""
    if path is None:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for replica in read_replica_catalog(path):
        for pfn in replica.pfns:
            local = file_url_path(pfn.pfn) if "://" in pfn.pfn else pfn.pfn
            if local and os.path.isabs(local) and local not in out.get(replica.lfn, ()):
                out[replica.lfn] = (*out.get(replica.lfn, ()), local)
    return out


def ran_before(target: str) -> bool:
    """True when ``target`` holds a plan that already ran (its ``plan.json`` and the engine's journal
    directory): a deferred replan keeps it, and the run resumes."""
    return os.path.isdir(os.path.join(target, ".sheaf")) and os.path.isfile(os.path.join(target, "plan.json"))
