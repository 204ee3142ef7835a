"""Resource requests and priorities as the submit language writes them: one check for every reader.

The submit commands ``request_cpus``, ``request_gpus``, ``request_memory`` (MiB), ``request_disk``
(KiB) and ``priority`` hold a number or a ClassAd expression; memory and disk also take a size, a
number with a unit (``K``/``KB``, ``M``/``MB``, ``G``/``GB``, ``T``/``TB``).  ``request_expr`` turns
such a value into the ClassAd text that goes in the job ad (a size becomes an integer in the
request's unit, rounded up) or raises ``RequestError``.  The engine uses it when it reads a submit
description, the planner when it checks condor and pegasus profiles, so ``sheaf plan`` refuses what
``sheaf run`` would.

Policy: a value must be a finite number in HTCondor's 64-bit range, non-negative for a request.  A
literal or a constant expression (one naming no attribute, like ``1e400`` or ``real("nan")``) is
judged when it is read; so are the words ``nan`` and ``inf``, which a reader means as numbers although
ClassAd would read them as attribute names.  An expression that names attributes
(``ifthenelse(DAGNodeRetry > 0, 1e400, 1)``) can only be judged per attempt: ``usable_request``
is the test the pool applies to its value then (a value that fails it makes that attempt
unrunnable, with the reason, instead of stopping the engine).
"""

from __future__ import annotations

__all__ = ["REQUEST_KEYS", "RequestError", "request_expr", "usable_request"]

import functools
import math
import re
from typing import Any, Final

from ._classad import Expr, parse
from ._values import ClassAdSyntaxError

REQUEST_KEYS: Final = ("request_cpus", "request_gpus", "request_memory", "request_disk", "priority")
_INT64_MAX: Final = (1 << 63) - 1
_SIZE: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KkMmGgTt][Bb]?)?\s*\Z")
_MIB_PER_UNIT: Final = {"": 1.0, "k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0**2}
_SCALE: Final = {"request_memory": 1.0, "request_disk": 1024.0}  # MiB -> the request's unit
_NON_NUMBERS: Final = re.compile(r"\s*[-+]?\s*(nan|inf|infinity)\s*\Z", re.IGNORECASE)
_NAMES: Final = frozenset({"attr", "absattr", "sel"})


class RequestError(ValueError):
    """A request or priority value that cannot be used: ``message``, the ``rule`` it breaks."""

    def __init__(self, message: str, rule: str) -> None:
        self.message = message
        self.rule = rule
        super().__init__(f"{message} (rule: {rule})")


def usable_request(value: object) -> bool:
    """Whether an evaluated request is one: a finite, non-negative number within 64 bits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= _INT64_MAX and (type(value) is int or math.isfinite(value))


def _rule(key: str) -> str:
    if key == "priority":
        return "priority is an integer or a ClassAd expression"
    sized = " or a size (number and K/M/G/T unit)" if key in _SCALE else ""
    return f"{key} is a finite non-negative number within 64 bits{sized}, or a ClassAd expression"


@functools.lru_cache(maxsize=4096)
def request_expr(key: str, text: str) -> str:
    """The ClassAd text of submit command ``key = text`` (see the module docstring)."""
    key = key.lower()
    if not text.strip():
        raise RequestError(f"empty {key}", _rule(key))
    if _NON_NUMBERS.match(text):
        raise RequestError(f"{key} is not a finite number", _rule(key))
    size = _SIZE.match(text) if key in _SCALE else None
    if size is not None:
        return _sized(key, size)
    try:
        expr = parse(text.strip())
    except ClassAdSyntaxError as exc:
        raise RequestError(f"{key} is not a ClassAd expression ({exc.reason})", _rule(key)) from None
    if not _names_attributes(expr):
        _check_constant(key, expr.evaluate())
    return text.strip()


def _sized(key: str, size: re.Match[str]) -> str:
    bare_disk = key == "request_disk" and not size.group(2)  # a bare disk size is already KiB
    amount = float(size.group(1))
    if not bare_disk:
        amount *= _MIB_PER_UNIT[(size.group(2) or "")[:1].lower()] * _SCALE[key]
    if not math.isfinite(amount) or math.ceil(amount) > _INT64_MAX:
        raise RequestError(f"{key} is out of range", _rule(key))
    return str(max(0 if bare_disk else 1, math.ceil(amount)))


def _check_constant(key: str, value: Any) -> None:
    if key == "priority":
        ok = isinstance(value, int) and not isinstance(value, bool) and -_INT64_MAX - 1 <= value <= _INT64_MAX
        ok = ok or (type(value) is float and math.isfinite(value) and abs(value) <= _INT64_MAX)
    else:
        ok = usable_request(value)
    if not ok:
        raise RequestError(f"{key} evaluates to {value!r}", _rule(key))


def _names_attributes(expr: Expr) -> bool:
    """Whether the expression reads any attribute (then only an attempt can evaluate it)."""
    stack: list[Any] = [expr.node]
    while stack:
        node = stack.pop()
        if not isinstance(node, tuple) or not node:
            continue
        if node[0] in _NAMES:
            return True
        stack.extend(part for part in node if isinstance(part, tuple))
    return False
