"""The ``sheaf`` command group and the error boundary that turns exceptions into exit codes.

Commands are registered from their own modules by ``_register()``; a command module defines a
``click.Command`` named ``command`` (or a group).  No traceback ever reaches the user for bad input:
``InputError``/``UsageError`` (and the ClassAd package's syntax error) print one message and exit 2;
``StorageError`` (a file that cannot be written: disk full, I/O error) and ``EngineError`` print one
message and exit 1 - not bad input: the same command succeeds once the storage is fixed.

The ``sheaf`` program itself is :func:`program`: ``main``, then the process ends once output is
flushed and the ``atexit`` handlers ran, without tearing the interpreter down object by object --
after a large run that teardown is a noticeable part of the time ``sheaf run`` is timed by
(``benchmarks/engine_throughput.py``).  Tests call ``main`` (click's runner) and see no difference.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from sheaf import __version__
from sheaf.cli import _exit
from sheaf.errors import EngineError, InputError, StorageError, UsageError

#: command name -> the module defining it (``module:name`` when its object is not ``command``); a module
#: is imported only when its command runs (or help lists the commands), so ``sheaf run`` does not pay
#: for the planner's imports at start-up
COMMAND_MODULES = {"validate": "_validate", "plan": "_plan", "run": "_run", "status": "_status",
                   "statistics": "_statistics", "analyze": "_analyze", "plots": "_plots",
                   "dashboard": "_dashboard", "remove": "_remove", "shims": "_shims", "classad": "_classad",
                   "advertise": "_advertise", "ads": "_ads", "predict": "_predict",
                   "calibrate": "_predict:calibrate_command"}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = module.partition(":")
        command: click.Command = getattr(importlib.import_module(f"sheaf.cli.{module}"), name or "command")
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        return guarded(lambda: super(_Group, self).main(*args, **{**kwargs, "standalone_mode": False}))


def guarded(call: Callable[[], Any], prog: str = "sheaf") -> Any:
    """Run a command's ``main`` (not standalone) behind the error boundary (module docstring), its
    messages led by ``prog``: the program the user ran, as argparse's ``prog`` names it."""
    try:
        return call()
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(_exit.BAD_INPUT)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(_exit.BAD_INPUT)
    except (InputError, UsageError) as exc:
        click.echo(f"{prog}: error: {exc}", err=True)
        sys.exit(_exit.BAD_INPUT)
    except StorageError as exc:
        click.echo(f"{prog}: error: {exc}", err=True)
        sys.exit(_exit.STORAGE_FAILED)
    except EngineError as exc:
        click.echo(f"{prog}: engine error: {exc}", err=True)
        sys.exit(_exit.WORKFLOW_FAILED)
    except ValueError as exc:  # e.g. ClassAdSyntaxError from the leaf package
        if type(exc).__module__.startswith("sheaf."):
            click.echo(f"{prog}: error: {exc}", err=True)
            sys.exit(_exit.BAD_INPUT)
        raise


#: every command's help options: ``-h`` is help too
HELP_OPTIONS = ["-h", "--help"]


@click.group(cls=_Group, context_settings={"help_option_names": HELP_OPTIONS})
@click.version_option(__version__, prog_name="sheaf")
def main() -> None:
    """Plan and run scientific workflows (Pegasus 5.0 YAML, DAX 3, WfCommons)."""


def program() -> None:
    """The ``sheaf`` console script (see the module docstring): ``main``, then ``os._exit`` with its
    status once stdout and stderr are flushed and the ``atexit`` handlers ran.  A non-daemon thread
    still running (which a normal exit would wait for) or an exception other than ``SystemExit``
    takes the ordinary way out."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)  # type: ignore[arg-type]
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)  # as the interpreter does with a non-integer exit status
        code = 1
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a closed reader or stream: nothing more can be said
        pass
    os._exit(code & 0xFF)  # as the interpreter reports it (-1 is 255)
