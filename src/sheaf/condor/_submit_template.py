"""Macro expansion of one submit description, done once and replayed for every node that shares it.

A plan's shared ``SUBMIT-DESCRIPTION`` is expanded once per node attempt, each time with other values
in the layers (the node's VARS, ``JOB``, ``RETRY``, the cluster id, ...).  Without function macros,
:class:`Macros` expansion is text substitution: each ``$(name[:default])`` is replaced by the expansion
of the value ``name`` has in the first layer that sets it (which layer that is depends only on which
keys the layers hold), the output is never scanned again, and a value without ``$`` expands to
itself.  So a key expanded once with a placeholder in place of each such value is a pattern
(a ``str.format`` string) into which every node's values are put, and gives the text
:class:`Macros` gives.

The shortcut is taken only where that argument holds; everything else goes to a real
:class:`Macros` built for the node:

- a layer value holding ``$`` is expanded in turn, so it is no placeholder: it is part of the
  template's key (DAGMan's own ``"$(DAG_PARENT_NAMES)"`` is the same for every node);
- a call whose expansion ran a function macro (``$INT``, ``$CHOICE``, ``$F``, ``$ENV``, ...: they read
  their argument's value, not just place it) or raised is not memoised;
- if/else descriptions are not expanded here at all (a condition tests a value): the caller keeps
  them on :class:`Macros`;
- a placeholder is ``\\x00`` and an index; a file or constant value holding ``\\x00`` has no template.

Templates are keyed by the identity of the file's value mapping (held, so the identity stays its own)
and the layers' shape; the cache is bounded.  A template is made when a shape is met the second
time: the first node of a shape is expanded afresh, so that a DAG whose nodes all differ in their
``$`` values (each its own shape) pays nothing for templates it would never reuse.
"""

from __future__ import annotations

__all__ = ["MacroSource", "memoised_macros", "template_of"]

from collections.abc import Callable, Mapping
from typing import Protocol

from sheaf.condor._submit_macros import Evaluate, Macros

_MARK = "\x00"
_LIMIT = 512  # templates kept (a DAG has one or a few per shared description)
Shape = tuple[object, ...]
#: a call's expansion: the text itself (the same for every node), or a filler of its placeholders
Pattern = str | Callable[..., str]


class MacroSource(Protocol):
    """What expanding a description reads from its macros."""

    def get(self, key: str, default: str = "") -> str: ...

    def expand(self, text: str) -> str: ...

    def get_all(self, calls: tuple[tuple[str, str], ...]) -> tuple[str, ...]: ...

    def constant(self, text: str) -> str | None: ...


class _Probe(Macros):
    """:class:`Macros` over placeholders that notes whether a function macro ran."""

    called = False

    def _call(self, function: str | None, inner: str, whole: str) -> str:
        if function is not None:
            self.called = True
        return super()._call(function, inner, whole)


class _Template:
    """The patterns learnt so far for one description and layer shape: a call's key -> its
    pattern, or None where the call must go to a real :class:`Macros`; and, per batch of calls
    (``get_all``), the texts that are the same for every node with the fillers of the others."""

    __slots__ = ("batches", "patterns", "probe")

    def __init__(self, probe: _Probe) -> None:
        self.probe = probe
        self.batches: dict[tuple[tuple[str, str], ...], _Batch | None] = {}
        self.patterns: dict[tuple[str, str], Pattern | None] = {}

    def learn(self, call: tuple[str, str], run: Callable[[], str]) -> Pattern | None:
        self.probe.called = False
        try:
            text = run()
        except ValueError:  # the real Macros raises it again, with the node's own values
            text = None
        pattern = None if text is None or self.probe.called else _pattern(text)
        self.patterns[call] = pattern
        return pattern

    def batch(self, calls: tuple[tuple[str, str], ...]) -> _Batch | None:
        """The batch of ``calls`` once each is learnt; None when one goes to a real Macros."""
        texts: list[str] = []
        fillers: list[tuple[int, Callable[..., str]]] = []
        for index, call in enumerate(calls):
            pattern = self.patterns[call]
            if pattern is None:
                return None
            if isinstance(pattern, str):
                texts.append(pattern)
            else:
                texts.append("")
                fillers.append((index, pattern))
        return _Batch(tuple(texts), tuple(fillers))


class _Batch:
    """A ``get_all`` batch of one template: ``texts`` holds the answers that are the same for every
    node; ``fillers`` the (index, filler) of the others, filled with each node's values."""

    __slots__ = ("fillers", "texts")

    def __init__(self, texts: tuple[str, ...], fillers: tuple[tuple[int, Callable[..., str]], ...]) -> None:
        self.texts = texts
        self.fillers = fillers

    def fill(self, values: list[str]) -> tuple[str, ...]:
        if not self.fillers:
            return self.texts
        out = list(self.texts)
        for index, filler in self.fillers:
            out[index] = filler(*values)
        return tuple(out)


def _pattern(text: str) -> Pattern:
    """``text`` as a pattern: the text itself when it has no placeholder, else a format string
    (literal braces doubled) and its ``format`` method."""
    parts = text.split(_MARK)
    if len(parts) == 1:
        return text
    out = []
    for i, part in enumerate(parts):
        out.append("{" + part + "}" if i % 2 else part.replace("{", "{{").replace("}", "}}"))
    return "".join(out).format


