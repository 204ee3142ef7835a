"""sheaf.engine."""

from __future__ import annotations

__all__: list[str] = []
