"""The one precedence table of the ClassAd language, shared by the parser and the unparser.

Binary operators by level, loosest first, all left-associative (HTCondor's grammar, C's ordering of
the bit operators).  The conditional ``c ? a : b`` sits below level 1 and groups to the right;
unary ``- + ! ~`` bind tighter than every binary operator; the elvis ``a ?: b`` tighter still (in
HTCondor ``-a ?: b`` is ``-(a ?: b)``); selection ``a.b`` and subscript ``a[i]`` tightest.
``=?=`` and ``=!=`` are spellings of ``is`` and ``isnt``: the parser keeps the spelling it read so
that unparsing gives the text back.
"""

from __future__ import annotations

__all__ = [
    "BINARY_LEVELS", "COND_PREC", "KEYWORD_OPS", "POSTFIX_PREC", "PRECEDENCE", "UNARY_OPS", "UNARY_PREC",
]

from typing import Final

BINARY_LEVELS: Final[tuple[tuple[str, ...], ...]] = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!=", "=?=", "=!=", "is", "isnt"),
    ("<", "<=", ">", ">="),
    ("<<", ">>", ">>>"),
    ("+", "-"),
    ("*", "/", "%"),
)

COND_PREC: Final = 0
PRECEDENCE: Final[dict[str, int]] = {op: i + 1 for i, ops in enumerate(BINARY_LEVELS) for op in ops}
UNARY_PREC: Final = len(BINARY_LEVELS) + 1
ELVIS_PREC: Final = UNARY_PREC + 1
POSTFIX_PREC: Final = ELVIS_PREC + 1
UNARY_OPS: Final = frozenset({"-", "+", "!", "~"})
KEYWORD_OPS: Final = frozenset({"is", "isnt"})
