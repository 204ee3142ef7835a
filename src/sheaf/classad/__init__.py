"""sheaf.classad: the HTCondor ClassAd language, matchmaking and a negotiator (a leaf package).

The language (owned here)::

    expr = classad.parse("TARGET.Memory > 1024")           # Expr: immutable, hashable, reusable
    classad.evaluate(expr, my=None, target="[Memory = 2048]")  # -> True
    classad.evaluate(expr, my=..., target=..., strict=True)    # strict new-ClassAd semantics
    ad = classad.ClassAd.parse("[a = 1; b = a + 1]"); classad.ClassAd.parse_old("a = 1\\nb = a + 1")
    ad.lookup("b") -> Expr;  ad.eval("b", target=None) -> value;  ad["b"] = 3 or an Expr
    classad.unparse(expr) -> str;  ad.unparse() / str(ad);  ad.unparse_old()

Values: ``UNDEFINED``, ``ERROR``, ``bool``, ``int``, ``float``, ``str``, ``list``, ``ClassAd``,
``AbsTime``, ``RelTime``.  ``evaluate`` defaults to HTCondor's compat mode (an unqualified name not
found from MY is looked up in TARGET); ``strict=True`` is the new-ClassAd semantics.  Bad text raises
``ClassAdSyntaxError`` (a ``ValueError``) showing line, column and a caret; evaluation never raises
for data -- problems are ``ERROR``.  ``request_expr``/``usable_request`` hold the submit language's
rules for resource requests and priorities, shared by the planner and the engine.

Fast path for matchmaking: ``expr.evaluate_in(my_ad, target_ad, strict=False)`` with both ads
already ``ClassAd`` objects (no conversion, no parsing); ``expr.const`` is the value of a constant
expression (else ``_nodes.NOT_CONSTANT``); ``parse`` caches text -> ``Expr``; every ``Expr`` caches its
compiled closure.

Conformance: differential tests against the official library (``classad2``) in both modes.  Known,
deliberate differences: ``parse_old`` refuses a line it cannot parse (the library drops it); list
values are evaluated eagerly (the library hands back unevaluated elements); ``unparse()``/``string()``
of an ad literal keeps the source order of attributes (the library uses its hash order); a
fractional ``relTime`` literal is written with every digit where HTCondor's six significant ones
would not read back the same.  ``absTime("...")``/``relTime("...")`` texts are read by the library's
own grammar, junk included (``_timetext``).  Strings are HTCondor's UTF-8 bytes to ``size``,
``substr`` and the regular expressions; bytes that are no valid UTF-8 (which the binding cannot
return) keep each byte as the character of its value.
"""

from __future__ import annotations

from ._classad import ClassAd, Expr, evaluate, parse
from ._fn_env import split_v2_args
from ._match_api import (
    ConcurrencyLimits,
    Cycle,
    Demand,
    Expansion,
    Match,
    expand,
    half_match,
    limit_for,
    negotiate,
    parse_limits,
    rank,
    recount_matches,
    symmetric_match,
    unmatch,
)
from ._requests import REQUEST_KEYS, RequestError, request_expr, usable_request
from ._values import ERROR, UNDEFINED, AbsTime, ClassAdSyntaxError, RelTime, excerpt


def unparse(expr: Expr | str) -> str:
    """ClassAd text for ``expr`` such that ``parse(unparse(expr)) == expr``."""
    return parse(expr).unparse()


__all__ = [
    "ERROR",
    "REQUEST_KEYS",
    "UNDEFINED",
    "AbsTime",
    "ClassAd",
    "ClassAdSyntaxError",
    "ConcurrencyLimits",
    "Cycle",
    "Demand",
    "Expansion",
    "Expr",
    "Match",
    "RelTime",
    "RequestError",
    "evaluate",
    "excerpt",
    "expand",
    "half_match",
    "limit_for",
    "negotiate",
    "parse",
    "parse_limits",
    "rank",
    "recount_matches",
    "request_expr",
    "split_v2_args",
    "symmetric_match",
    "unmatch",
    "unparse",
    "usable_request",
]
