"""sheaf.model: the abstract workflow, its catalogs, profiles and properties, and the job graph.

The first stage of the data's path; it imports nothing of sheaf but ``sheaf.errors``.  Readers
(``sheaf.formats``) build these records, the planner derives the executable workflow from them.

- ``Workflow``/``Job``/``Use``/``FileRef``: the abstract workflow (``_workflow.py``).
- ``TransformationCatalog``/``SiteCatalog``/``ReplicaCatalog`` and their records (``_catalogs.py``).
- Profiles: canonical keys, the alias table, precedence (``_profiles.py``); ``effective_profiles``.
- ``Properties``: layered configuration keys (``_properties.py``).
- ``build_graph``/``Graph``: dependencies (explicit and file-implied) as a CSR graph (``_graph.py``).
- ``validate``/``Summary``: the rules ``sheaf validate`` checks (``_validate.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.model._arguments import job_argv, join_arguments, needs_splitting, quote_words, split_arguments
    from sheaf.model._catalogs import (
        PFN,
        Container,
        Directory,
        FileServer,
        Grid,
        Replica,
        ReplicaCatalog,
        Site,
        SiteCatalog,
        Transformation,
        TransformationCatalog,
        TransformationSite,
    )
    from sheaf.model._empty import EMPTY
    from sheaf.model._graph import Graph, build_graph
    from sheaf.model._profiles import (
        NAMESPACES,
        PEGASUS_ALIASES,
        PEGASUS_KEYS,
        Profiles,
        canonical_key,
        check_profile_values,
        is_auto,
        merge_profiles,
        normalize_profiles,
        profile_float,
        profile_int,
        stringify,
    )
    from sheaf.model._properties import Properties
    from sheaf.model._runlock import STATE_DIR, RunLocks, lock_path
    from sheaf.model._toposort import cycle_in, kahn_levels
    from sheaf.model._urls import file_url_path, url_scheme
    from sheaf.model._validate import (
        MAX_NAME_BYTES,
        Summary,
        check_names,
        check_profiles,
        effective_profiles,
        nul_problem,
        validate,
    )
    from sheaf.model._workflow import (
        JOB_TYPES,
        USE_TYPES,
        FileRef,
        Job,
        JobType,
        Use,
        UseType,
        Workflow,
        all_uses,
        split_fqn,
        transformation_fqn,
    )

__all__ = [
    "EMPTY", "JOB_TYPES", "MAX_NAME_BYTES", "NAMESPACES", "PEGASUS_ALIASES", "PEGASUS_KEYS", "PFN",
    "STATE_DIR", "USE_TYPES",
    "Container", "Directory", "FileRef", "FileServer", "Graph", "Grid", "Job", "JobType", "Profiles",
    "Properties", "Replica", "ReplicaCatalog", "RunLocks", "Site", "SiteCatalog", "Summary", "Transformation",
    "TransformationCatalog", "TransformationSite", "Use", "UseType", "Workflow", "all_uses", "build_graph",
    "canonical_key", "check_names", "check_profile_values", "check_profiles", "cycle_in",
    "effective_profiles", "file_url_path",
    "is_auto", "job_argv", "join_arguments", "kahn_levels", "lock_path", "merge_profiles", "needs_splitting",
    "normalize_profiles",
    "nul_problem", "profile_float", "profile_int", "quote_words", "split_arguments", "split_fqn", "stringify",
    "transformation_fqn", "url_scheme", "validate",
]

# where each name lives: imported on first use (sheaf._lazy)
_WHERE = {
    "JobType": "_workflow", "RunLocks": "_runlock", "STATE_DIR": "_runlock", "UseType": "_workflow",
    "all_uses": "_workflow", "check_names": "_validate", "check_profiles": "_validate",
    "file_url_path": "_urls", "lock_path": "_runlock",
    "needs_splitting": "_arguments", "nul_problem": "_validate", "url_scheme": "_urls",
    "MAX_NAME_BYTES": "_validate",
    "Container": "_catalogs", "Directory": "_catalogs", "EMPTY": "_empty", "FileRef": "_workflow",
    "FileServer": "_catalogs", "Graph": "_graph", "Grid": "_catalogs", "JOB_TYPES": "_workflow",
    "Job": "_workflow", "NAMESPACES": "_profiles", "PEGASUS_ALIASES": "_profiles",
    "PEGASUS_KEYS": "_profiles", "PFN": "_catalogs", "Profiles": "_profiles", "Properties": "_properties",
    "Replica": "_catalogs", "ReplicaCatalog": "_catalogs", "Site": "_catalogs", "SiteCatalog": "_catalogs",
    "Summary": "_validate", "Transformation": "_catalogs", "TransformationCatalog": "_catalogs",
    "TransformationSite": "_catalogs", "USE_TYPES": "_workflow", "Use": "_workflow", "Workflow": "_workflow",
    "build_graph": "_graph", "cycle_in": "_toposort", "kahn_levels": "_toposort",
    "canonical_key": "_profiles", "check_profile_values": "_profiles", "is_auto": "_profiles",
    "effective_profiles": "_validate",
    "join_arguments": "_arguments", "merge_profiles": "_profiles", "normalize_profiles": "_profiles",
    "profile_float": "_profiles", "profile_int": "_profiles", "split_arguments": "_arguments",
    "quote_words": "_arguments", "job_argv": "_arguments",
    "split_fqn": "_workflow", "stringify": "_profiles", "transformation_fqn": "_workflow",
    "validate": "_validate",
}
__getattr__ = lazy_exports(__name__, _WHERE)
