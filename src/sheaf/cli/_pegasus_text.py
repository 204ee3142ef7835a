"""What pegasus-plan and pegasus-run print when they finish, for the scripts that read it.

Scripts written for Pegasus find the submit directory in the tools' output, as Pegasus's own test
drivers do: ``grep pegasus-run plan.out`` after a plan (pegasus-plan ends with the line
``pegasus-run DIR``), ``grep pegasus-remove`` after ``--submit`` or ``pegasus-run`` (whose text names
``pegasus-status -l DIR`` and ``pegasus-remove DIR``).  When sheaf plays those tools (the wrappers of
``sheaf shims``) it ends with the same lines, which the wrappers of the same directory then run.
"""

from __future__ import annotations

__all__ = ["planned", "started"]

_PLANNED = (
    "I have concretized your abstract workflow. The workflow has been entered \n"
    "into the workflow database with a state of \"planned\". The next step is \n"
    "to start or execute your workflow. The invocation required is")


def planned(directory: str) -> str:
    """pegasus-plan's closing message, its last line the command that starts the run."""
    return f"\n\n\n{_PLANNED}\n\n\npegasus-run  {directory}\n"


def started(directory: str) -> str:
    """pegasus-run's message once the run has started: how to watch it and how to remove it."""
    return (f"\nYour workflow has been started and is running in the base directory:\n\n{directory}\n\n"
            f"*** To monitor the workflow you can run ***\n\npegasus-status -l {directory}\n\n"
            f"*** To remove your workflow run ***\n\npegasus-remove {directory}")
