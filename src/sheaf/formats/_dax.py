"""DAX 3.x XML (Pegasus 4.x's abstract workflow format) <-> the abstract workflow.

Read (``read_dax``):

- ``<adag name>``; ``<job id namespace name version node-label>`` with ``<argument>`` text in which
  ``<filename file="f"/>`` (3.x also ``name=``) references become ``FileRef`` arguments (text is split on
  white space; a reference glued to text, as in ``-i<filename .../>``, stays one string);
- ``<profile namespace key>value</profile>`` -> profiles (through the alias table);
- ``<uses file|name link register transfer optional size executable>``: ``link`` input/output/inout
  (inout is Pegasus 5's ``checkpoint``; ``none`` is skipped, as Pegasus's parser adds such a file to
  neither the job's inputs nor its outputs), ``transfer`` true/false/optional -> stageOut, ``register`` ->
  registerReplica (DAX 3 defaults: both true), ``executable="true"`` uses are transformation
  files and are skipped -- with a warning when they name another executable than the job's own, which
  Pegasus stages for the job (sheaf stages a transformation's requires, below);
- ``<stdin|stdout|stderr file|name>``; ``<metadata key>``;
- ``<invoke when>command</invoke>`` (in ``<adag>`` and in jobs) -> shell hooks, ``when`` translated
  to the 5.0 YAML's ``_on`` (on_error -> error, on_success -> success, at_end -> end);
- sub-workflows: ``<dax file>`` -> ``pegasusWorkflow``, ``<dag file>`` -> ``condorWorkflow``;
- ``<child ref><parent ref/></child>`` -> explicit dependencies;
- ``<dflow id>`` (DAX 3.6's Decaf data-flow job: its ``<job>``s run together by one Decaf program,
  whatever the clustering options): read as Pegasus's DAX parser reads it, one data-flow job of the
  jobs inside -- each ``<job>`` a job of the workflow with the pegasus profiles ``label`` (the dflow's
  id) and ``job.aggregator`` ``decaf``, so label clustering, which the planner applies to a workflow
  whose jobs ask for the decaf aggregator whatever ``--cluster`` says, makes them the one Decaf
  cluster; ``<link source target>`` and ``<child ref><parent ref/></child>`` inside it are the
  dependencies between its jobs;
- catalogs inline: ``<file name><pfn url site/></file>`` -> replicas, ``<executable namespace name
  version arch os installed><pfn url site/><profile/></executable>`` -> transformations;
- ``<transformation namespace name version>`` (a compound transformation, "an aggregation of
  executables"): its ``<uses namespace name version executable>`` are copied to every job of that
  transformation, as Pegasus's DAX parser copies them -- an executable (``executable`` defaults to
  true there, as DAX 3.6's schema says) becomes a ``requires`` of the transformation's inline
  entry (staged beside its executable, Pegasus 5's ``add_requirement``), a data file
  (``executable="false"``) an input of each job; one naming no ``<executable>`` of the workflow has
  no entry to carry its requires: warned about and skipped.

Write (``dumps_dax``): DAX 3.6 with the same elements, so ``read(write(x)) == x`` for what DAX can
express.  Errors: ``FormatError`` with the element's line.  Parsing (``_xml``): internal entities
are expanded, external ones refused, libxml2's nesting and amplification limits kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from lxml import etree

from sheaf.errors import FormatError
from sheaf.formats._common import read_bytes
from sheaf.formats._xml import parse_xml
from sheaf.model import (
    EMPTY,
    PFN,
    FileRef,
    Job,
    Replica,
    ReplicaCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Use,
    Workflow,
    normalize_profiles,
    split_fqn,
    transformation_fqn,
)

_NS = "http://pegasus.isi.edu/schema/DAX"
_LINKS = {"input": "input", "output": "output", "inout": "checkpoint", "checkpoint": "checkpoint"}
_TRUE = {"true", "1", "yes"}


# DAX 3's <invoke when> -> the 5.0 YAML's hook ``_on`` (Pegasus's own translation of the two)
_WHEN = {"never": "never", "start": "start", "on_error": "error", "on_success": "success", "at_end": "end",
         "all": "all"}


def _name(element: Any) -> str:
    return str(etree.QName(element).localname) if isinstance(element.tag, str) else ""


class _Reader:
    def __init__(self, path: str, warnings: list[str] | None) -> None:
        self.path = path
        self.warnings = warnings

    def fail(self, element: Any, message: str, rule: str, value: Any) -> FormatError:
        return FormatError(message, rule=rule, value=value, path=self.path, line=element.sourceline)

    def warn(self, element: Any, message: str) -> None:
        if self.warnings is not None:
            self.warnings.append(f"{self.path}:{element.sourceline}: {message}")

    def required(self, element: Any, *names: str) -> str:
        for attribute in names:
            value = element.get(attribute)
            if value is not None and value != "":
                return str(value)
        raise self.fail(element, f"<{_name(element)}> has no '{names[0]}'",
                        f"<{_name(element)}> requires the '{names[0]}' attribute", _name(element))

    def flag(self, element: Any, attribute: str, default: bool) -> bool:
        raw = element.get(attribute)
        if raw is None:
            return default
        text = raw.strip().lower()
        if text in _TRUE or text == "optional":
            return True
        if text in ("false", "0", "no"):
            return False
        raise self.fail(element, f"bad value of '{attribute}'", f"'{attribute}' is true or false", raw)

    def workflow(self, root: Any) -> Workflow:
        if _name(root) != "adag":
            raise self.fail(root, "not a DAX document", "the root element is <adag>", f"<{_name(root)}>")
        wf = Workflow(name=root.get("name", "workflow"), format_version=root.get("version", "3.6"))
        tc = TransformationCatalog()
        rc = ReplicaCatalog()
        metadata: dict[str, str] = {}
        invokes: list[dict[str, str]] = []
        compounds: list[Any] = []
        for element in root:
            kind = _name(element)
            if kind in ("job", "dax", "dag"):
                job = self.job(element, kind)
                if job.id in wf.jobs:
                    raise self.fail(element, "duplicate job id", "job ids are unique", job.id)
                wf.jobs[job.id] = job
            elif kind == "child":
                self.child(element, wf)
            elif kind == "file":
                rc.add(self.replica(element))
            elif kind == "executable":
                self.executable(element, tc)
            elif kind == "metadata":
                metadata[self.required(element, "key")] = (element.text or "").strip()
            elif kind == "invoke":
                invokes.append(self.invoke(element))
            elif kind == "dflow":
                self.dflow(element, wf)
            elif kind == "transformation":
                compounds.append(element)
            elif kind:
                self.warn(element, f"<{kind}> is not read by sheaf; skipped")
        for element in compounds:  # after every <executable> and <job>, wherever it stands
            self.compound(element, tc, wf)
        wf.metadata = metadata
        if invokes:
            wf.hooks = {"shell": invokes}
        wf.transformation_catalog = tc if len(tc) else None
        wf.replica_catalog = rc if len(rc) else None
        return wf

    def job(self, element: Any, kind: str) -> Job:
        job_id = self.required(element, "id")
        arguments: tuple[str | FileRef, ...] = ()
        uses: list[Use] = []
        raw_profiles: dict[str, dict[str, str]] = {}
        metadata: dict[str, str] = {}
        streams: dict[str, str] = {}
        invokes: list[dict[str, str]] = []
        executables: list[str] = []  # its <uses executable="true">
        for child in element:
            sub = _name(child)
            if sub == "argument":
                arguments = self.arguments(child)
            elif sub == "profile":
                namespace = raw_profiles.setdefault(self.required(child, "namespace"), {})
                namespace[self.required(child, "key")] = (child.text or "").strip()
            elif sub == "uses":
                if (child.get("link") or "").lower() == "none" and not self.flag(child, "executable", False):
                    continue  # legal in DAX 3; Pegasus's parser makes it neither an input nor an output
                use = self.use(child)
                if use is not None:
                    uses.append(use)
                else:
                    executables.append(transformation_fqn(child.get("namespace"),
                                                          self.required(child, "file", "name"),
                                                          child.get("version")))
            elif sub in ("stdin", "stdout", "stderr"):
                streams[sub] = self.required(child, "file", "name")
            elif sub == "metadata":
                metadata[self.required(child, "key")] = (child.text or "").strip()
            elif sub == "invoke":
                invokes.append(self.invoke(child))
            elif sub:
                self.warn(child, f"<{sub}> inside <{kind}> is not read by sheaf; skipped")
        profiles, found = normalize_profiles(raw_profiles)
        for message in found:
            self.warn(element, message)
        hooks = {"shell": invokes} if invokes else EMPTY
        if kind == "job":
            name = self.required(element, "name")
            own = transformation_fqn(element.get("namespace"), name, element.get("version"))
            others = [fqn for fqn in dict.fromkeys(executables) if fqn not in (own, name)]
            if others:
                self.warn(element, f"job {job_id}: the executables its <uses executable=\"true\"> name "
                                   f"({', '.join(others)}) are not staged: sheaf stages those a "
                                   "transformation requires (a <transformation> element, the catalog's "
                                   "requires)")
            return Job(job_id, name, element.get("namespace"), element.get("version"), "job", arguments,
                       tuple(uses), profiles, element.get("node-label"), None, streams.get("stdin"),
                       streams.get("stdout"), streams.get("stderr"), hooks=hooks, metadata=metadata)
        file = self.required(element, "file", "name")
        job_type = "pegasusWorkflow" if kind == "dax" else "condorWorkflow"
        return Job(job_id, file, None, None, job_type, arguments, tuple(uses), profiles,  # type: ignore[arg-type]
                   element.get("node-label"), file, hooks=hooks, metadata=metadata)

    def invoke(self, element: Any) -> dict[str, str]:
        """``<invoke when="at_end">command</invoke>``, as the 5.0 YAML's shell hook (``_on``)."""
        when = self.required(element, "when")
        if when not in _WHEN:
            raise self.fail(element, "unknown notification condition", f"when is one of {', '.join(_WHEN)}",
                            when)
        return {"_on": _WHEN[when], "cmd": (element.text or "").strip()}

    def arguments(self, element: Any) -> tuple[str | FileRef, ...]:
        parts: list[str | FileRef] = []
        glue = False  # the previous piece ended without white space
        pieces: list[tuple[str, Any]] = [("text", element.text or "")]
        for child in element:
            if _name(child) in ("filename", "file"):
                pieces.append(("file", FileRef(self.required(child, "file", "name"))))
            pieces.append(("text", child.tail or ""))
        for kind, piece in pieces:
            if kind == "file":
                if glue and parts:
                    parts[-1] = f"{parts[-1]}{piece.lfn}"
                else:
                    parts.append(piece)
                glue = True
                continue
            words = piece.split()
            if not words:
                glue = glue and piece == ""
                continue
            if glue and not piece[0].isspace() and parts:
                parts[-1] = f"{parts[-1]}{words[0]}"
                words = words[1:]
            parts.extend(words)
            glue = not piece[-1].isspace()
        return tuple(parts)

    def use(self, element: Any) -> Use | None:
        if self.flag(element, "executable", False):
            return None
        lfn = self.required(element, "file", "name")
        link = element.get("link", "input").lower()
        if link not in _LINKS:
            raise self.fail(element, "bad link", "link is none, input, output, inout or checkpoint", link)
        kind = _LINKS[link]
        size = element.get("size")
        if size is not None and not (size.isascii() and size.isdigit() and len(size) <= 18):
            raise self.fail(element, "bad size", "size is a number of bytes (at most 18 digits)", size)
        produced = kind != "input"
        return Use(lfn, kind,  # type: ignore[arg-type]
                   stage_out=produced and self.flag(element, "transfer", True),
                   register_replica=produced and self.flag(element, "register", True),
                   optional=self.flag(element, "optional", False),
                   size=int(size) if size else None)

    def dflow(self, element: Any, wf: Workflow) -> None:
        """A Decaf data-flow job (module docstring): its jobs, labelled as one Decaf cluster, and the
        dependencies among them."""
        flow = self.required(element, "id")
        for child in element:
            kind = _name(child)
            if kind == "job":
                job = self.job(child, kind)
                if job.id in wf.jobs:
                    raise self.fail(child, "duplicate job id", "job ids are unique", job.id)
                pegasus = {**(job.profiles.get("pegasus") or {}), "label": flow, "job.aggregator": "decaf"}
                job.profiles = {**job.profiles, "pegasus": pegasus}
                wf.jobs[job.id] = job
            elif kind == "link":
                wf.add_dependency(self.required(child, "source"), self.required(child, "target"))
            elif kind == "child":
                self.child(child, wf)
            elif kind:
                self.warn(child, f"<{kind}> inside <dflow> is not read by sheaf; skipped")

    def child(self, element: Any, wf: Workflow) -> None:
        child = self.required(element, "ref")
        for parent in element:
            if _name(parent) == "parent":
                wf.add_dependency(self.required(parent, "ref"), child)

    def replica(self, element: Any) -> Replica:
        lfn = self.required(element, "name")
        pfns = tuple(PFN(self.required(p, "url"), p.get("site")) for p in element if _name(p) == "pfn")
        return Replica(lfn, pfns)

    def compound(self, element: Any, tc: TransformationCatalog, wf: Workflow) -> None:
        """A ``<transformation>``: its executables required by its inline entry, its data files inputs
        of its jobs (module docstring)."""
        key = (element.get("namespace"), self.required(element, "name"), element.get("version"))
        requires: list[str] = []
        files: list[str] = []
        for child in element:
            if _name(child) != "uses":
                continue
            name = self.required(child, "file", "name")
            if self.flag(child, "executable", True):
                fqn = transformation_fqn(child.get("namespace"), name, child.get("version"))
                if fqn != transformation_fqn(*key) and fqn not in requires:
                    requires.append(fqn)
            else:
                files.append(name)
        entry = tc.transformations.get(key)
        if requires and entry is not None:
            tc.transformations[key] = replace(entry, requires=(*entry.requires, *requires))
        elif requires:
            self.warn(element, f"<transformation> {transformation_fqn(*key)} names no <executable> of the "
                               "workflow: the executables it uses are not staged with it; skipped")
        for job in wf.jobs.values():
            if files and (job.namespace, job.name, job.version) == key and job.type == "job":
                named = {use.lfn for use in job.uses}
                job.uses = (*job.uses, *(Use(lfn) for lfn in files if lfn not in named))

    def executable(self, element: Any, tc: TransformationCatalog) -> None:
        raw_profiles: dict[str, dict[str, str]] = {}
        for child in element:
            if _name(child) == "profile":
                namespace = raw_profiles.setdefault(self.required(child, "namespace"), {})
                namespace[self.required(child, "key")] = (child.text or "").strip()
        profiles, _ = normalize_profiles(raw_profiles)
        installed = self.flag(element, "installed", True)
        sites = tuple(
            TransformationSite(p.get("site", "local"), self.required(p, "url"),
                               "installed" if installed else "stageable",
                               arch=element.get("arch"), os_type=(element.get("os") or "").lower() or None)
            for p in element if _name(p) == "pfn")
        tc.add(Transformation(self.required(element, "name"), element.get("namespace"),
                              element.get("version"), sites=sites, profiles=profiles))


