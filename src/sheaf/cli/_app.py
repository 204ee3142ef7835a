"""The ``sheaf`` command group and the error boundary that turns exceptions into exit codes.

Commands are registered from their own modules by ``_register()``; a command module defines a
``click.Command`` named ``command`` (or a group).  No traceback ever reaches the user for bad input:
``InputError``/``UsageError`` (and the ClassAd package's syntax error) print one message and exit 2;
``StorageError`` (a file that cannot be written: disk full, I/O error) and ``EngineError`` print one
message and exit 1 - not bad input: the same command succeeds once the storage is fixed.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from sheaf import __version__
from sheaf.cli import _exit
from sheaf.errors import EngineError, InputError, StorageError, UsageError

COMMAND_MODULES = ("_validate", "_plan", "_run", "_status", "_statistics", "_analyze", "_plots", "_dashboard",
                   "_remove",
                   "_shims", "_classad")


class _Group(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", True)
        try:
            return super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(_exit.BAD_INPUT)
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(_exit.BAD_INPUT)
        except (InputError, UsageError) as exc:
            click.echo(f"sheaf: error: {exc}", err=True)
            sys.exit(_exit.BAD_INPUT)
        except StorageError as exc:
            click.echo(f"sheaf: error: {exc}", err=True)
            sys.exit(_exit.STORAGE_FAILED)
        except EngineError as exc:
            click.echo(f"sheaf: engine error: {exc}", err=True)
            sys.exit(_exit.WORKFLOW_FAILED)
        except ValueError as exc:  # e.g. ClassAdSyntaxError from the leaf package
            if type(exc).__module__.startswith("sheaf."):
                click.echo(f"sheaf: error: {exc}", err=True)
                sys.exit(_exit.BAD_INPUT)
            raise


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sheaf")
def main() -> None:
    """Plan and run scientific workflows (Pegasus 5.0 YAML, DAX 3, WfCommons)."""


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"sheaf.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"sheaf.cli.{name}":
                continue  # command not built yet
            raise
        main.add_command(module.command)


_register()
