"""The one table that maps outcomes to exit codes (../shared/CONTRACTS.md)."""

from __future__ import annotations

OK = 0
WORKFLOW_FAILED = 1
STORAGE_FAILED = 1  # a file could not be written (disk full, I/O error): nothing half-written, rerun resumes
BAD_INPUT = 2
