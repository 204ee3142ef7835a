"""``sheaf shims DIR``: pegasus-plan, pegasus-run, pegasus-status, pegasus-remove and pegasus-version
wrappers that drive sheaf, for scripts written for Pegasus.

Each wrapper is a small Python script run by the interpreter sheaf is installed in; it passes its
own name and argv to ``sheaf.cli._pegasus_tools.main`` (no shell anywhere).  With DIR first on PATH a
user's unchanged script runs sheaf.  ``Pegasus.api`` finds ``pegasus-version`` on PATH and then runs
the tools from ``<its directory>/../bin``, so for it DIR must be named ``bin`` (a warning says so
otherwise).  Existing files of those names in DIR are replaced; nothing else is touched.
"""

from __future__ import annotations

import os
import sys

import click

from sheaf.cli._pegasus_tools import TOOLS
from sheaf.errors import StorageError

__all__ = ["command", "shim_text"]


def shim_text(tool: str) -> str:
    return (f"#!{sys.executable}\n"
            f'"""{tool} played by sheaf (written by `sheaf shims`)."""\n'
            "import sys\n\n"
            "from sheaf.cli._pegasus_tools import main\n\n"
            f"sys.exit(main({tool!r}, sys.argv[1:]))\n")


@click.command(name="shims")
@click.argument("directory", type=click.Path(file_okay=False))
def command(directory: str) -> None:
    """Write pegasus-plan/-run/-status/-remove/-version wrappers that drive sheaf into DIRECTORY."""
    try:
        os.makedirs(directory, exist_ok=True)
        for tool in TOOLS:
            _write(os.path.join(directory, tool), shim_text(tool))
    except OSError as exc:
        raise StorageError.of(exc, f"the wrappers in {directory}", "nothing else was changed") from None
    if os.path.basename(os.path.abspath(directory)) != "bin":
        click.echo("sheaf: warning: Pegasus.api runs the tools from the 'bin' directory beside the "
                   f"pegasus-version it finds; name the directory bin for it ({directory})", err=True)
    click.echo(f"wrote {', '.join(TOOLS)} into {os.path.abspath(directory)}; put it first on PATH")


def _write(path: str, text: str) -> None:
    tmp = f"{path}.sheaf-tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
