"""Every ``pip install 'NAME[extra]'`` that sheaf prints or documents names the distribution that
``pyproject.toml`` declares, so that a user who copies the command installs sheaf's extra and not another
project's package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_install_commands_name_the_distribution() -> None:
    name = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    texts = [*ROOT.joinpath("src").rglob("*.py"), ROOT / "README.md", *ROOT.joinpath("docs").rglob("*.md")]
    pattern = re.compile(r"pip install '?([A-Za-z0-9_.-]+)\[")
    found = [(path.relative_to(ROOT).as_posix(), match.group(1))
             for path in texts for match in pattern.finditer(path.read_text(encoding="utf-8"))]
    assert found, "no install command with an extra found: the test reads the wrong files"
    assert [entry for entry in found if entry[1] != name] == []
