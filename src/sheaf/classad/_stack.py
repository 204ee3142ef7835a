"""Room on the stack for deeply nested ClassAd text, only while it is needed.

The parser, the evaluator and the unparser recurse once (or a few frames) per nesting level, and
text may nest up to ``MAX_DEPTH`` levels: more than Python's default recursion limit allows.  sheaf
leaves the process-wide limit alone: an operation first runs under whatever limit the process has,
and only one that meets ``RecursionError`` runs again, once, with the limit raised to
``DEEP_LIMIT`` for its duration (:func:`deeper`).  Shallow text -- nearly all of it -- pays nothing:
a ``try`` costs nothing until it catches.

The limit is one for the whole interpreter, so the raises of several threads are counted under a
lock: the first raises it, the last puts back what the process had.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, ParamSpec, TypeVar

__all__ = ["DEEP_LIMIT", "deep_stack", "deeper"]

#: A nesting level costs up to six Python frames in the parser; room for 1000 levels of them.
DEEP_LIMIT: Final = 10_000

_lock = threading.Lock()
_held = [0]     # the operations running with the raised limit now
_saved = [0]    # the process's limit before the first of them raised it

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def deep_stack() -> Iterator[None]:
    """The recursion limit at least ``DEEP_LIMIT`` inside; what it was, once no thread needs it raised."""
    with _lock:
        if _held[0] == 0:
            _saved[0] = sys.getrecursionlimit()
            if _saved[0] < DEEP_LIMIT:
                sys.setrecursionlimit(DEEP_LIMIT)
        _held[0] += 1
    try:
        yield
    finally:
        with _lock:
            _held[0] -= 1
            if _held[0] == 0 and _saved[0] < DEEP_LIMIT and sys.getrecursionlimit() == DEEP_LIMIT:
                sys.setrecursionlimit(_saved[0])


def deeper(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, run again under :func:`deep_stack` when it meets ``RecursionError`` (``fn`` must be
    free of side effects up to that point: it starts over)."""
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            with deep_stack():
                return fn(*args, **kwargs)
    return wrapper
