"""``Expr`` and ``ClassAd``, the objects users hold, and the evaluation entry points.

An ``Expr`` wraps the parser's node tuple; equality and hashing are structural (``parse(unparse(e))
== e``).  What evaluates it (``Expr.fn``, from ``_eval.compiled``) takes ``(env, scope_ad)``: a walk
over the nodes on the first use, from the second a closure kept on the object, so parsing once and
evaluating many times costs one compilation, and evaluating once none.  ``parse`` keeps a bounded
cache from source text to ``Expr``: the same text always gives the same object.

With the compiled parser (``_parser.ACCELERATED``), ``parse``, ``ClassAd.parse`` and
``ClassAd.parse_old`` build their ``Expr`` objects and dicts in C (``_cparse``), and an attribute whose
value has three tokens or more is a ``LazyExpr``: its text was checked against the grammar when the
ad was read -- a syntax error is reported then, as without it -- and its node is built on first use.
Such a value is never a constant (every value of one or two tokens, and time literals, are built at
once).  An ``Expr`` made in C holds atoms and a tree of atoms only, which can be in no reference cycle:
the garbage collector leaves it alone (half of the time of parsing went to collections walking such
objects) until it holds a closure (``_eval.compiled`` hands it back to the collector).

A ``ClassAd`` is a mutable mapping from case-insensitive attribute names to expressions.  Storage is
two dicts keyed by the lower-cased name: ``_ex`` (name -> ``Expr``) and ``_names`` (name -> the
spelling first used, kept for printing).  ``ad[name]`` gives the value when the attribute is a
constant (``1``, ``"x"``, ``true``, a list or ad of constants) and the ``Expr`` otherwise, like the
official binding; ``ad.lookup(name)`` always gives the ``Expr``; ``ad.eval(name, target)`` evaluates
(a missing attribute evaluates to ``UNDEFINED``).  Assigning accepts an ``Expr`` or a Python value
(``bool``/``int``/``float``/``str``/``list``/``dict``/``ClassAd``/``UNDEFINED``/``ERROR``/times).
A nested ad met during evaluation is a *view*: it shares its parent expression's dicts and has a
``_parent`` (the enclosing ad, for scoping).  Views copy their dicts before the first write.

Layering: these classes sit above the evaluator and the built-ins (they evaluate), which know ads and
expressions only by their slots; each evaluation hands the evaluator this ``ClassAd`` class (for the
ads it makes) and the built-in table through its ``Env``.
"""

from __future__ import annotations

__all__ = ["NOT_CONSTANT", "ClassAd", "Expr", "LazyExpr", "as_classad", "constant_value", "evaluate",
           "evaluate_attr", "evaluate_in", "parse", "to_expr"]

import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, Final

from ._eval import NOT_PLAIN, Env, compiled, deref, run
from ._functions import FUNCTIONS
from ._lexer import NulEscape
from ._nodes import NOT_CONSTANT, Node, const_of, value_node
from ._parser import OLD_BACKSLASH_END, accelerator, parse_ad, parse_expr, parse_old_ad, parse_span
from ._stack import deep_stack
from ._unparse import quote_name, unparse, unparse_old
from ._values import ERROR, UNDEFINED

Fn = Callable[[Env, "ClassAd | None"], Any]
_PARSE_CACHE: dict[str, Expr] = {}
_PARSE_CACHE_LIMIT: Final = 4096  # small: a big cache of node tuples makes the GC slow


