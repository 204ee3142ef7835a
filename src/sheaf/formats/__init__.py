"""sheaf.formats: every input format users bring, read into ``sheaf.model``; Pegasus 5.0 YAML written back.

Readers dispatch on *content*, not on the file name:

- workflows: Pegasus 5.0 YAML; DAX 3 XML (the text starts with ``<``); WfCommons JSON (a JSON
  object with ``schemaVersion``/``workflow``);
- transformation catalogs: Pegasus 5.0 YAML, or the text formats (``tr ns::name:version { ... }`` and
  the 4.x one-line form);
- site catalogs: Pegasus 5.0 YAML, or XML (read only);
- replica catalogs: Pegasus 5.0 YAML, or the text ``File`` format (``lfn pfn site="x"``, read only);
- properties: Java properties syntax.

Every reader raises an ``InputError`` subclass naming the file, the line (and column) and the rule
broken; it never lets another exception out.  Warnings (unknown keys, swapped names, misindented
headers, profile keys that are not known) are strings ``file:line: message`` appended to the
``warnings`` list the caller passes.  Writers replace their target atomically (write, then rename).

``load_inputs`` gathers what ``sheaf validate``/``sheaf plan`` need: the workflow, the layered
properties and the three catalogs, found as the command-line contract (``docs/command-line.md``) says
(``_discover.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.formats._catalog_files import directory_settings
    from sheaf.formats._discover import Inputs, load_inputs, validate_inputs
    from sheaf.formats._expand import Variables
    from sheaf.formats._multiprog import write_multiprog
    from sheaf.formats._pmcdag import PmcDag, PmcTask, parse_pmc_dag, parse_rescue, write_pmc_dag
    from sheaf.formats._properties import format_properties, read_properties, write_properties
    from sheaf.formats._seqexec_in import SeqexecTask, parse_seqexec_input, write_seqexec_input
    from sheaf.formats._site_config import FAILURE_MODES, SiteConfig, SiteSpec, read_site_config
    from sheaf.formats._tc_dir import transformations_dir
    from sheaf.formats._workflow_io import (
        looks_like_workflow,
        read_replica_catalog,
        read_site_catalog,
        read_transformation_catalog,
        read_workflow,
        write_replica_catalog,
        write_site_catalog,
        write_transformation_catalog,
        write_workflow,
    )
    from sheaf.formats._yaml_catalogs import rc_to_data
    from sheaf.formats._yaml_emit import dumps

__all__ = [
    "FAILURE_MODES",
    "Inputs",
    "PmcDag",
    "PmcTask",
    "SeqexecTask",
    "SiteConfig",
    "SiteSpec",
    "Variables",
    "directory_settings",
    "dumps",
    "format_properties",
    "load_inputs",
    "looks_like_workflow",
    "parse_pmc_dag",
    "parse_rescue",
    "parse_seqexec_input",
    "rc_to_data",
    "read_properties",
    "read_replica_catalog",
    "read_site_catalog",
    "read_site_config",
    "read_transformation_catalog",
    "read_workflow",
    "transformations_dir",
    "validate_inputs",
    "write_multiprog",
    "write_pmc_dag",
    "write_properties",
    "write_replica_catalog",
    "write_seqexec_input",
    "write_site_catalog",
    "write_transformation_catalog",
    "write_workflow",
]

# where each name lives: imported on first use (sheaf._lazy), so that reading a DAG file
# (``_dagman``) does not load the YAML readers
_WHERE = {
    "transformations_dir": "_tc_dir", "directory_settings": "_catalog_files",
    "FAILURE_MODES": "_site_config", "PmcDag": "_pmcdag", "PmcTask": "_pmcdag", "SeqexecTask": "_seqexec_in",
    "SiteConfig": "_site_config", "SiteSpec": "_site_config", "dumps": "_yaml_emit",
    "parse_pmc_dag": "_pmcdag", "parse_rescue": "_pmcdag", "parse_seqexec_input": "_seqexec_in",
    "rc_to_data": "_yaml_catalogs", "read_site_config": "_site_config", "write_multiprog": "_multiprog",
    "write_pmc_dag": "_pmcdag", "write_seqexec_input": "_seqexec_in", "Inputs": "_discover",
    "Variables": "_expand", "format_properties": "_properties", "load_inputs": "_discover",
    "read_properties": "_properties", "read_replica_catalog": "_workflow_io",
    "read_site_catalog": "_workflow_io", "read_transformation_catalog": "_workflow_io",
    "read_workflow": "_workflow_io", "looks_like_workflow": "_workflow_io", "validate_inputs": "_discover",
    "write_properties": "_properties",
    "write_replica_catalog": "_workflow_io", "write_site_catalog": "_workflow_io",
    "write_transformation_catalog": "_workflow_io", "write_workflow": "_workflow_io",
}
__getattr__ = lazy_exports(__name__, _WHERE)
