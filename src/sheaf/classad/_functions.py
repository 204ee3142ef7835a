"""The built-in function table: every ``_fn_*`` library merged.

The evaluator does not import this module (it sits below the functions): the evaluation entry points
give it this table through the ``Env``, and a call resolves its name there (an unknown function
evaluates to ``ERROR``, as in HTCondor; it is not a syntax error).
"""

from __future__ import annotations

__all__ = ["FUNCTIONS"]

from types import MappingProxyType
from typing import Final

from . import _fn_core, _fn_env, _fn_lists, _fn_refs, _fn_regex, _fn_strings, _fn_time

FUNCTIONS: Final = MappingProxyType({
    name: impl
    for library in (_fn_core.LIBRARY, _fn_env.LIBRARY, _fn_lists.LIBRARY, _fn_refs.LIBRARY, _fn_regex.LIBRARY,
                    _fn_strings.LIBRARY, _fn_time.LIBRARY)
    for name, impl in library.table.items()
})