def loads_dax(data: bytes | str, *, source: str = "<dax>", warnings: list[str] | None = None) -> Workflow:
    raw = data.encode() if isinstance(data, str) else data
    return _Reader(source, warnings).workflow(parse_xml(raw, source, "a DAX"))


def read_dax(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> Workflow:
    return loads_dax(read_bytes(path), source=str(path), warnings=warnings)


def _sub(parent: Any, tag: str, attrib: Mapping[str, str | None] | None = None,
         text: str | None = None) -> Any:
    element = etree.SubElement(parent, f"{{{_NS}}}{tag}",
                               {k: v for k, v in (attrib or {}).items() if v is not None})
    if text is not None:
        element.text = text
    return element


def _profiles(parent: Any, profiles: Mapping[str, Mapping[str, str]]) -> None:
    for namespace, entries in profiles.items():
        for key, value in entries.items():
            _sub(parent, "profile", {"namespace": namespace, "key": key}, value)


def _invokes(parent: Any, hooks: Mapping[str, Any]) -> None:
    when = {on: w for w, on in _WHEN.items()}
    for hook in hooks.get("shell") or ():
        if isinstance(hook, Mapping) and hook.get("_on") in when:
            _sub(parent, "invoke", {"when": when[hook["_on"]]}, str(hook.get("cmd", "")))


def _bool(value: bool) -> str:
    return "true" if value else "false"


def dumps_dax(workflow: Workflow) -> bytes:
    """The workflow as DAX 3.6 (module docstring)."""
    root = etree.Element(f"{{{_NS}}}adag", {"version": "3.6", "name": workflow.name}, nsmap={None: _NS})
    for key, value in workflow.metadata.items():
        _sub(root, "metadata", {"key": key}, value)
    _invokes(root, workflow.hooks)
    for replica in workflow.replica_catalog or ():
        element = _sub(root, "file", {"name": replica.lfn})
        for pfn in replica.pfns:
            _sub(element, "pfn", {"url": pfn.pfn, "site": pfn.site})
    for transformation in workflow.transformation_catalog or ():
        for entry in transformation.sites:
            element = _sub(root, "executable", {
                "namespace": transformation.namespace, "name": transformation.name,
                "version": transformation.version, "arch": entry.arch, "os": entry.os_type,
                "installed": _bool(entry.type == "installed")})
            _sub(element, "pfn", {"url": entry.pfn, "site": entry.name})
            _profiles(element, transformation.profiles)
        if transformation.requires:
            element = _sub(root, "transformation", {"namespace": transformation.namespace,
                                                    "name": transformation.name,
                                                    "version": transformation.version})
            for fqn in transformation.requires:
                namespace, name, version = split_fqn(fqn)
                _sub(element, "uses", {"namespace": namespace, "name": name, "version": version})
    for job in workflow.jobs.values():
        _job(root, job)
    parents: dict[str, list[str]] = {}
    for parent, children in workflow.dependencies.items():
        for child in children:
            parents.setdefault(child, []).append(parent)
    for child, those in parents.items():
        element = _sub(root, "child", {"ref": child})
        for parent in those:
            _sub(element, "parent", {"ref": parent})
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))


