"""The layout is the data's path: a package imports only packages to its left (STYLE.md habit 1)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sheaf"
ORDER = ["model", "formats", "classad", "planner", "codegen", "engine", "aggregators", "backends",
         "monitor", "app", "cli"]
# engine and aggregators are one stage: neither imports the other, both may import the left.
RANK = {name: i for i, name in enumerate(ORDER)}
RANK["aggregators"] = RANK["engine"]
SHARED = {"errors", "__init__", "_version", "_lazy", "_value", "_proc"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("." * node.level + (node.module or ""))
    return found


def _stage_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "sheaf" or len(parts) < 2:
        return None
    return parts[1]


def _files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_flow_one_way(path: Path) -> None:
    rel = path.relative_to(SRC)
    if len(rel.parts) == 1:
        return  # top-level modules (errors.py, __init__.py) are shared
    here = rel.parts[0]
    for module in _imports(path):
        if module.startswith("."):
            assert module.startswith(".") and module.count(".") <= len(rel.parts) - 1, module
            continue
        stage = _stage_of(module)
        if stage is None or stage in SHARED or stage == here:
            continue
        if here == "classad":
            pytest.fail(f"{rel}: classad is a leaf but imports {module}")
        assert stage in RANK, f"{rel}: imports unknown stage {module}"
        assert RANK[stage] < RANK[here] or (here, stage) == ("engine", "engine"), (
            f"{rel}: imports {module}, which is to the right of (or beside) {here}"
        )


def test_classad_imports_nothing_of_sheaf_not_even_errors() -> None:
    for path in (SRC / "classad").rglob("*.py"):
        for module in _imports(path):
            assert not module.startswith("sheaf") or module.startswith("sheaf.classad"), (path, module)


def test_every_stage_exists() -> None:
    for name in ORDER:
        assert (SRC / name / "__init__.py").is_file(), name
