"""HTCondor's match ad, built as real ads when an evaluation shows it (``PARENT`` of the MY ad,
``ROOT``, ``lCtx``...).  Lookups of its names do not need it: ``_eval._context_lookup`` answers them.

The ads are made by the evaluation's ad class (``Env.ad_type``), which this module does not import."""

from __future__ import annotations

__all__ = ["build_context"]

from typing import Any, Final

from ._nodes import NOT_CONSTANT, value_node
from ._parser import parse_ad

_ROOT: Final = parse_ad(
    "[ leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank; symmetricMatch = RIGHT.requirements && "
    "LEFT.requirements; leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements ]")
_LCTX: Final = parse_ad("[ ad = .LEFT; my = .LEFT; other = .RIGHT; target = .RIGHT ]")
_RCTX: Final = parse_ad("[ ad = .RIGHT; my = .RIGHT; other = .LEFT; target = .LEFT ]")


class _AdRef:
    """An attribute of the match ad whose value is one of the two ads themselves (an expression as
    the evaluator reads one: its node, no constant value, and a closure that gives the ad)."""

    __slots__ = ("_fn", "const", "node")

    def __init__(self, ad: Any) -> None:
        self.node = value_node(ad)
        self.const = NOT_CONSTANT
        self._fn = lambda env, scope: ad


def _ad(ad_type: Any, node: tuple[Any, ...], parent: Any) -> Any:
    ad = ad_type._from_node(node)
    ad._parent = parent
    return ad


def build_context(ad_type: Any, my: Any, target: Any) -> dict[str, Any]:
    root = _ad(ad_type, _ROOT, None)
    lctx, rctx = _ad(ad_type, _LCTX, root), _ad(ad_type, _RCTX, root)
    for name, value in (("lCtx", lctx), ("LEFT", my), ("rCtx", rctx), ("RIGHT", target)):
        root._ex[name.lower()] = _AdRef(value)
        root._names[name.lower()] = name
    return {"root": root, "lctx": lctx, "rctx": rctx}