def _job(root: Any, job: Job) -> None:
    if job.type == "job":
        element = _sub(root, "job", {"id": job.id, "namespace": job.namespace, "name": job.name,
                                     "version": job.version, "node-label": job.node_label})
    else:
        element = _sub(root, "dax" if job.type == "pegasusWorkflow" else "dag",
                       {"id": job.id, "file": job.file or job.name, "node-label": job.node_label})
    if job.arguments:
        argument = _sub(element, "argument")
        last: Any = None
        for i, arg in enumerate(job.arguments):
            sep = " " if i else ""
            if isinstance(arg, FileRef):
                if last is None:
                    argument.text = (argument.text or "") + sep
                else:
                    last.tail = (last.tail or "") + sep
                last = _sub(argument, "filename", {"file": arg.lfn})
            elif last is None:
                argument.text = (argument.text or "") + sep + arg
            else:
                last.tail = (last.tail or "") + sep + arg
    _profiles(element, job.profiles)
    for key, value in job.metadata.items():
        _sub(element, "metadata", {"key": key}, value)
    _invokes(element, job.hooks)
    for stream in ("stdin", "stdout", "stderr"):
        if getattr(job, stream):
            _sub(element, stream, {"file": getattr(job, stream)})
    for use in job.uses:
        link = {"input": "input", "output": "output", "checkpoint": "inout"}[use.type]
        attrib = {"file": use.lfn, "link": link, "optional": _bool(use.optional),
                  "size": str(use.size) if use.size is not None else None}
        if use.type != "input":
            attrib["transfer"] = _bool(use.stage_out)
            attrib["register"] = _bool(use.register_replica)
        _sub(element, "uses", attrib)


def write_dax(workflow: Workflow, path: str | os.PathLike[str]) -> None:
    Path(path).write_bytes(dumps_dax(workflow))
