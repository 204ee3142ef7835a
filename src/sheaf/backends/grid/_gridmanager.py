"""The gridmanager's per-resource throttles, as per-site submission limits.

HTCondor-G's gridmanager limits what it sends to each remote resource; sheaf reads the same knobs
(from the pool configuration ``sheaf run --pool-config`` reads) for its grid sites:

* ``GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE`` -- the node jobs of all groups submitted to one
  site at once.  The value is an integer, then optional ``host, limit`` pairs:
  ``200, foo.edu, 50, bar.com, 100``.  A per-type knob ``..._PER_RESOURCE_<TYPE>`` (``_LOCAL``,
  ``_SLURM``...; the site's backend kind, upper-cased) replaces the plain one when set.  Read as
  ``BaseResource::Reconfig`` reads it: tokens split on commas and blanks; the first is the default;
  then each token that is a *substring* of the resource's name takes the token after it as the
  limit (the last such wins), and a token that does not match is skipped alone -- so a limit
  token is also tried as a name, as there.  A limit that is not a positive integer (``atoi`` <= 0)
  means the default, 1000.  The resource name is the site's gatekeeper (``GatekeeperURL``), which
  for ``sheaf://<site>`` contains the site's name.
* ``GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE`` -- HTCondor's cap on job-manager processes on a
  resource's head node (default 10).  A group DAG job *is* sheaf's job manager at a site, so this
  caps the group DAG jobs running at one site at once; a match beyond it waits for the next cycle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["DEFAULT_JOBMANAGERS", "DEFAULT_SUBMITTED", "jobmanager_limit", "submitted_limit"]

DEFAULT_SUBMITTED = 1000
DEFAULT_JOBMANAGERS = 10
_SUBMITTED = "GRIDMANAGER_MAX_SUBMITTED_JOBS_PER_RESOURCE"
_JOBMANAGERS = "GRIDMANAGER_MAX_JOBMANAGERS_PER_RESOURCE"
_TOKENS = re.compile(r"[^,\s]+")


def _atoi(text: str) -> int:
    """C's ``atoi``: leading blanks, a sign, digits; anything else ends it (0 when none)."""
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match.group(1)) if match else 0


def _knob(config: Mapping[str, str], name: str) -> str | None:
    upper = {key.upper(): value for key, value in config.items()}
    value = upper.get(name)
    return value if value is not None and value.strip() else None


def submitted_limit(config: Mapping[str, str], resource: str, kind: str) -> int:
    """The most node jobs the site ``resource`` (a backend of ``kind``) may have submitted at once."""
    value = _knob(config, f"{_SUBMITTED}_{kind.upper()}") or _knob(config, _SUBMITTED)
    limit = -1
    if value is not None:
        tokens = _TOKENS.findall(value)
        if tokens:
            limit = _atoi(tokens[0])
            rest = iter(tokens[1:])
            for token in rest:
                if token in resource:
                    following = next(rest, None)
                    if following is not None:
                        limit = _atoi(following)
    return limit if limit > 0 else DEFAULT_SUBMITTED


def jobmanager_limit(config: Mapping[str, str]) -> int:
    """The most group DAG jobs running at one site at once."""
    value = _knob(config, _JOBMANAGERS)
    limit = _atoi(value) if value is not None else DEFAULT_JOBMANAGERS
    return limit if limit > 0 else DEFAULT_JOBMANAGERS
