"""Concurrency limits: HTCondor's pool-wide counting semaphores, as a throttle object.

A job declares the limits it consumes in ``ConcurrencyLimits``, a string such as ``"a, b:2"``, read
as the negotiator reads it (``ParseConcurrencyLimit``, ``Matchmaker::rejectForConcurrencyLimits``):

* the string is folded to lower case and split into tokens at commas and white space;
* a token is ``name`` or ``name:weight``.  The weight is what C's ``strtod`` reads from the start of
  the text after the ``:`` (``2x`` is 2, ``0x10`` is 16, ``1e999`` and ``inf`` are infinite, so the
  job can never get the limit); a weight that is not positive (``x``, ``-2``, nothing) counts as 1.
  NaN also counts as 1: in HTCondor it would turn the name's count into NaN and switch the limit off
  for the whole pool, which sheaf deliberately does not copy;
* ``name`` is an attribute name (a letter or ``_``, then letters, digits, ``_``), or two of them
  joined by one dot (``pegasus_transfer.stagein``).  Any other token is ignored, and logged at debug
  level on the ``sheaf.classad`` logger as HTCondor logs it: ``Ignoring invalid concurrency limit
  'a-b'``;
* each token is its own demand, checked on its own: ``"a, a"`` asks twice for one unit of ``a``;
  both are granted when ``a`` has room for one (each check sees the usage before the job), and the
  job then holds two -- as the negotiator checks the tokens one by one and the accountant increments
  once per token.

The maximum for a name comes from a configuration mapping (keys case-insensitive), first match wins:

1. ``<NAME>_LIMIT`` for the full name, dots included (``pegasus_transfer.stagein_LIMIT``);
2. ``CONCURRENCY_LIMIT_DEFAULT_<PREFIX>`` when the name is dotted, PREFIX being the part before the
   first dot (the Pegasus manual's ``pegasus_transfer.stagein`` ->
   ``CONCURRENCY_LIMIT_DEFAULT_PEGASUS_TRANSFER``);
3. ``CONCURRENCY_LIMIT_DEFAULT``;
4. HTCondor's built-in default, 2308032 (in effect: unlimited).

Other keys are ignored, so a whole configuration may be passed; the limit values must be numbers >= 0
(``TypeError``/``ValueError`` otherwise: a throttle's capacity is validated once, up front).

Invariant: a demand is granted only if, for every token it lists, ``usage + weight <= limit``
(HTCondor rejects a match when ``count + increment > max``), usage being what was held before the
demand; a grant adds every token's weight, a release subtracts them.  ``try_acquire`` never blocks
and never half-grants.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

__all__ = ["HTCONDOR_DEFAULT_LIMIT", "ConcurrencyLimits", "Demand", "limit_for", "parse_limits"]

HTCONDOR_DEFAULT_LIMIT = 2308032.0
_SPLIT = re.compile(r"[\s,]+")
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")
# The prefix C's strtod reads: a decimal or hexadecimal number, or inf/infinity/nan(...).
_STRTOD = re.compile(r"""\s*[+-]?(?:
    (?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)
  | (?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?
  | inf(?:inity)? | nan(?:\([0-9A-Za-z_]*\))?)""", re.IGNORECASE | re.VERBOSE)

Demand = tuple[tuple[str, float], ...]
"""What one job consumes: ``((name, weight), ...)``, one pair per valid token (a name may repeat),
names lower-cased, in declaration order."""


def _log_invalid(token: str) -> None:
    # logging imported here, at the first invalid limit: every engine's start-up parses the limits
    # of its jobs and would otherwise import it for nothing
    import logging

    logging.getLogger("sheaf.classad").debug("Ignoring invalid concurrency limit '%s'", token)


def parse_limits(text: str) -> Demand:
    """Parse a ``ConcurrencyLimits`` string (see the module docstring); invalid tokens are dropped."""
    demand: list[tuple[str, float]] = []
    for token in _SPLIT.split(text.lower()):
        if not token:
            continue
        name, _, weight_text = token.partition(":")
        if _VALID_NAME.fullmatch(name) is None:
            _log_invalid(token)
            continue
        demand.append((name, _weight(weight_text)))
    return tuple(demand)


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
    """``strtod(text)``, with what is not positive (or NaN) counted as 1."""
    found = _STRTOD.match(text)
    if found is None:
        return 1.0
    number = found[0].strip()
    weight = float.fromhex(number) if found["hex"] else float(number.split("(")[0])
    return weight if weight > 0 and not math.isnan(weight) else 1.0


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
