"""The built-in function table and how calls compile.

A built-in is ``impl(env, scope, args) -> value`` where ``args`` are the compiled argument closures,
so that a function decides what to evaluate (``ifThenElse`` evaluates one branch, ``unparse`` none).
Most built-ins want their arguments' values: ``@strict`` registers ``impl(values) -> value``.  Names
are case-insensitive.  An unknown function evaluates to ``ERROR`` (as in HTCondor), it is not a
syntax error.  The library modules (``_fn_*``) register themselves on import.
"""

from __future__ import annotations

__all__ = ["FUNCTIONS", "builtin", "compile_call", "strict"]

from collections.abc import Callable
from typing import Any

from ._values import ERROR

Value = Any
Fn = Callable[[Any, Any], Value]
Builtin = Callable[[Any, Any, tuple[Fn, ...]], Value]
FUNCTIONS: dict[str, Builtin] = {}


def builtin(*names: str) -> Callable[[Builtin], Builtin]:
    """Register a built-in that receives its arguments unevaluated."""
    def register(impl: Builtin) -> Builtin:
        for name in names:
            FUNCTIONS[name.lower()] = impl
        return impl
    return register


def strict(*names: str) -> Callable[[Callable[[list[Value]], Value]], Callable[[list[Value]], Value]]:
    """Register a built-in that receives its arguments' values."""
    def register(impl: Callable[[list[Value]], Value]) -> Callable[[list[Value]], Value]:
        def call(env: Any, scope: Any, args: tuple[Fn, ...]) -> Value:
            return impl([arg(env, scope) for arg in args])
        call.__name__ = impl.__name__
        for name in names:
            FUNCTIONS[name.lower()] = call
        return impl
    return register


def _error(env: Any, scope: Any) -> Value:
    return ERROR


def compile_call(name: str, args: tuple[Fn, ...], node: tuple[Any, ...]) -> Fn:
    _load()
    impl = FUNCTIONS.get(name.lower())
    if impl is None:
        return _error
    if getattr(impl, "wants_node", False):
        return lambda env, scope: impl(env, scope, (node,))  # type: ignore[arg-type]
    return lambda env, scope: impl(env, scope, args)


_loaded = False


def _load() -> None:
    # a flag set before the imports, not functools.cache: the library modules import this one, and a
    # call made while they load must not start loading them again
    global _loaded  # noqa: PLW0603
    if not _loaded:
        _loaded = True
        from . import _fn_core, _fn_env, _fn_lists, _fn_regex, _fn_strings, _fn_time  # noqa: F401
