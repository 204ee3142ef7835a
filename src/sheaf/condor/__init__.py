"""sheaf.condor: HTCondor's languages -- DAGMan's DAG files and condor_submit's submit descriptions.

Both the planning side (``sheaf.codegen`` writes them) and the running side (``sheaf.engine`` reads and
runs them) speak these languages, so they live here, below both, with one reader and one writer each:

- DAG files (``_dagman``: ``parse_dag`` into a :class:`Dag` of :class:`NodeSpec` records, two passes as
  DAGMan reads them -- declarations first, then the commands that name nodes; ``_dagman_commands``,
  ``_dagman_settings``, ``_dagman_nodes``; the records in ``_dagman_records``), with their splices,
  includes, CONFIG files and rescue DAGs;
- submit descriptions (``_submit_lang``: parsing, macro expansion ``_submit_macros``, ``queue``
  statements ``_submit_queue``, templates shared by many nodes ``_submit_template``, and the quoting
  writers ``_submit_write``);
- HTCondor's configuration language (``_config``: a condor_config file, which a DAG's CONFIG file
  and the local pool's configuration are written in).

Errors are ``FormatError`` naming the file, the line and the rule.  HTCondor's manual is the reference;
where it is silent, what ``condor_dagman`` and ``condor_submit`` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.condor._config import CondorConfig, condor_boolean
    from sheaf.condor._config import parse_config as parse_condor_config
    from sheaf.condor._dagman import Dag, check_categories, parse_dag, parse_rescue
    from sheaf.condor._dagman_records import InlineDescription, NodeSpec, Rescue, Script
    from sheaf.condor._dagman_settings import save_point_path
    from sheaf.condor._submit_lang import (
        Unwritable,
        check_line,
        classad_string,
        effective_values,
        parse_submit,
        parse_submit_lines,
        quote_arguments,
        quote_environment,
        v1_environment_entries,
    )
    from sheaf.condor._submit_macros import Macros
    from sheaf.condor._submit_queue import parse_queue, queue_items
    from sheaf.condor._submit_records import Queue, SubmitDescription, submit_error
    from sheaf.condor._submit_template import MacroSource, memoised_macros, template_of

__all__: list[str] = [
    "CondorConfig", "Dag", "InlineDescription", "MacroSource", "Macros", "NodeSpec", "Queue", "Rescue",
    "Script", "SubmitDescription", "Unwritable", "check_categories", "check_line", "classad_string",
    "condor_boolean", "effective_values", "memoised_macros", "parse_condor_config", "parse_dag",
    "parse_queue", "parse_rescue", "parse_submit", "parse_submit_lines", "queue_items", "quote_arguments",
    "quote_environment", "save_point_path", "submit_error", "template_of", "v1_environment_entries",
]

# where each name lives: imported on first use (sheaf._lazy)
_WHERE: dict[str, str] = {
    "CondorConfig": "_config", "condor_boolean": "_config", "parse_condor_config": "_config:parse_config",
    "Script": "_dagman_records", "Rescue": "_dagman_records", "Dag": "_dagman",
    "InlineDescription": "_dagman_records",
    "MacroSource": "_submit_template", "Macros": "_submit_macros", "NodeSpec": "_dagman_records",
    "SubmitDescription": "_submit_records", "Unwritable": "_submit_lang", "check_line": "_submit_lang",
    "classad_string": "_submit_lang", "effective_values": "_submit_lang",
    "memoised_macros": "_submit_template", "parse_dag": "_dagman", "parse_rescue": "_dagman",
    "check_categories": "_dagman",
    "parse_submit": "_submit_lang", "parse_submit_lines": "_submit_lang", "queue_items": "_submit_queue",
    "parse_queue": "_submit_queue", "Queue": "_submit_records",
    "quote_arguments": "_submit_lang", "quote_environment": "_submit_lang", "submit_error": "_submit_records",
    "template_of": "_submit_template", "v1_environment_entries": "_submit_lang",
    "save_point_path": "_dagman_settings",
}
__getattr__ = lazy_exports(__name__, _WHERE)
