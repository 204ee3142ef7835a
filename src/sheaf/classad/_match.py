"""Matchmaking between two ads: ``symmetric_match``, ``half_match`` and ``rank``.

Policy (HTCondor's, checked against the official binding's ``ClassAd.matches``/``symmetricMatch``):

* ``half_match(my, target)``: ``my``'s ``Requirements`` evaluated with ``my`` as MY and ``target`` as
  TARGET, in compat mode (an unqualified name missing from MY is looked up in TARGET).  True only for
  ``true``, a non-zero number or a non-zero ``relTime``; ``false``, ``0``, ``undefined``, ``error``, an
  ``absTime``, a string, a list or an ad -- and an ad without ``Requirements`` -- do not match.
* ``symmetric_match(a, b)``: both halves hold.
* ``rank(my, target)``: ``my``'s ``Rank`` against ``target`` as a float, as the negotiator reads a
  job's Rank of a slot (``EvalFloat``): a real or integer as is, a boolean as 1.0/0.0, anything else
  -- undefined, error, a string -- as 0.0.  When ``my`` has no ``Rank``, ``EvalFloat`` reads the
  attribute from the other ad, in that ad: ``target``'s ``Rank`` evaluated with ``target`` as MY
  (the slot's own preference); neither ad having one is 0.0.

All three use the language's fast path (``_classad.evaluate_in``, and a constant's value without
evaluating); ``symmetric_match`` and ``rank`` also accept ad text.
Evaluation never raises for data problems; a bad ad is simply not a match.
"""

from __future__ import annotations

from typing import Any

from ._classad import NOT_CONSTANT, ClassAd, as_classad, evaluate_in
from ._values import RelTime

__all__ = ["as_ad", "half_match", "rank", "rank_value", "symmetric_match", "truth"]


def as_ad(ad: ClassAd | str) -> ClassAd:
    """An ad as given, or parsed from text (new syntax if it starts with ``[``, else old syntax)."""
    if type(ad) is ClassAd or isinstance(ad, ClassAd):
        return ad
    found = as_classad(ad)
    assert found is not None
    return found


def truth(value: Any) -> bool:
    """HTCondor's boolean reading of a Requirements value (``IsBooleanValueEquiv``)."""
    if value is True or value is False:
        return value
    if type(value) is int or type(value) is float:
        return bool(value)
    if type(value) is RelTime:  # a duration reads as its seconds; an absolute time as no boolean
        return bool(value.secs)
    return False


def rank_value(value: Any) -> float:
    """HTCondor's float reading of a Rank value (``EvalFloat``): numbers and booleans, else 0.0."""
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return float(value)
    return 0.0


def half_match(my: ClassAd | str, target: ClassAd | str) -> bool:
    """Whether ``my``'s Requirements accept ``target``; text is parsed."""
    return _accepts(as_ad(my), as_ad(target))


def symmetric_match(a: ClassAd | str, b: ClassAd | str) -> bool:
    """Whether each ad's Requirements accept the other (HTCondor's ``IsAMatch``); text is parsed."""
    if type(a) is not ClassAd or type(b) is not ClassAd:
        a, b = as_ad(a), as_ad(b)
    return _accepts(a, b) and _accepts(b, a)


def _accepts(my: ClassAd, target: ClassAd) -> bool:
    expr = my._ex.get("requirements")  # the ad's own dict: names are stored lower-cased
    if expr is None:
        return False
    const = expr.const
    return truth(const if const is not NOT_CONSTANT else evaluate_in(expr, my, target))


def rank(my: ClassAd | str, target: ClassAd | str) -> float:
    """``my``'s Rank of ``target`` as the negotiator reads it (see the module docstring)."""
    my, target = as_ad(my), as_ad(target)
    expr = my._ex.get("rank")
    if expr is None:
        my, target = target, my
        expr = my._ex.get("rank")
        if expr is None:
            return 0.0
    const = expr.const
    return rank_value(const if const is not NOT_CONSTANT else evaluate_in(expr, my, target))
