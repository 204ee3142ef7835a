"""``ClassAd``: a mutable mapping from case-insensitive attribute names to expressions.

Storage is two dicts keyed by the lower-cased name: ``_ex`` (name -> ``Expr``) and ``_names`` (name ->
the spelling first used, kept for printing).  ``ad[name]`` gives the value when the attribute is a
constant (``1``, ``"x"``, ``true``, a list or ad of constants) and the ``Expr`` otherwise, like the
official binding; ``ad.lookup(name)`` always gives the ``Expr``; ``ad.eval(name, target)`` evaluates
(a missing attribute evaluates to ``UNDEFINED``).  Assigning accepts an ``Expr`` or a Python value
(``bool``/``int``/``float``/``str``/``list``/``dict``/``ClassAd``/``UNDEFINED``/``ERROR``/times).

With the compiled parser, ``parse``/``parse_old`` build the two dicts in C (``_cparse.load_ad``), and an
attribute whose value is an expression of three tokens or more holds a ``LazyExpr``: checked now,
parsed on first use.  Without it (``SHEAF_PURE_PYTHON=1``), the Python parser reads every value.

A nested ad met during evaluation is a *view*: it shares its parent expression's dicts and has a
``_parent`` (the enclosing ad, for scoping).  Views copy their dicts before the first write.
"""

from __future__ import annotations

__all__ = ["ClassAd"]

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from ._expr import NOT_CONSTANT, Expr, LazyExpr
from ._lexer import unescape
from ._parser import accelerator, parse_ad, parse_old_ad
from ._unparse import quote_name, unparse
from ._values import ERROR, UNDEFINED

_C = accelerator()
if _C is not None:
    _C.configure_load(Expr, LazyExpr, NOT_CONSTANT, UNDEFINED, ERROR, unescape)


class ClassAd(MutableMapping[str, Any]):
    """A ClassAd: attribute names (case-insensitive, case-preserving) bound to expressions."""

    __slots__ = ("__weakref__", "_ex", "_names", "_parent", "_shared")

    def __init__(self, data: Mapping[str, Any] | str | None = None) -> None:
        self._ex: dict[str, Expr] = {}
        self._names: dict[str, str] = {}
        self._parent: ClassAd | None = None
        self._shared = False
        if isinstance(data, str):
            other = ClassAd.parse(data) if data.lstrip().startswith("[") else ClassAd.parse_old(data)
            self._ex, self._names = other._ex, other._names
        elif data is not None:
            for name, value in data.items():
                self[name] = value

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> ClassAd:
        """Parse new syntax: ``[ a = 1; b = a + 1 ]``."""
        if _C is not None and (loaded := _C.load_ad(text)) is not None:
            return cls._loaded(*loaded)
        return cls._from_node(parse_ad(text))

    @classmethod
    def parse_old(cls, text: str) -> ClassAd:
        """Parse old syntax: one ``Name = expression`` per line (blank and ``#`` lines skipped)."""
        if _C is not None and (loaded := _C.load_old(text)) is not None:
            return cls._loaded(*loaded)
        return cls._from_node(parse_old_ad(text))

    @classmethod
    def _loaded(cls, ex: dict[str, Expr], names: dict[str, str]) -> ClassAd:
        ad = cls.__new__(cls)
        ad._ex, ad._names, ad._parent, ad._shared = ex, names, None, False
        return ad

    @classmethod
    def _from_node(cls, node: tuple[Any, ...]) -> ClassAd:
        ad = cls()
        for name, value in node[1]:
            lname = name.lower()
            ad._ex[lname] = Expr(value)
            ad._names.setdefault(lname, name)
        return ad

    @classmethod
    def _view(cls, ex: dict[str, Expr], names: dict[str, str], parent: ClassAd | None) -> ClassAd:
        ad = cls.__new__(cls)
        ad._ex, ad._names, ad._parent, ad._shared = ex, names, parent, True
        return ad

    def _own(self) -> None:
        if self._shared:
            self._ex, self._names, self._shared = dict(self._ex), dict(self._names), False

    # -- mapping -----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        expr = self._ex[name.lower()]
        if expr.const is not NOT_CONSTANT:
            return expr.const
        from ._convert import constant_value
        value = constant_value(expr.node, self)
        return expr if value is NOT_CONSTANT else value

    def __setitem__(self, name: str, value: Any) -> None:
        from ._convert import to_expr
        self._own()
        lname = name.lower()
        self._ex[lname] = to_expr(value)
        self._names.setdefault(lname, name)

    def __delitem__(self, name: str) -> None:
        self._own()
        lname = name.lower()
        del self._ex[lname]
        del self._names[lname]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names.values())

    def __len__(self) -> int:
        return len(self._ex)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._ex

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClassAd):
            return NotImplemented
        return self._ex == other._ex

    __hash__ = None  # type: ignore[assignment]

    # -- ClassAd operations ------------------------------------------------------------------
    def lookup(self, name: str) -> Expr:
        """The expression bound to ``name`` (KeyError if there is none)."""
        return self._ex[name.lower()]

    def get_expr(self, name: str) -> Expr | None:
        return self._ex.get(name.lower())

    def eval(self, name: str, target: Any = None, strict: bool = False) -> Any:
        """Evaluate attribute ``name`` with this ad as MY (and ``target`` as TARGET)."""
        from ._eval import evaluate_attr
        return evaluate_attr(self, name, target, strict)

    def copy(self) -> ClassAd:
        ad = ClassAd()
        ad._ex, ad._names = dict(self._ex), dict(self._names)
        return ad

    def unparse(self) -> str:
        """New syntax on one line: ``[ a = 1; b = a + 1 ]``."""
        body = "; ".join(f"{quote_name(self._names[k])} = {unparse(e.node)}" for k, e in self._ex.items())
        return "[ " + body + " ]" if body else "[ ]"

    def unparse_old(self) -> str:
        """Old syntax: one ``Name = expression`` per line."""
        return "".join(f"{quote_name(self._names[k])} = {unparse(e.node)}\n" for k, e in self._ex.items())

    def __str__(self) -> str:
        return self.unparse()

    def __repr__(self) -> str:
        return f"ClassAd({self.unparse()!r})"
