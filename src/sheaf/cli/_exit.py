"""The one table that maps outcomes to exit codes (../shared/CONTRACTS.md)."""

from __future__ import annotations

OK = 0
WORKFLOW_FAILED = 1
BAD_INPUT = 2
