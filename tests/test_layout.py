"""The layout is the data's path, stated as a graph and checked on every module.

- **Stages.** Each package of ``sheaf`` may import only the packages ``ALLOWED`` names for it (and the
  shared top-level modules: ``errors``, ``_fields``, ``_lazy``, ``_value``, ``_proc``, ``_text``,
  ``_shellwords``, ``_gc``).
  ``classad`` imports nothing of sheaf; the engine knows nothing of the planner.
- **Public faces.** A module imports another package's names only from that package (``from
  sheaf.engine import DagmanOptions``), never from its private modules (``sheaf.engine._runconfig``):
  a package's ``__init__`` is its whole surface.  So too for packages inside a stage: each backend
  (``sheaf.backends.slurm``) keeps its private modules to itself, and what several backends share is
  a private module of ``sheaf.backends`` itself (``sheaf.backends._records``).
- **No circles.** No module imports, directly or through others, a module that imports it back --
  counting imports made inside functions, not those made only for type checking.
- **The engine's state its own.** No engine module reads or writes another object's private field
  (``machine._x``): ``DagState``'s queues, ending and rules use public methods.
- **Comments give reasons, not measurements.** A comment or docstring says why in a sentence; the
  figures measured for a choice are in docs/performance.md, so no comment carries an approximate
  figure (``~3 ms``), a before-and-after (``30 ms -> 8 ms``) or a measurement (``measured: 1.9 s``).
- **The engine's reports apart.** ``sheaf.engine.reports`` (jobstate.log, the node status file, DOT,
  metrics, rescue DAGs) is used by the engine's loop alone, through the reports' face: the core (the
  state machine, the journal) does not know it, and the other packages see the engine's face only.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sheaf"
SHARED = {"errors", "_fields", "_lazy", "_value", "_proc", "_text", "_shellwords", "_gc", "__init__"}

#: package -> the packages it may import (besides itself and SHARED)
ALLOWED: dict[str, set[str]] = {
    "classad": set(),
    "model": set(),
    "predict": {"model"},
    "formats": {"model"},
    "condor": {"model"},
    "planner": {"model", "formats", "classad", "predict"},
    "codegen": {"model", "formats", "condor", "classad", "planner"},
    "engine": {"model", "condor", "classad"},
    "jobtools": {"model", "formats", "condor", "classad"},
    "backends": {"model", "formats", "condor", "classad", "engine"},
    "monitor": {"model", "formats", "condor", "classad", "engine", "planner", "codegen"},
    "app": {"model", "formats", "condor", "classad", "planner", "codegen", "engine", "jobtools",
            "backends", "monitor", "predict"},
}
ALLOWED["cli"] = {*ALLOWED["app"], "app"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in sorted(SRC.rglob("*.py"))}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


@functools.cache  # the whole-graph tests and each module's own read every module's imports
def _imports(name: str) -> list[tuple[str, bool, int]]:
    """(module imported, only for type checking, line) of every import of sheaf in module ``name``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            # ``from package import module`` imports the module; the package itself only for other names
            modules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
            targets = modules if len(modules) == len(node.names) else [base, *modules]
        else:
            continue
        found.extend((target, node.lineno in typing_only, node.lineno) for target in targets
                     if target in MODULES and target != name)
    return found


def _private_owner(importer: str, target: str) -> str | None:
    """The package whose private module ``target`` is, when ``importer`` is not inside that package
    (a module named ``_x``, or one below it, is seen only from its package and the packages inside it)."""
    parts = target.split(".")
    for i in range(1, len(parts)):
        package = ".".join(parts[:i])
        if parts[i].startswith("_") and not f"{importer}.".startswith(f"{package}."):
            return package
    return None


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] not in SHARED else None


def test_every_package_has_its_place() -> None:
    packages = {path.parent.name for path in SRC.glob("*/__init__.py")}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_follow_the_stages_through_public_faces(name: str) -> None:
    here = _stage(name)
    for target, _, line in _imports(name):
        owner = _private_owner(name, target)
        assert owner is None, f"{name}:{line} imports {target}, a private module of {owner}"
        there = _stage(target)
        if here is None or there is None or there == here:
            continue
        assert there in ALLOWED[here], f"{name}:{line} imports {target}: {here} may not import {there}"


