"""pegasus-plan's command line as sheaf reads it: which options mean what, which are refused.

``sheaf plan`` takes every pegasus-plan 5.x option (``CPlanner.generateValidOptions``) plus the 4.x
``--dax`` and ``--nocleanup``, as users type them (the command-line contract, ``docs/command-line.md``).
Three groups:

- *implemented*: the workflow (``WORKFLOW``, ``--dax``, default ``./workflow.yml``), ``--dir``,
  ``--relative-dir``, ``--relative-submit-dir``, ``--basename``, ``--sites``, ``--cluster``,
  ``--conf``, ``-D``, the catalogs, ``--input-dir`` (repeated and comma lists, the first directory
  holding a file wins), ``--force`` (no data reuse: sheaf never reduces a workflow yet, so every job
  runs), ``--force-replan`` (with ``--deferred``: replan a sub-workflow that ran before instead of resuming
  it), ``--submit``, ``--json``, ``-v``/``-q``, ``-V``, ``--deferred`` (how sheaf's sub-workflow
  jobs plan), the sub-workflow planning inputs ``--cache``, ``--inherited-rc-files`` and
  ``--output-map`` (``sheaf.app``), and ``--randomdir`` with ``--relative-dir`` naming the
  execution directory under a site's shared scratch directory (``sheaf.codegen._layout``);
- *for the data-staging pass*: ``--staging-site``, ``--output-sites``, ``--output-dir``,
  ``--cleanup``/``--nocleanup`` are parsed, validated, planned and recorded under ``options`` in
  plan.json; ``--reuse`` reads earlier submit directories' output replica catalogs (data reuse);
- *refused* with one message naming the option:
  ``--job-prefix``, ``--forward``, ``--rescue`` and
  ``--group`` (in pegasus-plan's manual, refused by its 5.x parser).

Long options may be abbreviated to any unique prefix, as pegasus-plan's GNU getopt allows
(``--output-site`` is ``--output-sites``); ``-D`` may come anywhere (pegasus-plan's getopt takes it
anywhere too, though its manual asks for it first).  Where sheaf's short options differ from
pegasus-plan's -- ``-d`` is ``--dir`` and ``-c`` is ``--conf`` here (the contract), ``--dax`` and
``--cache`` there -- a ``-d`` naming an existing file is read as pegasus-plan's ``-d``, the deprecated
``--dax``, with a warning (:func:`dash_d`); beside ``--dir`` it is one or the other, never dropped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import click

from sheaf.errors import UsageError

#: option -> why sheaf refuses it (the message names the option and says what to do instead)
REFUSED = {
    "--job-prefix": "job submit file names are fixed by the job ids",
    "--forward": "there is no pegasus-run to forward options to; sheaf run takes its own",
    "--rescue": "sheaf run resumes from the journal, without rescue-DAG counts",
    "--group": "pegasus-plan 5 no longer reads it either (its manual still lists it); the VO group part "
               "of the submit directory is always 'pegasus'",
}


def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Callback of a refused option: any use of it is one usage error naming it."""
    if value not in (None, (), False):
        name = max(param.opts, key=len)
        raise UsageError(f"pegasus-plan option {name} is not supported by sheaf: {REFUSED[name]}")
    return value


def dash_d(value: str | None, workflow: str | None, dax: str | None, directory: str | None
           ) -> tuple[str | None, str | None, str | None]:
    """``-d VALUE`` resolved: ``(dax, directory, warning)``.  An existing file is pegasus-plan's ``-d``
    (its deprecated ``--dax``: the manual passes the workflow as the last positional argument), and one
    that names no file but a workflow file's (``.yml``, ``.dax``, ...) a missing workflow; anything else
    is sheaf's ``-d``, ``--dir``.  Either way a second workflow or base given otherwise is refused."""
    if value is None:
        return dax, directory, None
    if os.path.isfile(value):
        for name, other in (("the workflow", workflow), ("--dax", dax)):
            if other is not None:  # even one file twice, as pegasus-plan refuses it
                raise UsageError(f"two workflows named: {name} {other} and -d {value} (pegasus-plan's -d is "
                                 "--dax; name the workflow once)")
        return value, directory, (f"-d {value}: read as pegasus-plan's -d (--dax), which is deprecated: the "
                                  "workflow is the last argument (sheaf's -d is --dir when it names no file)")
    if not os.path.exists(value) and value.lower().endswith(_WORKFLOW_SUFFIXES):
        raise UsageError(f"-d {value}: no such file (pegasus-plan's -d is the deprecated --dax; name a "
                         "submit directory base with --dir)")
    if directory is not None and os.path.abspath(directory) != os.path.abspath(value):
        raise UsageError(f"two submit directory bases named: -d {value} and --dir {directory} (sheaf plan's "
                         "-d is --dir unless it names an existing file)")
    return dax, value, None


#: the names of workflow files: a ``-d`` naming one that does not exist is a missing workflow, not a base
_WORKFLOW_SUFFIXES = (".yml", ".yaml", ".dax", ".xml", ".json")


#: pegasus-plan's options whose argument is optional (GNU getopt's ``optional_argument``): the value is
#: only ever attached (``--randomdir=NAME``, ``-rNAME``); a bare option takes no value, and the next
#: word stays what it is (``--randomdir wf.dax`` plans ``wf.dax``)
OPTIONAL_ARGUMENT = {"--randomdir": "-r"}


class PegasusCommand(click.Command):
    """A click command that reads its options as GNU getopt does: unique prefixes of long options, and
    options whose argument is optional take it only attached."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        longs = sorted({name for param in self.get_params(ctx) if isinstance(param, click.Option)
                        for name in (*param.opts, *param.secondary_opts) if name.startswith("--")})
        return super().parse_args(ctx, attach_optional(expand_prefixes(args, longs)))


def attach_optional(args: list[str]) -> list[str]:
    """A bare option of :data:`OPTIONAL_ARGUMENT` given its empty value attached, so that it takes no word."""
    bare = {*OPTIONAL_ARGUMENT, *OPTIONAL_ARGUMENT.values()}
    out: list[str] = []
    for index, word in enumerate(args):
        if word == "--":
            return [*out, *args[index:]]
        long = next((name for name, short in OPTIONAL_ARGUMENT.items() if word in (name, short)), None)
        out.append(f"{long}=" if word in bare and long is not None else word)
    return out


def expand_prefixes(args: list[str], longs: Sequence[str]) -> list[str]:
    out: list[str] = []
    for index, word in enumerate(args):
        if word == "--":
            return [*out, *args[index:]]
        name, eq, value = word.partition("=")
        matches = [option for option in longs if option.startswith(name)]
        unique = word.startswith("--") and name not in longs and len(matches) == 1
        out.append(matches[0] + eq + value if unique else word)
    return out
