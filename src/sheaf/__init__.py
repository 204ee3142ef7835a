"""sheaf: plan and run scientific workflows.

The layout is the data's path; a package imports only packages to its left::

    model -> formats -> classad -> planner -> codegen -> engine + jobtools -> backends -> monitor
          -> app -> cli

``classad`` is a leaf: it imports nothing of sheaf.  ``errors`` is shared by all.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
