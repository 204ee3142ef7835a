"""After a match: ``$$()`` substitution into the job ad, as condor_schedd does before starting a job.

Policy (the schedd's ``dollarDollarExpand``, re-implemented at the value level):

* Every job attribute is expanded, ``Cmd`` first, then the others in the ad's order; attributes
  whose names start with ``MATCH_`` are never expanded (they hold earlier results, which may contain
  a literal ``$$(``).  ``$$()`` can only occur inside string literals (``$`` is not ClassAd syntax),
  so the substitution is done on each string literal of the attribute's expression: a plain string
  value, or a string inside ``strcat(...)``, a list, a nested ad...
* ``$$(Name)`` is replaced by the resource's ``Name``: a string's characters, or the unparsed text of
  any other expression (``2048``, ``Cpus * 2``).  The resource's expression is recorded in the job ad
  as ``MATCH_<Name>`` (spelled as in the reference) -- the USCMS report's ``MATCH_SiteEnvironment``, which
  the matchmaker monitor reads.  ``$$(Name:default)`` uses the default text when the resource has
  no ``Name``; a default is not recorded.  A dotted ``Name`` (``$$(a.b)``, ``$$(a.b:default)``) is
  never looked up: the schedd refuses it whatever the default, so the job is held, with the name
  before the ``:`` in the reason.  ``$$(DOLLARDOLLAR)`` is a
  literal ``$$``.  ``Cmd`` ending in ``$$OPSYS.$$ARCH`` (the spelling before parentheses) is read
  as ``$$(OPSYS).$$(ARCH)``.
* ``$$([expression])`` is replaced by ``string(expression)`` evaluated with the job as MY and the
  resource as TARGET; a result that is not a string (undefined, error) cannot be expanded.
* Each job attribute that changed is recorded as ``MATCH_EXP_<Attr>`` with its expanded expression
  (HTCondor's cache of expansions), e.g. ``MATCH_EXP_GlobusScheduler``.
* A reference that cannot be expanded (no such attribute, no default) stops the expansion: the job
  must not start, and ``reason`` reads as HTCondor's hold reason,
  ``Cannot expand $$ expression (Name).`` (Name without its ``:default``).
* Without a resource ad (``resource=None``: the match is gone, e.g. after a restart) the recorded
  values are used: ``MATCH_EXP_<Attr>`` for a whole attribute, else ``MATCH_<Name>`` per reference.

The job ad given is never modified: ``Expansion.ad`` is an expanded copy that also carries the
recorded attributes, and ``Expansion.recorded`` lists them so a caller can persist them in its queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._classad import ClassAd, Expr, parse
from ._match import as_ad
from ._match_dollar import Reference, find_reference
from ._unparse import unparse
from ._values import ClassAdSyntaxError

__all__ = ["Expansion", "expand"]

Node = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Expansion:
    """The result of expanding one job ad against the resource it matched."""

    ad: ClassAd
    recorded: dict[str, Expr] = field(default_factory=dict)
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when the job may start (every ``$$()`` was expanded)."""
        return self.reason is None


class _CannotExpand(Exception):
    def __init__(self, body: str) -> None:
        super().__init__(f"Cannot expand $$ expression ({body}).")


def expand(job: ClassAd | str, resource: ClassAd | str | None = None) -> Expansion:
    """Expand every ``$$()`` of ``job`` against ``resource`` (see the module docstring); text is parsed."""
    job = as_ad(job)
    state = _State(job, None if resource is None else as_ad(resource))
    for name in _names_to_expand(job):
        try:
            state.expand_attribute(name)
        except _CannotExpand as exc:
            return Expansion(state.ad, state.recorded, str(exc))
    return Expansion(state.ad, state.recorded)


def _names_to_expand(job: ClassAd) -> list[str]:
    names = [name for name in job if not name.lower().startswith("match_")]
    names.sort(key=lambda name: name.lower() != "cmd")  # stable: Cmd first, the rest in ad order
    return names


