"""How a library of built-in functions is declared.

A built-in is ``impl(env, scope, args) -> value`` where ``args`` are the compiled argument closures,
so that a function decides what to evaluate (``ifThenElse`` evaluates one branch, ``unparse`` none).
Most built-ins want their arguments' values: ``strict`` declares ``impl(values) -> value``.  Names
are case-insensitive.

Each ``_fn_*`` module fills its own ``Library``; ``_functions`` merges them into the one table the
evaluation entry points hand to the evaluator.  Nothing is registered into another module's state.
"""

from __future__ import annotations

__all__ = ["Builtin", "Library"]

from collections.abc import Callable
from typing import Any

Value = Any
Fn = Callable[[Any, Any], Value]
Builtin = Callable[[Any, Any, tuple[Fn, ...]], Value]
StrictImpl = Callable[[list[Value]], Value]


class Library:
    """A table of built-ins by lower-cased name, filled with the two decorators."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[str, Builtin] = {}

    def builtin(self, *names: str) -> Callable[[Builtin], Builtin]:
        """Declare a built-in that receives its arguments unevaluated."""
        def register(impl: Builtin) -> Builtin:
            for name in names:
                self.table[name.lower()] = impl
            return impl
        return register

    def strict(self, *names: str) -> Callable[[StrictImpl], StrictImpl]:
        """Declare a built-in that receives its arguments' values."""
        def register(impl: StrictImpl) -> StrictImpl:
            def call(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
                return impl([arg(env, scope) for arg in args])
            call.__name__ = impl.__name__
            for name in names:
                self.table[name.lower()] = call
            return impl
        return register
