"""sheaf's command line: thin commands over library calls, one exit-code table.

Each command lives in its own module (``_validate.py``, ``_plan.py``, ``_run.py``, ``_classad.py``,
...) and registers itself on the ``main`` group; this module only assembles them and maps outcomes
to exit codes (``_exit.py``): 0 ok, 1 the workflow ran and failed, 2 bad input or usage.  The
``sheaf`` program is ``program`` (``main`` without the interpreter's teardown at exit).
"""

from __future__ import annotations

__all__ = ["main", "program"]

from sheaf.cli._app import main, program
