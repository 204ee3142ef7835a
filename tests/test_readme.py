"""Every command block of the README runs as shown (STYLE.md item 12).

The ``sh`` blocks of "A short tour" and "Coming from Pegasus" are run line by line in a temporary copy
of the repository's ``examples`` directory: each line is split with ``shlex`` (no shell; ``#``
comments dropped) and run as an argv list with the venv's ``bin`` first on PATH; ``cd`` changes the
directory of the lines after it and ``. .venv/bin/activate`` is what that PATH already does.  Each
command must exit 0 without a traceback, and a comment ``# prints: TEXT`` must be in its output
(``<you>`` standing for the user).  A README that drifts from the program fails here.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SECTIONS = ("A short tour", "Coming from Pegasus", "Binding work to grid sites")


def command_blocks(text: str) -> dict[str, list[str]]:
    """``sh`` blocks (their lines) of each section in ``SECTIONS``."""
    out: dict[str, list[str]] = {}
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title = section.split("\n", 1)[0].strip()
        if title in SECTIONS:
            blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
            out[title] = [line for block in blocks for line in block.splitlines()]
    return out


BLOCKS = command_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_sections_have_command_blocks() -> None:
    assert set(BLOCKS) == set(SECTIONS) and all(BLOCKS.values())


@pytest.mark.parametrize("section", SECTIONS)
def test_readme_commands_run_as_shown(section: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    cwd = tmp_path
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    if section != "A short tour":
        cwd = tmp_path / "examples" / "blackdiamond"  # the section's commands run where the tour left off
    for line in BLOCKS[section]:
        argv = shlex.split(line, comments=True)
        if not argv or argv[0] == ".":
            continue
        if argv[0] == "cd":
            cwd = cwd / argv[1]
            continue
        program = str(BIN / argv[0]) if (BIN / argv[0]).exists() else str(cwd / argv[0])
        done = subprocess.run([program, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                              check=False, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, f"{line}\n{done.stdout}{done.stderr}"
        promised = re.search(r"# prints: (.*)$", line)
        if promised:
            text = promised.group(1).strip().replace("<you>", getpass.getuser())
            assert text.removeprefix("submit directory: ") in done.stdout, f"{line}\n{done.stdout}"
