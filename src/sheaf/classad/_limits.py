"""Concurrency limits: HTCondor's pool-wide counting semaphores, as a throttle object.

A job declares the limits it consumes in ``ConcurrencyLimits``, a string such as ``"a, b:2"``:
names separated by commas or white space, each with an optional ``:weight`` (default 1).  Names are
case-insensitive, so they are folded to lower case here once.  A weight that is not a positive
number counts as 1, as HTCondor's ``strtod``-based reader leaves it.

The maximum for a name comes from a configuration mapping (keys case-insensitive), first match wins:

1. ``<NAME>_LIMIT`` for the full name, dots included (``pegasus_transfer.stagein_LIMIT``);
2. ``CONCURRENCY_LIMIT_DEFAULT_<PREFIX>`` when the name is dotted, PREFIX being the part before the
   first dot (the seeds' ``pegasus_transfer.stagein`` -> ``CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER``);
3. ``CONCURRENCY_LIMIT_DEFAULT``;
4. HTCondor's built-in default, 2308032 (in effect: unlimited).

Other keys are ignored, so a whole configuration may be passed; the limit values must be numbers >= 0
(``TypeError``/``ValueError`` otherwise: a throttle's capacity is validated once, up front).

Invariant: a demand is granted only if, for every name it lists, ``usage + weight <= limit``
(HTCondor rejects a match when ``count + increment > max``); a grant adds every weight, a release
subtracts them.  ``try_acquire`` never blocks and never half-grants.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

__all__ = ["HTCONDOR_DEFAULT_LIMIT", "ConcurrencyLimits", "Demand", "limit_for", "parse_limits"]

HTCONDOR_DEFAULT_LIMIT = 2308032.0
_SPLIT = re.compile(r"[\s,]+")

Demand = tuple[tuple[str, float], ...]
"""What one job consumes: ``((name, weight), ...)``, names lower-cased, in declaration order."""


def parse_limits(text: str) -> Demand:
    """Parse a ``ConcurrencyLimits`` string; a repeated name adds its weights up."""
    totals: dict[str, float] = {}
    for item in _SPLIT.split(text.strip()):
        if not item:
            continue
        name, _, weight_text = item.partition(":")
        if not name:
            continue
        key = name.lower()
        totals[key] = totals.get(key, 0.0) + _weight(weight_text)
    return tuple(totals.items())


def limit_for(name: str, knobs: Mapping[str, float]) -> float:
    """HTCondor's maximum for limit ``name`` given upper-case knobs: ``<NAME>_LIMIT``, else (for a
    dotted name) ``CONCURRENCY_LIMIT_DEFAULT_<prefix before the first dot>``, else
    ``CONCURRENCY_LIMIT_DEFAULT``, else HTCondor's built-in default."""
    upper = name.upper()
    found = knobs.get(f"{upper}_LIMIT")
    if found is None and "." in upper:
        found = knobs.get(f"CONCURRENCY_LIMIT_DEFAULT_{upper.split('.', 1)[0]}")
    if found is None:
        found = knobs.get("CONCURRENCY_LIMIT_DEFAULT")
    return HTCONDOR_DEFAULT_LIMIT if found is None else found


def _weight(text: str) -> float:
    if not text:
        return 1.0
    try:
        weight = float(text)
    except ValueError:
        return 1.0
    return weight if weight > 0 and math.isfinite(weight) else 1.0


def _number(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"concurrency limit {key} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"concurrency limit {key} must be a number, got {value!r}") from None
    if not number >= 0:
        raise ValueError(f"concurrency limit {key} must be >= 0, got {value!r}")
    return number


class ConcurrencyLimits:
    """Limits from a configuration mapping plus the current usage; acquire is non-blocking."""

    __slots__ = ("_cache", "_config", "_usage")

    def __init__(self, config: Mapping[str, object] | None = None,
                 usage: Mapping[str, float] | None = None) -> None:
        self._config = {key.upper(): _number(key, value) for key, value in (config or {}).items()
                        if key.upper().endswith("_LIMIT")
                        or key.upper().startswith("CONCURRENCY_LIMIT_DEFAULT")}
        self._usage: dict[str, float] = {}
        for name, count in (usage or {}).items():
            self._usage[name.lower()] = self._usage.get(name.lower(), 0.0) + _number(name, count)
        self._cache: dict[str, float] = {}

    def limit(self, name: str) -> float:
        """The maximum for ``name`` (see the module docstring for the lookup order)."""
        key = name.lower()
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._lookup(key)
        return found

    def _lookup(self, key: str) -> float:
        return limit_for(key, self._config)

    def usage(self, name: str) -> float:
        return self._usage.get(name.lower(), 0.0)

    def refusal(self, demand: Demand) -> str | None:
        """Why ``demand`` cannot be granted now, or None if it can."""
        for name, weight in demand:
            used, limit = self._usage.get(name, 0.0), self.limit(name)
            if used + weight > limit:
                return f"concurrency limit {name} reached ({used:g} + {weight:g} > {limit:g})"
        return None

    def try_acquire(self, demand: Demand) -> bool:
        """Grant ``demand`` entirely or not at all; never blocks."""
        if self.refusal(demand) is not None:
            return False
        for name, weight in demand:
            self._usage[name] = self._usage.get(name, 0.0) + weight
        return True

    def release(self, demand: Demand) -> None:
        """Give back what ``try_acquire`` granted (usage never goes below zero)."""
        for name, weight in demand:
            self._usage[name] = max(0.0, self._usage.get(name, 0.0) - weight)

    def statistics(self) -> dict[str, tuple[float, float]]:
        """``{name: (usage, limit)}`` for every name in use, sorted by name."""
        return {name: (used, self.limit(name)) for name, used in sorted(self._usage.items())}

    def names(self) -> Iterable[str]:
        return sorted(self._usage)