class _Replay:
    """One node's macros: patterns filled with its values, a real :class:`Macros` for the rest."""

    __slots__ = ("_build", "_real", "_template", "_values")

    def __init__(self, template: _Template, values: list[str], build: Callable[[], Macros]) -> None:
        self._template = template
        self._values = values
        self._build = build
        self._real: Macros | None = None

    def _macros(self) -> Macros:
        if self._real is None:
            self._real = self._build()
        return self._real

    def get(self, key: str, default: str = "") -> str:
        call = (key, default)
        pattern = self._template.patterns.get(call, _UNLEARNT)
        if pattern is _UNLEARNT:
            pattern = self._template.learn(call, lambda: self._template.probe.get(key, default))
        if pattern is None:
            return self._macros().get(key, default)
        return pattern if isinstance(pattern, str) else pattern(*self._values)

    def get_all(self, calls: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
        """``get`` of each call: from the template's batch of these calls once the first node of the
        template has learnt them (only the calls with placeholders are filled per node)."""
        batches = self._template.batches
        if calls not in batches:
            out = tuple(self.get(key, default) for key, default in calls)
            batches[calls] = self._template.batch(calls)
            return out
        batch = batches[calls]
        if batch is None:
            return tuple(self.get(key, default) for key, default in calls)
        return batch.fill(self._values)

    def expand(self, text: str) -> str:
        if "$" not in text:
            return text
        pattern = self._expansion(text)
        if pattern is None:
            return self._macros().expand(text)
        return pattern if isinstance(pattern, str) else pattern(*self._values)

    def constant(self, text: str) -> str | None:
        """``text`` expanded when the expansion is the same for every node of the template (no
        placeholder in its pattern), else None."""
        if "$" not in text:
            return text
        pattern = self._expansion(text)
        return pattern if isinstance(pattern, str) else None

    def _expansion(self, text: str) -> Pattern | None:
        call = ("$", text)
        pattern = self._template.patterns.get(call, _UNLEARNT)
        if pattern is _UNLEARNT:
            pattern = self._template.learn(call, lambda: self._template.probe.expand(text))
        return pattern


def template_of(macros: MacroSource) -> object | None:
    """The template ``macros`` replays (what a cache of work alike for all its nodes is keyed on),
    or None for a :class:`Macros` of its own."""
    return macros._template if isinstance(macros, _Replay) else None


_ONCE = "once"  # a shape met once: no template yet
_UNLEARNT: Pattern = "\x00unlearnt"  # a call the template has not met (no text holds NUL)
#: shape -> (the file mapping it was made for, its template, None where there is none, or _ONCE)
_TEMPLATES: dict[Shape, tuple[Mapping[str, tuple[str, int]], _Template | str | None]] = {}


def _shape(layer: Mapping[str, str], values: list[str]) -> tuple[tuple[str, str | None], ...]:
    """The layer's keys, with its ``$`` values (constants of the template); the other values are
    placeholders, appended to ``values``."""
    out: list[tuple[str, str | None]] = []
    for key, value in layer.items():
        if "$" in value:
            out.append((key, value))
        else:
            out.append((key, None))
            values.append(value)
    return tuple(out)


def _placeholders(layer: tuple[tuple[str, str | None], ...], start: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in layer:
        if value is None:
            out[key] = f"{_MARK}{start}{_MARK}"
            start += 1
        else:
            out[key] = value
    return out


def _new_template(path: str, file: Mapping[str, tuple[str, int]],
                  layers: tuple[tuple[tuple[str, str | None], ...], ...]) -> _Template | None:
    constants = [v for layer in layers for _, v in layer if v is not None]
    if any(_MARK in text for text in [*constants, *(v for v, _ in file.values())]):
        return None
    appended, prepended, predefined = layers
    start = sum(v is None for _, v in appended)
    middle = start + sum(v is None for _, v in prepended)
    probe = _Probe(path, file, appended=_placeholders(appended, 0), prepended=_placeholders(prepended, start),
                   predefined=_placeholders(predefined, middle))
    return _Template(probe)


def memoised_macros(path: str, file: Mapping[str, tuple[str, int]], *, appended: Mapping[str, str],
                    prepended: Mapping[str, str], predefined: Mapping[str, str],
                    evaluate: Evaluate | None = None) -> MacroSource:
    """Macros for one expansion of a description without if/else: the same answers as
    ``Macros(path, file, appended=..., prepended=..., predefined=..., evaluate=...)``, replayed
    from the description's template where the module docstring says they may be."""
    values: list[str] = []
    layers = (_shape(appended, values), _shape(prepended, values), _shape(predefined, values))
    key: Shape = (id(file), path, layers)
    entry = _TEMPLATES.get(key)
    if entry is None or entry[0] is not file:
        if len(_TEMPLATES) >= _LIMIT:
            _TEMPLATES.clear()
        _TEMPLATES[key] = (file, _ONCE)
        template: _Template | str | None = None
    else:
        template = entry[1]
        if template is _ONCE:
            template = _new_template(path, file, layers)
            _TEMPLATES[key] = (file, template)

    def build() -> Macros:
        return Macros(path, file, appended=appended, prepended=prepended, predefined=predefined,
                      evaluate=evaluate)
    if not isinstance(template, _Template):
        return build()
    return _Replay(template, values, build)
