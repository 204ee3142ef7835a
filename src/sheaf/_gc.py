"""The cyclic garbage collector paused while sheaf builds large acyclic data: one pause for every reader
(a workflow, a DAG file, a plan) and for the planner, the writer and the simulator.

Reading or planning allocates millions of containers and no cycles; with the collector on, each
generation-2 pass rescans everything built so far (figures in docs/performance.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["freeze", "gc_paused", "unfreeze"]

#: whether objects sheaf froze (``freeze``) may still be frozen: then a pause need not count the
#: frozen objects (``gc.get_freeze_count`` walks them all) to know it must not thaw them.  A caller
#: that thaws them with ``gc.unfreeze()`` instead of ``unfreeze`` leaves it set: later pauses then
#: freeze what they build, as they would with the objects still frozen
_froze = False


def freeze() -> None:
    """``gc.freeze()``, remembered: a later pause joins what it builds to the frozen objects."""
    global _froze  # noqa: PLW0603 -- one flag for the process, as the collector is one
    gc.freeze()
    _froze = True


def unfreeze() -> None:
    """``gc.unfreeze()``: every frozen object collectable again."""
    global _froze  # noqa: PLW0603
    gc.unfreeze()
    _froze = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block, then on again if it was.  Nested pauses are one pause.

    What the block built leaves the young generations unscanned: else the first allocation after
    the pause collects the millions of objects it meant not to.  It joins the oldest generation -- or,
    where objects are frozen (a reader froze what it built: ``freeze``), the frozen objects, since
    unfreezing would thaw those too.  Frozen or not, objects are still freed by reference counting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            thaw = not _froze and not gc.get_freeze_count()
            gc.freeze()
            if thaw:
                gc.unfreeze()
            gc.enable()
