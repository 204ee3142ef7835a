"""``value_class``: the engine's per-node value types (events, instructions, launches) are frozen
dataclasses to the type checker and to every reader, built without the frozen ``__setattr__`` at run
time.

A frozen dataclass assigns each field through ``object.__setattr__`` in its ``__init__``, several
times dearer than a plain slotted one, and a run makes several of these objects per node (its
submission, changes, exit, start, launch).  The class keeps everything else a frozen
dataclass has: ``__eq__``, the same ``__hash__`` (of its fields), ``__match_args__``, ``replace``,
pickling.  Assignment to a field is refused by mypy (``dataclass_transform(frozen_default=True)``),
not at run time.
"""

from __future__ import annotations

__all__ = ["value_class"]

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Any:
        return lambda decorator: decorator


@dataclass_transform(frozen_default=True, eq_default=True)
def value_class(cls: type[_T]) -> type[_T]:
    return dataclass(slots=True, unsafe_hash=True)(cls)
