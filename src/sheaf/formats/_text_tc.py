"""Pegasus's text transformation catalogs: the multi-line ``tr``/``cont`` format and the 4.x one-liners.

Multi-line format (what the Pegasus manual show; read and written)::

    tr ns::name:version {
        profile env "FOO" "bar"              # transformation-level profile
        site siteX {
            profile pegasus "clusters.size" "3"
            pfn "/shared/PEGASUS/bin/jobB"
            arch "x86"  os "LINUX"  osrelease "..."  osversion "..."
            type "INSTALLED"                 # or STAGEABLE
            container "centos"
        }
    }
    cont centos {
        type "docker"  image "docker:///centos:7"  image_site "local"  mount "/a:/b"
        profile env "X" "y"
    }

Values may be quoted (``"..."`` with backslash escapes) or bare words (``profile pegasus nodes 1``).
One-line format of Pegasus 4.x (its job clustering documentation; read only), one entry per line,
whitespace-separated columns::

    #site  transformation    pfn                              type       sysinfo         profiles
    siteX  pegasus::seqexec  /usr/pegasus/bin/pegasus-cluster INSTALLED  INTEL32::LINUX  NULL

where sysinfo is ``ARCH::OS[:OSVERSION[:GLIBC]]`` (``INTEL32`` = x86, ``INTEL64``/``AMD64`` = x86_64)
and profiles is ``NULL`` or ``ns::key="value"`` items separated by ``;``.

The format is detected from the first significant token: ``tr``/``cont`` followed by a name means
the multi-line format.  Errors are ``FormatError``s with line and column of the offending token.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sheaf.errors import FormatError, ValidationError
from sheaf.formats._common import read_text, refuse_nul
from sheaf.model import (
    Container,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    normalize_profiles,
    split_fqn,
)

_ARCH = {"intel32": "x86", "intel64": "x86_64", "amd64": "x86_64", "x86": "x86", "x86_64": "x86_64",
         "ppc": "ppc", "ppc_64": "ppc_64", "ppc64le": "ppc64le", "ia64": "ia64", "sparcv7": "sparcv7",
         "sparcv9": "sparcv9", "aarch64": "aarch64"}
_OS = {"linux": "linux", "sunos": "sunos", "aix": "aix", "macosx": "macosx", "windows": "windows"}
_SITE_KEYS = {"pfn", "arch", "os", "osrelease", "osversion", "glibc", "type", "container"}
_CONT_KEYS = {"type", "image", "image_site", "imagesite", "mount", "checksum"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "word" | "string" | "{" | "}" | "eol"
    text: str
    line: int
    column: int


_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}]|[^\s{}"#]+|#[^\n]*|\n|"')


def _tokens(text: str, path: str) -> Iterator[_Token]:
    line, line_start = 1, 0
    for match in _TOKEN.finditer(text):
        raw = match.group()
        column = match.start() - line_start + 1
        if raw == "\n":
            yield _Token("eol", raw, line, column)
            line, line_start = line + 1, match.end()
        elif raw.startswith("#"):
            continue
        elif raw == '"':
            raise FormatError("unterminated string", rule="strings close on the same line", value=raw,
                              path=path, line=line, column=column)
        elif raw.startswith('"'):
            yield _Token("string", re.sub(r"\\(.)", r"\1", raw[1:-1]), line, column)
        elif raw in "{}":
            yield _Token(raw, raw, line, column)
        else:
            yield _Token("word", raw, line, column)


class _Parser:
    """Recursive-descent over the tokens: one method per grammar rule (no recursion depth: the
    grammar nests at most two levels).  Tokens are read one ahead as the parser goes, never listed
    first: an error stops the reading at the offending token, so a huge malformed file is refused
    without being tokenized whole."""

    def __init__(self, text: str, path: str, warnings: list[str] | None) -> None:
        self.path = path
        self.warnings = warnings
        self._tokens = (t for t in _tokens(text, path) if t.kind != "eol")
        self.ahead: _Token | None = next(self._tokens, None)
        self._last: _Token | None = None

    def error(self, message: str, rule: str, token: _Token | None = None) -> FormatError:
        token = token or self.ahead
        if token is None:
            last = self._last or _Token("eol", "", 1, 1)
            return FormatError(message, rule=rule, value="end of file", path=self.path, line=last.line,
                               column=last.column)
        return FormatError(message, rule=rule, value=token.text, path=self.path, line=token.line,
                           column=token.column)

    def next(self, what: str) -> _Token:
        token = self.ahead
        if token is None:
            raise self.error(f"unexpected end of file, expected {what}", f"expected {what}")
        self._last = token
        self.ahead = next(self._tokens, None)
        return token

    def value(self, what: str) -> str:
        token = self.next(what)
        if token.kind not in ("word", "string"):
            raise self.error(f"expected {what}", f"a {what} is a word or a quoted string", token)
        return token.text

    def expect(self, kind: str) -> None:
        token = self.next(f"'{kind}'")
        if token.kind != kind:
            raise self.error(f"expected '{kind}'", "blocks open with '{' and close with '}'", token)

    def catalog(self) -> TransformationCatalog:
        tc = TransformationCatalog()
        while self.ahead is not None:
            token = self.next("'tr' or 'cont'")
            if token.kind == "word" and token.text == "tr":
                transformation = self.transformation(token)
                if transformation.key in tc.transformations:
                    raise self.error("duplicate transformation", "transformations are declared once", token)
                tc.add(transformation)
            elif token.kind == "word" and token.text == "cont":
                container = self.container()
                tc.containers[container.name] = container
            else:
                raise self.error("expected 'tr' or 'cont'", "the catalog is a list of tr/cont blocks", token)
        return tc

    def transformation(self, start: _Token) -> Transformation:
        namespace, name, version = split_fqn(self.value("transformation name"))
        self.expect("{")
        profiles: dict[str, dict[str, object]] = {}
        sites: list[TransformationSite] = []
        while True:
            token = self.next("'profile', 'site' or '}'")
            if token.kind == "}":
                break
            if token.text == "profile":
                self.profile(profiles)
            elif token.text == "site":
                sites.append(self.site())
            else:
                raise self.error("unexpected entry in a tr block", "a tr block holds profiles and sites",
                                 token)
        return Transformation(name=name, namespace=namespace, version=version, sites=tuple(sites),
                              profiles=self.normalized(profiles, start))

    def site(self) -> TransformationSite:
        name_token = self.ahead
        name = self.value("site name")
        self.expect("{")
        fields: dict[str, str] = {}
        tokens: dict[str, _Token | None] = {}  # where each field's value is, for an error about it
        profiles: dict[str, dict[str, object]] = {}
        while True:
            token = self.next("a site entry or '}'")
            if token.kind == "}":
                break
            key = token.text.lower()
            if key == "profile":
                self.profile(profiles)
            elif key in _SITE_KEYS:
                tokens[key] = self.ahead
                fields[key] = self.value(key)
            else:
                raise self.error("unknown site entry", "site entries are " + ", ".join(sorted(_SITE_KEYS)),
                                 token)
        if "pfn" not in fields:
            raise self.error(f"site '{name}' has no pfn", "every site entry has a pfn", name_token)
        kind = fields.get("type", "INSTALLED").lower()
        if kind not in ("installed", "stageable"):
            raise self.error("bad transformation type", "type is INSTALLED or STAGEABLE", tokens["type"])
        return TransformationSite(
            name=name, pfn=fields["pfn"], type=kind,  # type: ignore[arg-type]
            arch=_ARCH.get(fields.get("arch", "").lower(), fields.get("arch")) if "arch" in fields else None,
            os_type=_OS.get(fields.get("os", "").lower(), fields.get("os")) if "os" in fields else None,
            os_release=fields.get("osrelease"), os_version=fields.get("osversion"),
            container=fields.get("container"), profiles=self.normalized(profiles, name_token))

    def container(self) -> Container:
        name = self.value("container name")
        self.expect("{")
        fields: dict[str, str] = {}
        mounts: list[str] = []
        profiles: dict[str, dict[str, object]] = {}
        while True:
            token = self.next("a container entry or '}'")
            if token.kind == "}":
                break
            key = token.text.lower()
            if key == "profile":
                self.profile(profiles)
            elif key == "mount":
                mounts.append(self.value("mount"))
            elif key in _CONT_KEYS:
                fields[key] = self.value(key)
            else:
                raise self.error("unknown container entry", "container entries are "
                                 + ", ".join(sorted(_CONT_KEYS | {"profile"})), token)
        return Container(name=name, type=fields.get("type", "docker").lower(), image=fields.get("image", ""),
                         image_site=fields.get("image_site", fields.get("imagesite")), mounts=tuple(mounts),
                         profiles=self.normalized(profiles, None))

    def profile(self, into: dict[str, dict[str, object]]) -> None:
        token = self.next("profile namespace")
        if token.kind not in ("word", "string"):
            raise self.error("expected profile namespace", "a profile namespace is a word or a quoted string",
                             token)
        namespace = token.text
        try:  # an unknown namespace: Pegasus's text parser refuses it too, at its line
            normalize_profiles({namespace: {}})
        except ValidationError as exc:
            raise self.error(exc.message, exc.rule or "profiles", token) from None
        key = self.value("profile key")
        into.setdefault(namespace, {})[key] = self.value("profile value")

    def normalized(self, raw: dict[str, dict[str, object]],
                   where: _Token | None) -> dict[str, dict[str, str]]:
        profiles, warnings = normalize_profiles(raw)
        if self.warnings is not None:
            prefix = f"{self.path}:{where.line}: " if where else f"{self.path}: "
            self.warnings.extend(prefix + w for w in warnings)
        return profiles


def _one_line_catalog(text: str, path: str, warnings: list[str] | None) -> TransformationCatalog:
    entries: dict[tuple[str | None, str, str | None], list[TransformationSite]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.split("#", 1)[0].strip()
        if not stripped:
            continue
        cols = stripped.split()
        if len(cols) < 4:
            raise FormatError("a one-line catalog entry needs at least site, transformation, pfn and type",
                              rule="site transformation pfn type [sysinfo [profiles]]", value=stripped,
                              path=path, line=number, column=1)
        site, fqn, pfn, kind = cols[:4]
        sysinfo = cols[4] if len(cols) > 4 else None
        profile_text = " ".join(cols[5:]) if len(cols) > 5 else "NULL"
        arch, os_type = _sysinfo(sysinfo, path, number)
        if kind.lower() not in ("installed", "stageable"):
            raise FormatError("bad transformation type", rule="type is INSTALLED or STAGEABLE", value=kind,
                              path=path, line=number, column=line.find(kind) + 1)
        raw_profiles = _one_line_profiles(profile_text, path, number)
        try:
            profiles, found = normalize_profiles(raw_profiles)
        except ValidationError as exc:
            raise FormatError(exc.message, rule=exc.rule or "profiles", value=exc.value, path=path,
                              line=number) from None
        if warnings is not None:
            warnings.extend(f"{path}:{number}: {w}" for w in found)
        entries.setdefault(split_fqn(fqn), []).append(TransformationSite(
            name=site, pfn=pfn, type=kind.lower(), arch=arch, os_type=os_type,  # type: ignore[arg-type]
            profiles=profiles))
    tc = TransformationCatalog()
    for (namespace, name, version), sites in entries.items():
        tc.add(Transformation(name=name, namespace=namespace, version=version, sites=tuple(sites)))
    return tc


def _sysinfo(text: str | None, path: str, line: int) -> tuple[str | None, str | None]:
    if text is None or text.upper() == "NULL":
        return None, None
    arch, sep, rest = text.partition("::")
    if not sep:
        raise FormatError("bad sysinfo", rule="sysinfo is ARCH::OS[:VERSION[:GLIBC]]", value=text, path=path,
                          line=line)
    os_name = rest.split(":", 1)[0]
    return _ARCH.get(arch.lower(), arch.lower()), _OS.get(os_name.lower(), os_name.lower())


_ONE_LINE_PROFILE = re.compile(r'\s*([A-Za-z]+)::([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)\s*(?:;|$)')


def _one_line_profiles(text: str, path: str, line: int) -> dict[str, dict[str, object]]:
    if text.strip().upper() == "NULL":
        return {}
    result: dict[str, dict[str, object]] = {}
    pos, end = 0, len(text.rstrip())
    while pos < end:
        match = _ONE_LINE_PROFILE.match(text, pos)
        if not match or match.end() == pos:
            raise FormatError("bad profile list",
                              rule='profiles are NULL or ns::key="value" items joined by ;',
                              value=text[pos:], path=path, line=line)
        value = match.group(3).strip()
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        result.setdefault(match.group(1).lower(), {})[match.group(2)] = value
        pos = match.end()
    return result


def loads_text_tc(text: str, *, source: str = "<text tc>",
                  warnings: list[str] | None = None) -> TransformationCatalog:
    """Parse either text format (detected as in the module docstring)."""
    refuse_nul(text, source)
    first = next((t for t in _tokens(text, source) if t.kind != "eol"), None)
    if first is None:
        return TransformationCatalog()
    if first.kind == "word" and first.text in ("tr", "cont"):
        return _Parser(text, source, warnings).catalog()
    return _one_line_catalog(text, source, warnings)


def read_text_tc(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> TransformationCatalog:
    return loads_text_tc(read_text(path), source=str(path), warnings=warnings)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dumps_text_tc(tc: TransformationCatalog) -> str:
    """The multi-line format; ``loads_text_tc(dumps_text_tc(tc)) == tc`` for what the format holds
    (it has no requires, hooks, metadata or checksums)."""
    out: list[str] = []
    for t in tc:
        out.append(f"tr {t.fqn} {{")
        out.extend(_profile_lines(t.profiles, "    "))
        for s in t.sites:
            out.append(f"    site {s.name} {{")
            out.extend(_profile_lines(s.profiles, "        "))
            out.append(f"        pfn {_quote(s.pfn)}")
            for key, value in (("arch", s.arch), ("os", s.os_type), ("osrelease", s.os_release),
                               ("osversion", s.os_version), ("container", s.container)):
                if value is not None:
                    out.append(f"        {key} {_quote(value)}")
            out.append(f"        type {_quote(s.type.upper())}")
            out.append("    }")
        out.append("}")
        out.append("")
    for c in tc.containers.values():
        out.append(f"cont {c.name} {{")
        out.append(f"    type {_quote(c.type)}")
        out.append(f"    image {_quote(c.image)}")
        if c.image_site is not None:
            out.append(f"    image_site {_quote(c.image_site)}")
        out.extend(f"    mount {_quote(m)}" for m in c.mounts)
        out.extend(_profile_lines(c.profiles, "    "))
        out.append("}")
        out.append("")
    return "\n".join(out)


def _profile_lines(profiles: object, indent: str) -> list[str]:
    lines = []
    for ns, entries in getattr(profiles, "items", list)():
        for key, value in entries.items():
            lines.append(f"{indent}profile {ns} {_quote(key)} {_quote(value)}")
    return lines


def write_text_tc(tc: TransformationCatalog, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(dumps_text_tc(tc))
