"""Inside ``sheaf.classad`` the imports run one way: values -> syntax tree -> evaluator -> functions ->
the objects users hold -> matchmaking -> the package's face.  Walked with ``ast``, as
``tests/test_layout.py`` walks the packages: an import of a later layer, an import inside a function
(the usual way to hide a cycle) or a cycle inside one layer fails."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "sheaf" / "classad"
LAYERS: list[tuple[str, set[str]]] = [
    ("values", {"_values", "_timetext", "_grammar", "_limits", "_match_dollar", "_pcre", "_stack"}),
    ("syntax tree", {"_lexer", "_parser", "_unparse", "_nodes"}),
    ("evaluator", {"_ops", "_logic", "_coerce", "_context", "_eval"}),
    ("functions", {"_builtins", "_fn_core", "_fn_env", "_fn_lists", "_fn_refs", "_fn_regex", "_fn_strings",
                   "_fn_time", "_functions"}),
    ("objects", {"_classad", "_convert", "_requests"}),
    ("matchmaking", {"_match", "_match_expand", "_negotiator_kinds", "_negotiator", "_negotiator_monitor",
                     "_match_api"}),
    ("face", {"__init__"}),
]
RANK = {module: rank for rank, (_, modules) in enumerate(LAYERS) for module in modules}


def _modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py"))


def _relative_imports(tree: ast.Module) -> list[tuple[str, ast.ImportFrom]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.append((node.module, node))
            else:  # from . import _a, _b
                found.extend((alias.name, node) for alias in node.names)
    return found


def _top_level(tree: ast.Module) -> set[int]:
    return {id(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}


def _tree(module: str) -> ast.Module:
    path = PACKAGE / f"{module}.py"
    return ast.parse(path.read_text(), str(path))


def test_every_module_has_a_layer() -> None:
    assert set(_modules()) == set(RANK), "a new module needs a place in LAYERS"


@pytest.mark.parametrize("module", _modules())
def test_imports_run_one_way(module: str) -> None:
    tree = _tree(module)
    top = _top_level(tree)
    for imported, node in _relative_imports(tree):
        assert id(node) in top, f"{module} imports {imported} inside a block (line {node.lineno})"
        here, there = LAYERS[RANK[module]][0], LAYERS[RANK[imported]][0]
        assert RANK[imported] <= RANK[module], f"{module} ({here}) imports {imported} ({there})"


def test_no_cycle_inside_a_layer() -> None:
    graph = {module: {imported for imported, _ in _relative_imports(_tree(module))} for module in _modules()}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError with the cycle


def test_no_module_patches_another() -> None:
    for module in _modules():
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.Global):
                pytest.fail(f"{module} rebinds a module global at run time: {node.names}")
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and (
                            target.value.id.startswith("_") and target.value.id in RANK):
                        pytest.fail(f"{module} assigns {target.value.id}.{target.attr}")
