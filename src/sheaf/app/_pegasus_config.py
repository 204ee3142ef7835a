"""The variables pegasus-plan defines before it reads catalogs, defined by a plan (and ``sheaf validate``)
for ``${NAME}`` in workflows and catalogs.

Pegasus's ``pegasus-plan`` evaluates ``pegasus-config --sh-dump`` first, so a catalog may name
``${PEGASUS_BIN_DIR}/pegasus-keg`` without the user setting anything.  sheaf plays that part: its
*tools directory* -- where its console scripts (``sheaf-cluster``, ``sheaf-transfer``, ...) are
installed -- is ``PEGASUS_BIN_DIR``, its parent ``PEGASUS_HOME``, and the other directories follow
pegasus-config's layout under it (``etc``, ``share/pegasus``, ``share/pegasus/java``,
``share/pegasus/schema``); ``PEGASUS_PYTHON_DIR`` and ``PEGASUS_PYTHON_EXTERNALS_DIR`` are where the
Pegasus Python API (``Pegasus.api``) is imported from, else the ``sheaf`` package.  sheaf installs
nothing under the ``share`` and ``etc`` names: they exist so that a catalog naming them plans, as it
would with Pegasus installed.
pegasus-config's ``CLASSPATH`` is not defined: there is no JVM.  These are defaults only -- a variable
already in the environment wins (``sheaf.formats._expand``).
"""

from __future__ import annotations

import importlib.util
import os
import sys

import sheaf

__all__ = ["config_variables", "tools_dir"]


def tools_dir() -> str:
    """The directory of sheaf's console scripts, found as the plan's submit files find them
    (``sheaf.codegen.tool_path``): beside the running interpreter, else on ``PATH``."""
    from sheaf.codegen import tool_path  # the writer's lookup (imported late: validate writes nothing)

    found = tool_path("sheaf-cluster")
    return os.path.dirname(os.path.abspath(found if os.sep in found else sys.executable))


def config_variables() -> dict[str, str]:
    """``pegasus-config --sh-dump``'s variables, and ``PEGASUS_HOME``, for sheaf's tools directory
    (module docstring)."""
    bin_dir = tools_dir()
    home = os.path.dirname(bin_dir)
    share = os.path.join(home, "share", "pegasus")
    python = _python_dir()
    return {
        "PEGASUS_HOME": home,
        "PEGASUS_BIN_DIR": bin_dir,
        "PEGASUS_CONF_DIR": os.path.join(home, "etc"),
        "PEGASUS_SHARE_DIR": share,
        "PEGASUS_JAVA_DIR": os.path.join(share, "java"),
        "PEGASUS_SCHEMA_DIR": os.path.join(share, "schema"),
        "PEGASUS_PYTHON_DIR": python,
        "PEGASUS_PYTHON_EXTERNALS_DIR": python,
    }


def _python_dir() -> str:
    """The directory holding the Pegasus Python API's package, else the one holding ``sheaf``."""
    spec = importlib.util.find_spec("Pegasus")
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    package = places[0] if places else os.path.dirname(os.path.abspath(sheaf.__file__))
    return os.path.dirname(package)
