"""One shared, immutable, hashable empty mapping: the default of every optional mapping field.

A job without profiles, hooks or metadata points at ``EMPTY`` instead of owning an empty dict
(at 10^6 jobs that is three dicts a job saved).  It compares equal to ``{}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class _Empty(Mapping[str, Any]):
    __slots__ = ()

    def __getitem__(self, key: str) -> NoReturn:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


EMPTY: Mapping[str, Any] = _Empty()