class Expr:
    """A parsed ClassAd expression (immutable; evaluate it any number of times)."""

    __slots__ = ("_fn", "_hash", "_used", "const", "node")

    def __init__(self, node: Node) -> None:
        self.node = node
        self._fn: Fn | None = None
        self._used = False  # evaluated once already: the next evaluation compiles
        self._hash: int | None = None
        self.const: Any = const_of(node)

    @property
    def fn(self) -> Fn:
        return self._fn or compiled(self)

    def evaluate(self, my: Any = None, target: Any = None, strict: bool = False) -> Any:
        """Evaluate with ``my`` as the scope ad and ``target`` as the other ad (see ``classad.evaluate``)."""
        return evaluate_in(self, as_classad(my), as_classad(target), strict)

    def evaluate_in(self, my: ClassAd | None, target: ClassAd | None = None, strict: bool = False) -> Any:
        """Fast path for matchmaking: ``my`` and ``target`` must already be ``ClassAd`` objects."""
        return evaluate_in(self, my, target, strict)

    def unparse(self) -> str:
        return unparse(self.node)

    def __str__(self) -> str:
        return unparse(self.node)

    def __repr__(self) -> str:
        return f"Expr({unparse(self.node)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Expr):
            return False
        try:
            return self is other or self.node == other.node
        except RecursionError:  # trees nested deeper than the process's limit allows
            with deep_stack():
                return self.node == other.node

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self.node)
        return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse, (unparse(self.node),))


_NODE: Final = Expr.__dict__["node"]  # the slot, which LazyExpr's property fills on first use


class LazyExpr(Expr):
    """An ad's compound value, parsed on first use (see the module docstring); made by ``_cparse``."""

    __slots__ = ("_src", "_start", "_stop")
    _src: str
    _start: int
    _stop: int

    @property
    def node(self) -> Node:
        node: Node | None = _NODE.__get__(self, Expr)  # None until parsed
        if node is None:
            node = parse_span(self._src, self._start, self._stop)
            _NODE.__set__(self, node)
        return node

    @node.setter
    def node(self, node: Node) -> None:
        _NODE.__set__(self, node)


_C: Final = accelerator()
if _C is not None:
    _C.configure_load(Expr, LazyExpr, NOT_CONSTANT, UNDEFINED, ERROR)


def parse(text: str | Expr) -> Expr:
    """Parse one ClassAd expression; raise ``ClassAdSyntaxError`` (a ``ValueError``) if it is not one."""
    if isinstance(text, Expr):
        return text
    expr = _PARSE_CACHE.get(text)
    if expr is None:
        expr = (_C is not None and _compiled(_C.parse, text)) or Expr(parse_expr(text))
        if len(_PARSE_CACHE) >= _PARSE_CACHE_LIMIT:
            _PARSE_CACHE.clear()
        _PARSE_CACHE[text] = expr
    return expr


_END_SEMICOLONS: Final = re.compile(r";[ \t;]*$", re.MULTILINE)


def _compiled(load: Callable[..., Any], *args: Any) -> Any:
    """What the compiled parser makes of the text; None (take the Python path, which places the
    error) at a ``\\0`` escape."""
    try:
        return load(*args)
    except NulEscape:
        return None

class ClassAd(MutableMapping[str, Any]):
    """A ClassAd: attribute names (case-insensitive, case-preserving) bound to expressions."""

    __slots__ = ("__weakref__", "_ex", "_names", "_parent", "_shared")

    def __init__(self, data: Mapping[str, Any] | str | None = None) -> None:
        self._ex: dict[str, Expr] = {}
        self._names: dict[str, str] = {}
        self._parent: ClassAd | None = None
        self._shared = False
        if isinstance(data, str):  # new syntax only, as classad2.ClassAd; parse_old names the old one
            other = ClassAd.parse(data)
            self._ex, self._names = other._ex, other._names
        elif data is not None:
            for name, value in data.items():
                if name != "":  # left out, as classad2 leaves it out of an ad made from a dict
                    self[name] = value

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> ClassAd:
        """Parse new syntax: ``[ a = 1; b = a + 1 ]``."""
        if _C is not None and (ad := _compiled(_C.load_ad, text, cls)) is not None:
            return ad  # type: ignore[no-any-return]
        return cls._from_node(parse_ad(text))

    @classmethod
    def parse_old(cls, text: str) -> ClassAd:
        """Parse old syntax: one ``Name = expression`` per line (blank and ``#`` lines skipped); a line
        may end in semicolons, which HTCondor's old-syntax reader passes over."""
        if ";" in text:
            text = _END_SEMICOLONS.sub("", text)
        if _C is not None and OLD_BACKSLASH_END.search(text) is None \
                and (ad := _compiled(_C.load_old, text, cls)) is not None:
            return ad  # type: ignore[no-any-return]
        return cls._from_node(parse_old_ad(text))

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

    @classmethod
    def derived(cls, base: ClassAd, values: Mapping[str, Any]) -> ClassAd:
        """A copy of ``base`` with ``values`` bound anew, by lower-case names ``base`` already has (so
        their spelling and place stay ``base``'s): one dict copy, the names shared until either ad
        changes (many ads made from one, as a submit description's job ads are)."""
        ad = cls.__new__(cls)
        ex = dict(base._ex)
        for lname, value in values.items():
            ex[lname] = value if isinstance(value, Expr) else to_expr(value)
        base._shared = True  # from now on base copies its dicts before it changes them, as the ad does
        ad._ex, ad._names, ad._parent, ad._shared = ex, base._names, None, True
        return ad

    def _own(self) -> None:
        if self._shared:
            self._ex, self._names, self._shared = dict(self._ex), dict(self._names), False

    # -- mapping -----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        expr = self._ex[name.lower()]
        if expr.const is not NOT_CONSTANT:
            return expr.const
        value = constant_value(expr.node, self)
        return expr if value is NOT_CONSTANT else value

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"ClassAd keys are strings, not {name!r}")
        if not name:
            raise ValueError("a ClassAd attribute name may not be empty")
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
        return "".join(f"{quote_name(self._names[k])} = {unparse_old(e.node)}\n" for k, e in self._ex.items())

    def __str__(self) -> str:
        return self.unparse()

    def __repr__(self) -> str:
        return f"ClassAd({self.unparse()!r})"


