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
  ``--output-map`` (``_plan_subwf``), and ``--randomdir`` with ``--relative-dir`` naming the
  execution directory under a site's shared scratch directory (``sheaf.codegen._layout``);
- *recorded for the data-staging pass*: ``--staging-site``, ``--output-sites``,
  ``--output-dir``, ``--cleanup``/``--nocleanup`` are parsed, validated and
  recorded under ``options`` in plan.json, and a warning says what the plan does with them today;
- *refused* with one message naming the option:
  ``--job-prefix``, ``--transformations-dir``, ``--forward``, ``--rescue``,
  ``--group`` (in pegasus-plan's manual, refused by its 5.x parser) and
  ``--reuse`` (data reuse from earlier submit directories; refused after its directories are checked).

Long options may be abbreviated to any unique prefix, as pegasus-plan's GNU getopt allows
(``--output-site`` is ``--output-sites``); ``-D`` may come anywhere (pegasus-plan's getopt takes it
anywhere too, though its manual asks for it first).  Where sheaf's short options differ from
pegasus-plan's -- ``-d`` is ``--dir`` and ``-c`` is ``--conf`` here (the contract), ``--dax`` and
``--cache`` there -- a ``-d`` naming an existing file when no workflow is given is read as
pegasus-plan's ``-d`` (``--dax``), with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from sheaf.errors import UsageError

CLEANUP = ("none", "inplace", "leaf", "constraint")

#: option -> why sheaf refuses it (the message names the option and says what to do instead)
REFUSED = {
    "--job-prefix": "job submit file names are fixed by the job ids",
    "--transformations-dir": "name the executables in the transformation catalog (--tc)",
    "--forward": "there is no pegasus-run to forward options to; sheaf run takes its own",
    "--rescue": "sheaf run resumes from the journal, without rescue-DAG counts",
    "--group": "pegasus-plan 5 no longer reads it either (its manual still lists it); the VO group part "
               "of the submit directory is always 'pegasus'",
}


def split_commas(values: Sequence[str]) -> tuple[str, ...]:
    """Repeated options and comma lists, flattened (``-s a,b -s c`` -> a, b, c)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Callback of a refused option: any use of it is one usage error naming it."""
    if value not in (None, (), False):
        name = max(param.opts, key=len)
        raise UsageError(f"pegasus-plan option {name} is not supported by sheaf: {REFUSED[name]}")
    return value


class PegasusCommand(click.Command):
    """A click command that also takes unique prefixes of its long options, as GNU getopt does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        longs = sorted({name for param in self.get_params(ctx) if isinstance(param, click.Option)
                        for name in (*param.opts, *param.secondary_opts) if name.startswith("--")})
        return super().parse_args(ctx, expand_prefixes(args, longs))


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


@dataclass(frozen=True, slots=True)
class StagingOptions:
    """What the data-staging pass acts on, recorded in plan.json."""

    staging_sites: dict[str, str] = field(default_factory=dict)
    output_sites: tuple[str, ...] = ()
    output_dir: str | None = None
    cleanup: str | None = None  # None: not given (Pegasus's default, inplace, is what gets recorded)
    random_dir: str | None = None

    def record(self) -> dict[str, object]:
        return {"staging_sites": dict(self.staging_sites), "output_dir": self.output_dir,
                "cleanup": self.cleanup or "inplace", "random_dir": self.random_dir}

def staging_sites(values: Sequence[str]) -> dict[str, str]:
    """``--staging-site s1=ss1,s2=ss2`` (or a bare ``ss``: the staging site of every execution site,
    recorded under ``*``); an execution site named twice is a usage error."""
    out: dict[str, str] = {}
    for item in split_commas(values):
        site, eq, staging = item.partition("=")
        if not eq:
            site, staging = "*", site
        site, staging = site.strip(), staging.strip()
        if not site or not staging:
            raise UsageError(f"--staging-site {item!r}: expected SITE=STAGING_SITE or STAGING_SITE")
        if site in out and out[site] != staging:
            raise UsageError(f"--staging-site names two staging sites for {site}: {out[site]} and {staging}")
        out[site] = staging
    return out


def cleanup_mode(cleanup: str | None, nocleanup: bool) -> str | None:
    """``--cleanup`` checked (``--nocleanup`` is ``none``); None when neither is given."""
    if nocleanup and cleanup not in (None, "none"):
        raise UsageError(f"--nocleanup contradicts --cleanup {cleanup}")
    if not nocleanup and cleanup is None:
        return None
    mode = "none" if nocleanup else (cleanup or "").lower()
    if mode not in CLEANUP:
        raise UsageError(f"--cleanup {cleanup}: the cleanup strategy is one of {', '.join(CLEANUP)}")
    return mode


def check_reuse(dirs: Sequence[str]) -> None:
    """``--reuse``: each directory must be a submit directory; then refused (sheaf does not reuse data from
    earlier runs)."""
    for directory in split_commas(dirs):
        if not os.path.isfile(os.path.join(directory, "plan.json")):
            raise UsageError(f"--reuse {directory}: not a submit directory of an earlier plan (no plan.json)")
    if dirs:
        raise UsageError(f"--reuse {','.join(split_commas(dirs))}: sheaf does not reuse the outputs of "
                         "earlier runs; plan without --reuse (every job runs)")


def input_dirs(values: Sequence[str]) -> tuple[str, ...]:
    dirs = tuple(os.path.abspath(d) for d in split_commas(values))
    for directory in dirs:
        if not os.path.isdir(directory):
            raise UsageError(f"--input-dir {directory}: no such directory")
        if os.pathsep in directory:
            raise UsageError(f"--input-dir {directory}: a directory name cannot hold {os.pathsep!r}")
    return dirs


def workflow_file(workflow: str | None, dax: str | None, directory: str | None,
                  warnings: list[str]) -> tuple[str, str | None]:
    """The workflow file and the --dir base (module docstring: pegasus-plan's ``-d``)."""
    if workflow and dax and os.path.abspath(workflow) != os.path.abspath(dax):
        raise UsageError(f"two workflows named: {workflow} and --dax {dax}")
    chosen = workflow or dax
    if chosen is None and directory is not None and os.path.isfile(directory):
        warnings.append(f"-d {directory} names a file: read as pegasus-plan's -d (--dax); sheaf's -d is "
                        "--dir, the submit directory's base (here the current directory)")
        return directory, None
    if chosen is None:
        if not os.path.isfile("workflow.yml"):
            raise UsageError("no workflow: name one (WORKFLOW or --dax FILE), or run where workflow.yml is")
        chosen = "workflow.yml"
    return chosen, directory
