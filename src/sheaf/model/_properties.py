"""Properties: Pegasus/sheaf configuration keys (``pegasus.*``, ``condor.*``, ``dagman.*``, ``sheaf.*``).

A ``Properties`` object is an immutable ``str -> str`` mapping built from layers, later layers
winning: ``./pegasus.properties`` if present, then ``--conf FILE``, then the environment's
``_PEGASUS__*`` variables, then ``-D key=value`` options
(the order of the command-line contract (``docs/command-line.md``)).  Keys are kept as written; lookups are
exact, as in
Pegasus.

Some keys are *profiles* in disguise (the lowest layer of profile precedence): ``condor.X``,
``dagman.X``, ``env.X``, ``globus.X`` and ``pegasus.X`` where ``X`` is a known Pegasus profile key
or alias (``pegasus.clusters.size``).  Everything else under ``pegasus.`` is a planner setting
(``pegasus.clusterer.preference``), and ``dagman.<category>.maxjobs`` is a category throttle, not a
profile -- ``profiles()`` leaves those out.  One planner setting is a profile under another name, as
Pegasus's clustering reads it: ``pegasus.clusterer.job.aggregator.arguments`` is the
``job.aggregator.arguments`` profile, below ``pegasus.job.aggregator.arguments`` when both are set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sheaf._fields import INT_MAX
from sheaf.errors import ValidationError
from sheaf.model._profiles import (
    PEGASUS_ALIASES,
    PEGASUS_KEYS,
    Profiles,
    canonical_key,
)

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
#: dagman profile keys that may be set from properties (``dagman.retry``, and ``dagman.post.path.T``);
#: other ``dagman.x.y`` keys are category settings.
_DAGMAN_PROFILE_KEYS = {"retry", "priority", "category", "pre", "pre.arguments", "post",
                        "post.arguments", "post.scope", "abort-dag-on", "maxjobs", "maxidle", "maxpre",
                        "maxpost"}

#: planner settings that are a pegasus profile under another name (module docstring) -> that profile
_PROFILE_SETTINGS = {"pegasus.clusterer.job.aggregator.arguments": "job.aggregator.arguments"}


#: where a property whose layer is not known came from, in an error's message
SOME_LAYER = "the properties (--conf, pegasus.properties or -D)"


class Properties(Mapping[str, str]):
    """An immutable layered mapping of property keys to string values; each key remembers the layer
    that set it (:meth:`origin`) and, set in a file, its line there (:meth:`origin_line`), which
    errors about its value name."""

    __slots__ = ("_data", "_lines", "_origins", "sources")

    def __init__(self, data: Mapping[str, str] | None = None, sources: tuple[str, ...] = (),
                 origins: Mapping[str, str] | None = None, lines: Mapping[str, int] | None = None) -> None:
        self._data: dict[str, str] = dict(data or {})
        self._origins: dict[str, str] = dict(origins or {})
        self._lines: dict[str, int] = dict(lines or {})
        self.sources = sources

    @classmethod
    def layered(cls, *layers: tuple[str, Mapping[str, str]],
                lines: Mapping[str, Mapping[str, int]] | None = None) -> Properties:
        """Build from ``(source name, mapping)`` layers, later layers winning; ``lines``: the line of
        each key in the layers that are files, by source name."""
        data: dict[str, str] = {}
        origins: dict[str, str] = {}
        for name, layer in layers:
            data.update(layer)
            origins.update(dict.fromkeys(layer, name))
        where = lines or {}
        found = {key: line for key, name in origins.items()
                 if (line := where.get(name, {}).get(key)) is not None}
        return cls(data, tuple(name for name, _ in layers), origins, found)

    def with_overrides(self, overrides: Mapping[str, str], source: str = "-D") -> Properties:
        return Properties({**self._data, **overrides}, (*self.sources, source),
                          {**self._origins, **dict.fromkeys(overrides, source)},
                          {key: line for key, line in self._lines.items() if key not in overrides})

    def origin(self, key: str) -> str:
        """The layer that set ``key``: a file's path, ``-D``, the environment (else :data:`SOME_LAYER`)."""
        return self._origins.get(key, SOME_LAYER)

    def origin_line(self, key: str) -> int | None:
        """The line of ``key`` in the file that set it; None when a file did not."""
        return self._lines.get(key)

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Properties({self._data!r})"

    def get_bool(self, key: str, default: bool = False) -> bool:
        raw = self._data.get(key)
        if raw is None or raw.strip() == "":
            return default
        text = raw.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValidationError(f"malformed property '{key}'", rule="must be true or false", value=raw,
                              path=self.origin(key), line=self.origin_line(key))

    def get_int(self, key: str, default: int | None = None, *, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        raw = self._data.get(key)
        if raw is None or raw.strip() == "":
            return default
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValidationError(f"malformed property '{key}'", rule="must be an integer",
                                  value=raw, path=self.origin(key), line=self.origin_line(key)) from None
        if minimum is not None and value < minimum:
            raise ValidationError(f"malformed property '{key}'", rule=f"must be >= {minimum}", value=raw,
                                  path=self.origin(key), line=self.origin_line(key))
        if maximum is not None and value > maximum:
            raise ValidationError(f"malformed property '{key}'", rule=f"must be <= {maximum}", value=raw,
                                  path=self.origin(key), line=self.origin_line(key))
        return value

    def get_str(self, key: str, default: str | None = None) -> str | None:
        raw = self._data.get(key)
        return default if raw is None else raw.strip()

    def profiles(self) -> Profiles:
        """The profile layer these properties define (see the module docstring)."""
        result: Profiles = {}
        for key, value in self._data.items():
            ns, _, rest = key.partition(".")
            if not rest:
                continue
            if ns in ("condor", "env", "globus"):
                canon, _ = canonical_key(ns, rest)
            elif ns == "dagman":
                if rest.lower() not in _DAGMAN_PROFILE_KEYS and not rest.lower().startswith("post.path."):
                    continue
                canon = rest.lower()
            elif ns == "pegasus":
                lowered = rest.lower()
                canon = lowered if lowered in PEGASUS_KEYS else PEGASUS_ALIASES.get(lowered, "")
                if not canon:
                    continue
            else:
                continue
            result.setdefault(ns, {})[canon] = value.strip()
        for key, canon in _PROFILE_SETTINGS.items():
            setting = self._data.get(key)
            if setting is not None and canon not in result.get("pegasus", {}):
                result.setdefault("pegasus", {})[canon] = setting.strip()
        return result

    def category_maxjobs(self) -> dict[str, int]:
        """``dagman.<category>.maxjobs`` throttles (e.g. the Pegasus manual's ``dagman.stage-in.maxjobs
        4``)."""
        found: dict[str, int] = {}
        for key in self._data:
            parts = key.split(".")
            if len(parts) >= 3 and parts[0] == "dagman" and parts[-1].lower() == "maxjobs":
                category = ".".join(parts[1:-1])
                found[category] = self.get_int(key, minimum=0, maximum=INT_MAX) or 0
        return found

