"""The JSON lists a plan writes for its data jobs (cleanup, registration), read with one error rule:
an unreadable file is a usage error, one that is not JSON a ``FormatError`` naming the file."""

from __future__ import annotations

import json

from sheaf.errors import FormatError, UsageError


def read_json_list(path: str, rule: str) -> list[object]:
    """The JSON list in ``path``; ``rule`` says what it should hold (for the error)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise UsageError(f"cannot read the list {path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"not JSON: {exc}", rule=rule, path=path) from None
    if not isinstance(data, list):
        raise FormatError("not a JSON list", rule=rule, path=path)
    return data
