"""Every command block of the README and of the pages in ``docs/`` runs as shown.

The ``sh`` blocks of each page (the README's "A short tour", then every ``docs/*.md``) are run line by
line in a temporary copy of the repository's ``examples`` directory: each line is split with ``shlex``
(no shell; ``#`` comments dropped) and run as an argv list with the venv's ``bin`` first on PATH; ``cd``
changes the directory of the lines after it and ``. .venv/bin/activate`` is what that PATH already does.
The README's blocks start above ``examples`` (the tour's ``cd``); a docs page's start in
``examples/blackdiamond``, where the tour leaves off.  Each command must exit 0 without a traceback, and
a comment ``# prints: TEXT`` must be in its output (``<you>`` standing for the user).  Blocks that show
what cannot run here (a Slurm login node, a Dask cluster) are ``text``, not ``sh``.  A page that drifts
from the program fails here.

The README's Python example is run too, in a copy of ``examples/blackdiamond``.
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
PAGES = ["README.md", *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md"))]


def command_blocks(text: str, fence: str = "sh") -> list[str]:
    """The lines of a page's ``fence`` blocks, in order."""
    blocks = re.findall(rf"^```{fence}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


BLOCKS = {page: command_blocks((ROOT / page).read_text(encoding="utf-8")) for page in PAGES}


def test_the_pages_that_show_commands_run_them() -> None:
    assert BLOCKS["README.md"] and BLOCKS["docs/pegasus.md"] and BLOCKS["docs/grid.md"]


@pytest.mark.parametrize("page", [page for page in PAGES if BLOCKS[page]])
def test_readme_commands_run_as_shown(page: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    cwd = tmp_path
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    if page != "README.md":
        cwd = tmp_path / "examples" / "blackdiamond"  # a page's commands run where the tour left off
    for line in BLOCKS[page]:
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
