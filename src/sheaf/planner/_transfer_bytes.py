"""What each data job moves, in bytes: the sum of the sizes of the files on its transfer list.

A file's size is what the workflow states for it: a use's ``size`` (Pegasus YAML and DAX ``size``,
WfCommons ``sizeInBytes``), else the ``size`` in the use's metadata (what Pegasus's Python API
writes); the first use that states one wins.  A file of no stated size counts 0 bytes and is counted
as unknown.  The data pass records ``(bytes, files of unknown size)`` per stage-in, stage-out and
inter-site job in ``ExecutableWorkflow.transfer_bytes``; plan.json carries them (``bytes``,
``unknown_sizes``) to ``sheaf predict``, which charges ``bytes / bandwidth``.
"""

from __future__ import annotations

__all__ = ["TransferBytes"]

from collections.abc import Iterable, Mapping

from sheaf.model import EMPTY, Workflow


class TransferBytes:
    """Records the bytes of data jobs; the workflow's sizes are read once, at the first record."""

    __slots__ = ("_sizes",)

    def __init__(self) -> None:
        self._sizes: dict[str, int] | None = None

    def of(self, workflow: Workflow, names: Iterable[str]) -> tuple[int, int]:
        """(the bytes of ``workflow``'s files ``names``, how many of them have no known size)."""
        if self._sizes is None:
            self._sizes = file_sizes(workflow)
        get = self._sizes.get
        total = unknown = 0
        for name in names:
            size = get(name)
            if size is None:
                unknown += 1
            else:
                total += size
        return total, unknown


def file_sizes(workflow: Workflow) -> dict[str, int]:
    """lfn -> size in bytes of every file a use of ``workflow`` states a size for (module docstring)."""
    # most uses state nothing (and share the ``EMPTY`` metadata): one quick pass picks the others
    stated = [use for job in workflow.jobs.values() for use in job.uses
              if use.size is not None or use.metadata is not EMPTY]
    sizes: dict[str, int] = {}
    for use in stated:
        if use.lfn not in sizes:
            size = use.size if use.size is not None else _metadata_size(use.metadata)
            if size is not None and size >= 0:
                sizes[use.lfn] = size
    return sizes


def _metadata_size(metadata: Mapping[str, str]) -> int | None:
    text = str(metadata.get("size", "")).strip()
    return int(text) if text.isascii() and text.isdigit() else None
