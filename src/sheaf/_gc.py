"""The cyclic garbage collector paused while sheaf builds large acyclic data: one pause for every reader
(a workflow, a DAG file, a plan) and for the planner, the writer and the simulator.

Reading or planning allocates millions of containers and no cycles; with the collector on, each
generation-2 pass rescans everything built so far (figures in docs/performance.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block; left as it was found.  Nested pauses are one pause."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not gc.get_freeze_count():
                # what was built moves to the oldest generation unscanned: else the first allocation
                # after enabling collects the millions of young objects, as the pause meant not to
                gc.freeze()
                gc.unfreeze()
            gc.enable()
