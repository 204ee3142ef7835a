"""sheaf.backends: where node attempts run.  Each backend implements ``sheaf.engine.Backend``.

- ``LocalBackend`` (``sheaf.backends.local``): this machine's slots, as configured for the local pool
  (``sheaf.engine.Pool``), with machine-wide concurrency limits (``sheaf.engine.ConcurrencyLimits``).

Every backend passes the shared contract test, ``tests/backends/contract.py``.
"""

from __future__ import annotations

from sheaf.backends.local import LocalBackend

__all__: list[str] = ["LocalBackend"]
