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

from sheaf.model._arguments import join_arguments, split_arguments
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
    merge_profiles,
    normalize_profiles,
    profile_float,
    profile_int,
    stringify,
)
from sheaf.model._properties import Properties
from sheaf.model._validate import Summary, effective_profiles, validate
from sheaf.model._workflow import JOB_TYPES, USE_TYPES, FileRef, Job, Use, Workflow, transformation_fqn

__all__ = [
    "EMPTY", "JOB_TYPES", "NAMESPACES", "PEGASUS_ALIASES", "PEGASUS_KEYS", "PFN", "USE_TYPES",
    "Container", "Directory", "FileRef", "FileServer", "Graph", "Grid", "Job", "Profiles", "Properties",
    "Replica", "ReplicaCatalog", "Site", "SiteCatalog", "Summary", "Transformation",
    "TransformationCatalog", "TransformationSite", "Use", "Workflow",
    "build_graph", "canonical_key", "check_profile_values", "effective_profiles", "join_arguments",
    "merge_profiles", "normalize_profiles", "profile_float", "profile_int", "split_arguments", "stringify",
    "transformation_fqn", "validate",
]