class _State:
    """One expansion: the ads, the expanded copy and what has been recorded so far."""

    __slots__ = ("ad", "job", "recorded", "resource")

    def __init__(self, job: ClassAd, resource: ClassAd | None) -> None:
        self.job, self.resource = job, resource
        self.ad = job.copy()
        self.recorded: dict[str, Expr] = {}

    def record(self, name: str, expr: Expr) -> None:
        self.recorded[name] = expr
        self.ad[name] = expr

    def expand_attribute(self, name: str) -> None:
        cached = self.job.get_expr(f"MATCH_EXP_{name}")
        if self.resource is None and cached is not None:
            self.ad[name] = cached
            return
        node = self.job.lookup(name).node
        if name.lower() == "cmd":
            node = _old_cmd_form(node)
        if not _mentions_dollar_dollar(node):
            return
        expanded = Expr(self.rewrite(node))
        self.ad[name] = expanded
        self.record(f"MATCH_EXP_{name}", expanded)

    def rewrite(self, node: Node) -> Node:
        # Recursion is bounded by the parser's nesting limit (MAX_DEPTH), and only runs on the
        # few attributes that contain "$$(".
        kind = node[0]
        if kind == "str":
            return ("str", self.substitute(node[1]))
        if kind in ("un", "bin"):
            return (kind, node[1], *(self.rewrite(child) for child in node[2:]))
        if kind in ("cond", "elvis", "paren", "sub"):
            return (kind, *(self.rewrite(child) for child in node[1:]))
        if kind == "sel":
            return ("sel", self.rewrite(node[1]), node[2])
        if kind == "call":
            return ("call", node[1], tuple(self.rewrite(arg) for arg in node[2]))
        if kind == "list":
            return ("list", tuple(self.rewrite(item) for item in node[1]))
        if kind == "ad":
            return ("ad", tuple((key, self.rewrite(value)) for key, value in node[1]))
        return node

    def substitute(self, text: str) -> str:
        pos = 0
        while (ref := find_reference(text, pos)) is not None:
            replacement = self.replacement(ref)
            text = text[:ref.start] + replacement + text[ref.end:]
            pos = ref.start + len(replacement)  # never rescan substituted text
        return text

    def replacement(self, ref: Reference) -> str:
        if ref.expression is not None:
            return self.evaluated(ref)
        assert ref.name is not None
        if "." in ref.name:  # the schedd's rule: a scope (``TARGET.x``) has no place in $$(); hold
            raise _CannotExpand(ref.name)
        if ref.name.lower() == "dollardollar":
            return "$$"
        expr = self.lookup(ref.name)
        if expr is not None:
            return _text_of(expr)
        if ref.default is None:
            raise _CannotExpand(ref.name)
        return ref.default

    def lookup(self, name: str) -> Expr | None:
        if self.resource is None:
            return self.job.get_expr(f"MATCH_{name}")
        expr = self.resource.get_expr(name)
        if expr is not None:
            self.record(f"MATCH_{name}", expr)
        return expr

    def evaluated(self, ref: Reference) -> str:
        try:
            expr = parse(f"string({ref.expression})")
        except ClassAdSyntaxError:
            raise _CannotExpand(ref.body) from None
        value = expr.evaluate_in(self.job, self.resource)
        if not isinstance(value, str):
            raise _CannotExpand(ref.body)
        return value


def _old_cmd_form(node: Node) -> Node:
    """``Cmd = "prog.$$OPSYS.$$ARCH"`` is the pre-parenthesis spelling; the schedd reads it as
    ``$$(OPSYS).$$(ARCH)``."""
    if node[0] == "str":
        at = node[1].upper().find("$$OPSYS.$$ARCH")
        if at >= 0 and len(node[1]) == at + len("$$OPSYS.$$ARCH"):
            return ("str", node[1][:at] + "$$(OPSYS).$$(ARCH)")
    return node


def _mentions_dollar_dollar(node: Node) -> bool:
    return "$$(" in unparse(node)


def _text_of(expr: Expr) -> str:
    """A string's characters, or any other expression's text (what the schedd splices in)."""
    return expr.const if isinstance(expr.const, str) else unparse(expr.node)