def test_no_import_circle_anywhere() -> None:
    edges = {name: sorted({t for t, typing_only, _ in _imports(name) if not typing_only}) for name in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in MODULES:  # Tarjan's strongly connected components, iteratively
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    assert circles == []


REPORTS = "sheaf.engine.reports"
#: the modules that may import the reports' face: the loop (``_loop`` starts a run, ``_run`` is its
#: world) and the engine's own face, which re-exports the event translator
REPORTS_SEAM = {"sheaf.engine._loop", "sheaf.engine._run", "sheaf.engine"}


def test_the_engine_core_uses_its_reports_only_through_the_loops_seam() -> None:
    wrong = [f"{name}:{line} imports {target}" for name in MODULES if not name.startswith(REPORTS)
             for target, _, line in _imports(name) if target.startswith(REPORTS)
             and (name not in REPORTS_SEAM or target != REPORTS)]
    assert wrong == []


#: underscored names that are public: a named tuple's methods
NAMED_TUPLE = {"_replace", "_asdict", "_fields", "_make"}


def test_no_engine_module_touches_another_objects_private_fields() -> None:
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("sheaf.engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not own and not node.attr.startswith("__") and node.attr not in NAMED_TUPLE:
                wrong.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert wrong == []


def test_classad_imports_nothing_of_sheaf_not_even_errors() -> None:
    for name in MODULES:
        if name.startswith("sheaf.classad"):
            assert all(target.startswith("sheaf.classad") for target, _, _ in _imports(name)), name


def test_no_two_modules_define_a_public_class_of_the_same_name() -> None:
    """A class name found in a traceback or a type error names one class (module-private helpers,
    ``_Parser`` and the like, are exempt: nothing outside their module sees them)."""
    where: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(_module(path))
    assert {name: modules for name, modules in where.items() if len(modules) > 1} == {}


_UNIT = r"(?:ms|us|µs|ns|s|MB|GB|KB|%|x|\u00d7)"  # \u00d7: the multiplication sign
#: an approximate figure, a before-and-after, or a figure said to be measured or taken
_FIGURE = rf"\d[\d.,]*\s?{_UNIT}(?![\w(])"
_MEASUREMENT = re.compile(rf"~{_FIGURE}|\d\s?(?:{_UNIT}\s?)?(?:->|→)\s?{_FIGURE}|\bmeasured\b[^.;]*{_FIGURE}"
                          rf"|\b(?:took|cost)\s~?{_FIGURE}")


def _notes(path: Path) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python or C file, by line."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".c":
        return [(text.count("\n", 0, m.start()) + 1, m.group())
                for m in re.finditer(r"/\*.*?\*/|//[^\n]*", text, re.DOTALL)]
    notes = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                notes.append((node.body[0].lineno, doc))
    return notes


def measurements_in_comments(root: Path) -> list[str]:
    return [f"{path.relative_to(root)}:{line}: {match.group()!r}"
            for path in sorted([*root.rglob("*.py"), *root.rglob("*.c")])
            for line, note in _notes(path)
            for match in _MEASUREMENT.finditer(" ".join(note.split()))]


def test_comments_give_reasons_not_measurements() -> None:
    assert measurements_in_comments(SRC) == []


@pytest.mark.parametrize("note", ["a pop: 0.51 -> 0.27 us", "it costs ~4 ms to compile",
                                  "(measured: 39-43 ms of CPU)", "the teardown took 0.4 s"])
def test_the_measurement_rule_sees_a_figure(tmp_path: Path, note: str) -> None:
    (tmp_path / "m.py").write_text(f'"""A module."""\n\nX = 1  # {note}\n')
    (tmp_path / "c.c").write_text(f"/* {note} */\nint x;\n")
    assert len(measurements_in_comments(tmp_path)) == 2