def to_expr(value: Any) -> Expr:
    """An ``Expr`` for what a caller assigns: an ``Expr`` as it is, a Python value as its literal."""
    if isinstance(value, Expr):
        return value
    return Expr(value_node(value))


def constant_value(node: Node, scope: ClassAd | None) -> Any:
    """The value of a constant node (a list or ad of constants included), or NOT_CONSTANT."""
    kind = node[0]
    if kind == "list":
        items = [constant_value(item, scope) for item in node[1]]
        return NOT_CONSTANT if any(item is NOT_CONSTANT for item in items) else items
    if kind == "ad":
        ad = ClassAd._from_node(node)
        ad._parent = scope
        return ad
    if kind == "un" and node[1] == "-" and node[2][0] in ("int", "real"):
        return -node[2][1]
    return const_of(node)


# -- evaluation entry points ----------------------------------------------------------------------

def as_classad(value: Any) -> ClassAd | None:
    """Accept a ClassAd, a string (new syntax when it starts with ``[``, else old syntax: one
    ``Name = expr`` a line), a mapping, or None."""
    if value is None or isinstance(value, ClassAd):
        return value
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return ClassAd.parse_old(value)
    return ClassAd(value)


def evaluate_in(expr: Expr, my: ClassAd | None, target: ClassAd | None = None, strict: bool = False) -> Any:
    """Evaluate ``expr`` with scope ``my`` and target ``target`` (both ClassAd or None): the fast path."""
    if my is None and target is not None:
        my = ClassAd()
    return run(expr._fn or compiled(expr), Env(my, target, strict, ClassAd, FUNCTIONS), my)


def evaluate(expr: Expr | str, my: Any = None, target: Any = None, strict: bool = False) -> Any:
    """Evaluate ``expr`` (text is parsed first) in HTCondor compat mode, or strict mode."""
    return evaluate_in(parse(expr), as_classad(my), as_classad(target), strict)


def evaluate_attr(ad: ClassAd, name: str, target: Any = None, strict: bool = False) -> Any:
    """The value of attribute ``name`` of ``ad`` (UNDEFINED if it has none)."""
    expr = ad._ex.get(name.lower())
    if expr is None:
        return UNDEFINED
    env = Env(ad, as_classad(target), strict, ClassAd, FUNCTIONS)
    return run(lambda env, scope: deref(env, ad, name.lower(), expr), env, ad)


if _C is not None:  # the compiled first evaluation reads ads' slots (see _eval.first_evaluation)
    _C.configure_evaluation(ClassAd, NOT_PLAIN | {"currenttime"})  # names it leaves to Python
