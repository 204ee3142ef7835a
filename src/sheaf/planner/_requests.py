"""Plan-time check of the profiles that become resource requests and priorities in submit files.

``sheaf plan`` refuses exactly what ``sheaf run`` would refuse when it reads the submit description
(one rule, ``classad.request_expr``): condor ``request_cpus``/``request_gpus``/``request_memory``/
``request_disk``/``priority``, and the pegasus profiles codegen turns into requests where the condor
one is absent (``cores``, ``gpus``, ``memory`` in MB, ``diskspace`` in MB).  A bad value is a
``PlanningError`` naming the job, the profile and the value: nothing is written.

Profiles dicts are shared between jobs with the same effective profiles, so the check runs once per
distinct dict (the caller checks a merge when it makes it), and ``request_expr`` caches by text.
"""

from __future__ import annotations

__all__ = ["check_requests"]

import re
from collections.abc import Iterator, Mapping

from sheaf import classad
from sheaf.errors import PlanningError

_CONDOR = frozenset(classad.REQUEST_KEYS)
_PEGASUS = {"cores": "request_cpus", "gpus": "request_gpus", "memory": "request_memory",
            "diskspace": "request_disk"}
_BARE_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*\Z")


def _requests(profiles: Mapping[str, Mapping[str, str]]) -> Iterator[tuple[str, str, str, str]]:
    """(namespace, key, submit command, text as the submit file will say it) of each request."""
    for key, value in (profiles.get("condor") or {}).items():
        if key.lower() in _CONDOR:
            yield "condor", key, key.lower(), str(value)
    for key, value in (profiles.get("pegasus") or {}).items():
        command = _PEGASUS.get(key.lower())
        if command is not None:
            text = str(value)
            if command == "request_disk" and _BARE_NUMBER.match(text):
                text += " MB"  # Pegasus gives disk space in MB, a bare request_disk is KiB
            yield "pegasus", key, command, text


def check_requests(profiles: Mapping[str, Mapping[str, str]], job_id: str) -> None:
    """Raise ``PlanningError`` if a request or priority profile of ``job_id`` cannot be submitted."""
    if not profiles.get("condor") and not profiles.get("pegasus"):
        return
    for namespace, key, command, text in _requests(profiles):
        try:
            classad.request_expr(command, text)
        except classad.RequestError as exc:
            raise PlanningError(f"job '{job_id}': {namespace} profile '{key}': {exc.message}", rule=exc.rule,
                                value=str(profiles[namespace][key])) from None
