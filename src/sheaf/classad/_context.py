"""HTCondor's match ad, built as real ads when an evaluation shows it (``PARENT`` of the MY ad,
``ROOT``, ``lCtx``...).  Lookups of its names do not need it: ``_eval._context_lookup`` answers them."""

from __future__ import annotations

__all__ = ["build_context"]

from typing import Any

from ._classad import ClassAd
from ._expr import Expr
from ._parser import parse_ad

_ROOT = ("[ leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank; symmetricMatch = RIGHT.requirements && "
         "LEFT.requirements; leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements ]")
_LCTX = "[ ad = .LEFT; my = .LEFT; other = .RIGHT; target = .RIGHT ]"
_RCTX = "[ ad = .RIGHT; my = .RIGHT; other = .LEFT; target = .LEFT ]"


class _AdRef(Expr):
    """An attribute of the match ad whose value is one of the two ads themselves."""

    __slots__ = ()

    def __init__(self, ad: ClassAd) -> None:
        from ._convert import value_node
        super().__init__(value_node(ad))
        self._fn = lambda env, scope: ad


def _ad(text: str, parent: ClassAd | None) -> ClassAd:
    ad = ClassAd._from_node(parse_ad(text))
    ad._parent = parent
    return ad


def build_context(my: Any, target: Any) -> dict[str, ClassAd]:
    root = _ad(_ROOT, None)
    lctx, rctx = _ad(_LCTX, root), _ad(_RCTX, root)
    for name, value in (("lCtx", lctx), ("LEFT", my), ("rCtx", rctx), ("RIGHT", target)):
        root._ex[name.lower()] = _AdRef(value)
        root._names[name.lower()] = name
    return {"root": root, "lctx": lctx, "rctx": rctx}
