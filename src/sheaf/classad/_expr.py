"""``Expr``: an immutable, hashable ClassAd expression, interpreted on first use, compiled on the next.

An ``Expr`` wraps the parser's node tuple; equality and hashing are structural (``parse(unparse(e))
== e``).  ``Expr.fn`` is what evaluates it, ``fn(env, scope_ad)``: on the first use a walk over the
nodes (``_interp.interpret``), from the second on a closure built by ``_eval.compile_node`` and cached
on the object -- compiling costs many evaluations, and most expressions are evaluated once.  ``parse``
keeps a bounded cache from source text to ``Expr``: the same text always gives the same object.

``LazyExpr`` is an ad's compound value read by the compiled loader (``_cparse.load_ad``): its text
was checked against the grammar when the ad was read -- a syntax error is reported there and then --
but its node is built from ``src[start:stop]`` on first use.  Such a value is never a constant (the
loader builds every value of one or two tokens, and time literals, at once).
"""

from __future__ import annotations

__all__ = ["NOT_CONSTANT", "Expr", "LazyExpr", "parse"]

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._parser import Node, accelerator, parse_expr, parse_span
from ._unparse import unparse

if TYPE_CHECKING:
    from ._classad import ClassAd
    from ._eval import Env

Fn = Callable[["Env", "ClassAd | None"], Any]
NOT_CONSTANT: Final = object()
_CONSTANT_KINDS: Final = {"int": None, "real": None, "str": None, "bool": None}
_PARSE_CACHE: dict[str, Expr] = {}
_PARSE_CACHE_LIMIT: Final = 4096  # small: a big cache of node tuples makes the GC slow


class Expr:
    """A parsed ClassAd expression (immutable; evaluate it any number of times)."""

    __slots__ = ("_fn", "_hash", "_used", "const", "node")

    def __init__(self, node: Node) -> None:
        self.node = node
        self._fn: Fn | None = None
        self._used = False
        self._hash: int | None = None
        kind = node[0]
        if kind in _CONSTANT_KINDS:
            self.const: Any = node[1]
        elif kind in {"undef", "error"}:
            from ._values import ERROR, UNDEFINED
            self.const = UNDEFINED if kind == "undef" else ERROR
        elif kind in {"abstime", "reltime"}:
            from ._values import AbsTime
            # HTCondor quirk: a relTime("...") literal is a *real* number of seconds (isReal is true,
            # getSeconds is ERROR); only its spelling remembers it was a time.
            self.const = AbsTime(node[2], node[3]) if kind == "abstime" else float(node[2])
        elif kind == "un" and node[1] == "-" and node[2][0] in ("int", "real") and node[2][1] != (1 << 63):
            self.const = -node[2][1]  # what a negative number assigned from Python becomes
        else:
            self.const = NOT_CONSTANT

    @property
    def fn(self) -> Fn:
        fn = self._fn
        if fn is None:
            if not self._used:
                self._used = True
                return self._interpreted
            from ._eval import compile_node
            fn = self._fn = compile_node(self.node)
        return fn

    def _interpreted(self, env: Env, scope: ClassAd | None) -> Any:
        from ._interp import interpret
        return interpret(self.node, env, scope)

    def evaluate(self, my: Any = None, target: Any = None, strict: bool = False) -> Any:
        """Evaluate with ``my`` as the scope ad and ``target`` as the other ad (see ``classad.evaluate``)."""
        from ._eval import evaluate
        return evaluate(self, my, target, strict)

    def evaluate_in(self, my: ClassAd | None, target: ClassAd | None = None, strict: bool = False) -> Any:
        """Fast path for matchmaking: ``my`` and ``target`` must already be ``ClassAd`` objects."""
        return _evaluate_in(self, my, target, strict)

    def unparse(self) -> str:
        return unparse(self.node)

    def __str__(self) -> str:
        return unparse(self.node)

    def __repr__(self) -> str:
        return f"Expr({unparse(self.node)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and (self is other or self.node == other.node)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self.node)
        return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse, (unparse(self.node),))


_C: Final = accelerator()  # builds an Expr in C (configured by _classad, which imports this module)
_NODE: Final = Expr.__dict__["node"]  # the slot, which LazyExpr's property fills on first use


class LazyExpr(Expr):
    """An ad's compound value, parsed on first use (see the module docstring); made by the loader."""

    __slots__ = ("_src", "_start", "_stop")
    _src: str
    _start: int
    _stop: int

    @property
    def node(self) -> Node:
        try:
            node: Node = _NODE.__get__(self, Expr)
        except AttributeError:
            node = parse_span(self._src, self._start, self._stop)
            _NODE.__set__(self, node)
        return node

    @node.setter
    def node(self, node: Node) -> None:
        _NODE.__set__(self, node)


def _evaluate_in(expr: Expr, my: Any, target: Any, strict: bool) -> Any:
    # replaced by _eval.evaluate_in when _eval loads (it imports this module; this avoids the cycle)
    from ._eval import evaluate_in
    return evaluate_in(expr, my, target, strict)


def parse(text: str | Expr) -> Expr:
    """Parse one ClassAd expression; raise ``ClassAdSyntaxError`` (a ``ValueError``) if it is not one."""
    if isinstance(text, Expr):
        return text
    expr = _PARSE_CACHE.get(text)
    if expr is None:
        expr = (_C is not None and _C.parse(text)) or Expr(parse_expr(text))
        if len(_PARSE_CACHE) >= _PARSE_CACHE_LIMIT:
            _PARSE_CACHE.clear()
        _PARSE_CACHE[text] = expr
    return expr
