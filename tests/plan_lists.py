"""Reading a written plan's data-job lists as its jobs read them: each data job names its bytes of the
plan's ``<workflow>.lists`` file with ``--slice OFFSET:LENGTH`` (in its DAG ``VARS``, or in its own
submit description's ``arguments`` under ``sheaf.submit.shared = false``)."""

from __future__ import annotations

import json
import re
from pathlib import Path


def data_list(directory: Path, job_id: str) -> str:
    """The text of the list data job ``job_id`` of the plan in ``directory`` reads."""
    own = re.compile(rf"^(?:VARS {re.escape(job_id)} |arguments = ).*?--slice (\d+):(\d+)", re.MULTILINE)
    texts = [path.read_text() for path in (*directory.glob("*.dag"), *directory.glob(f"jobs/*/{job_id}.sub"))]
    (offset, length), = {match.groups() for text in texts for match in own.finditer(text)}
    (lists,) = directory.glob("*.lists")
    return lists.read_bytes()[int(offset):int(offset) + int(length)].decode()


def data_lists(directory: Path, kind: str) -> list[str]:
    """The lists of every data job of type ``kind`` (``plan.json``), in plan order."""
    jobs = json.loads((directory / "plan.json").read_text())["jobs"]
    return [data_list(directory, job["id"]) for job in jobs if job["type"] == kind]
