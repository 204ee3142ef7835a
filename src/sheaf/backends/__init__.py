"""sheaf.backends: where node attempts run.  Each backend implements ``sheaf.engine.Backend``.

- ``LocalBackend`` (``sheaf.backends.local``): this machine's slots, as configured for the local pool
  (``Pool``: ``_pool``, laid out by ``_slotlayout`` from ``_slotconfig``), with machine-wide concurrency
  limits (``ConcurrencyLimits``: ``_limits``).

Every backend passes the shared contract test, ``tests/backends/contract.py``.
"""

from __future__ import annotations

from sheaf.backends._limits import ConcurrencyLimits
from sheaf.backends._pool import Pool
from sheaf.backends.local import LocalBackend

__all__: list[str] = ["ConcurrencyLimits", "LocalBackend", "Pool"]
