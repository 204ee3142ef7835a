"""sheaf.backends.local: node attempts as processes on this machine, in the slots of a local pool.

``LocalBackend`` (``_backend``; its docstring has the design) spawns and reaps jobs through the
spawner of ``_spawner``: C threads (the ``_cspawn`` extension) where it was built, which also start a
slot's next job themselves (``_successors``), else the process-start primitive ``sheaf.backends._spawn``
that the Slurm job wrapper shares.  The pool, the queue, the limits, the job guard, memory, sandboxes
and policies are the backends' shared modules (``sheaf.backends._pool`` and its siblings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sheaf._lazy import lazy_exports

if TYPE_CHECKING:
    from sheaf.backends.local._backend import LocalBackend

__all__: list[str] = ["LocalBackend"]

__getattr__ = lazy_exports(__name__, {"LocalBackend": "_backend"})
