"""Environment and argument built-ins: ``envV1ToV2``, ``mergeEnvironment``, ``listToArgs``,
``argsToList`` -- HTCondor's two environment syntaxes (V1: ``A=1;B=2``; V2: ``"A=1 B='x y'"``) and
its argument quoting (V2: blanks separate, single quotes group, two quotes in a quoted part are one
quote).  Variables come out sorted by name, as HTCondor's environment object keeps them;
``mergeEnvironment`` reads each argument in V2 syntax (later arguments win), skipping UNDEFINED.

``split_v2_args`` is sheaf's one reader of the V2 syntax: as HTCondor's ``ArgList`` serves both its
ClassAd functions and condor_submit, the engine reads a submit description's new-syntax ``arguments``
and ``environment`` through it (``sheaf.classad`` is a leaf, so the reader lives here and the submit
language in ``sheaf.formats`` holds only the writer)."""

from __future__ import annotations

from typing import Any

from ._builtins import Library
from ._values import ERROR, UNDEFINED

Value = Any
LIBRARY = Library()
strict = LIBRARY.strict


def _v1_pairs(text: str) -> list[tuple[str, str]] | None:
    pairs = []
    for item in text.split(";"):
        if not item.strip():
            continue
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            return None
        pairs.append((name.strip(), value))
    return pairs


def split_v2_args(text: str) -> list[str] | None:
    """Words of V2 syntax: blanks separate, '...' quotes, '' inside quotes is one quote."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "'":
            in_word = True
            i += 1
            while True:
                if i >= len(text):
                    return None
                if text[i] == "'":
                    if i + 1 < len(text) and text[i + 1] == "'":
                        current.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                current.append(text[i])
                i += 1
            continue
        if char in " \t\n\r":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        else:
            current.append(char)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(current))
    return words


def quote_v2(word: str) -> str:
    """V2 quoting as HTCondor writes it: each run of blanks and quotes goes in its own '...' (a quote
    inside doubled), the rest stays bare: a b -> a' 'b."""
    if not word:
        return "''"
    out: list[str] = []
    run: list[str] = []
    for char in word:
        if char in " \t\n\r'":
            run.append("''" if char == "'" else char)
            continue
        if run:
            out.append("'" + "".join(run) + "'")
            run = []
        out.append(char)
    if run:
        out.append("'" + "".join(run) + "'")
    return "".join(out)


def _v2_pairs(text: str) -> list[tuple[str, str]] | None:
    words = split_v2_args(text)
    if words is None:
        return None
    pairs = []
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not name:
            return None
        pairs.append((name, value))
    return pairs


def _format_v2(pairs: list[tuple[str, str]]) -> str:
    merged = dict(pairs)  # a later definition of a name wins
    return " ".join(quote_v2(f"{name}={merged[name]}") for name in sorted(merged))


@strict("envV1ToV2")
def env_v1_to_v2(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    if args[0] is UNDEFINED:
        return UNDEFINED
    if type(args[0]) is not str:
        return ERROR
    pairs = _v1_pairs(args[0])
    return ERROR if pairs is None else _format_v2(pairs)


@strict("mergeEnvironment")
def merge_environment(args: list[Value]) -> Value:
    pairs: list[tuple[str, str]] = []
    for arg in args:
        if arg is UNDEFINED:
            continue
        if type(arg) is not str:
            return ERROR
        more = _v2_pairs(arg)
        if more is None:
            return ERROR
        pairs.extend(more)
    return _format_v2(pairs)


@strict("listToArgs")
def list_to_args(args: list[Value]) -> Value:
    if len(args) != 1:
        return ERROR
    if not isinstance(args[0], list) or any(type(item) is not str for item in args[0]):
        return ERROR
    return " ".join(quote_v2(item) for item in args[0])


@strict("argsToList")
def args_to_list(args: list[Value]) -> Value:
    if len(args) != 1 or type(args[0]) is not str:
        return ERROR
    words = split_v2_args(args[0])
    return ERROR if words is None else words
