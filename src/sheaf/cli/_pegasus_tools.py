"""pegasus-plan, pegasus-run, pegasus-status, pegasus-remove, ... pegasus-graphviz, played by sheaf.

The wrappers ``sheaf shims DIR`` writes call :func:`main` with their own name and argv, so a user's
unchanged script -- or ``Pegasus.api``, which runs ``<DIR>/../bin/pegasus-*`` once it finds
``pegasus-version`` on PATH -- drives sheaf.  Each tool takes its Pegasus options and maps them:

- ``pegasus-plan ARGS``: ``sheaf plan ARGS`` (sheaf plan reads pegasus-plan's command line), ending
  with pegasus-plan's own closing lines (``pegasus-run DIR``; after ``--submit``, pegasus-run's), which
  scripts grep for the submit directory (``_pegasus_text``);
- ``pegasus-run [-v] [--grid|--nogrid] [-j|--json] [DIR]``: starts ``sheaf run DIR`` detached
  (``sheaf.app.submit``) and prints pegasus-run's message (``pegasus-status -l DIR``, ``pegasus-remove DIR``);
  ``--json`` prints the braindump as pegasus-run does;
- ``pegasus-status [options] [DIR]``: ``sheaf status DIR`` (``-l``/``--long``: ``sheaf status --long``,
  the sub-workflows' tree and the running and held jobs; Pegasus's other display options have no
  meaning for it and are dropped); with ``-j``/``--jsonrv`` the JSON pegasus-status prints, the counts
  in its keys (``sheaf.app.pegasus_status``);
- ``pegasus-remove [-v] [DIR]``: ``sheaf remove DIR`` (SIGTERM to the engine);
- ``pegasus-analyzer [options] [DIR]`` and ``pegasus-statistics [options] [DIR]``: ``sheaf analyze DIR``
  (the failed jobs with their reasons; ``--dir``/``-d``/``-i DIR`` and ``--dag FILE`` name the run,
  ``--debug-job`` is refused) and ``sheaf statistics DIR`` (pegasus-statistics' summary and breakdown;
  ``-f csv`` is ``--csv``, levels are checked, ``-o`` and ``-t`` are warned about, several workflows
  or UUIDs refused); each tool's other options are read, and those with a value warned about;
- ``pegasus-version``: Pegasus's version line, naming sheaf;
- ``pegasus-config --bin|--conf|--java|--python|--python-externals|--schema|--python-dump|--sh-dump|
  --version [--noeoln]``: the directories a plan defines for ``${PEGASUS_*}``
  (``sheaf.app.pegasus_variables``), the wrappers' own directory as ``--bin``, as test and example
  scripts ask for them (``PYTHONPATH=$(pegasus-config --python)``); ``--classpath`` and ``--r`` are
  refused by name: sheaf has no Java planner nor R client;
- ``pegasus-graphviz [-s] [-f] [-l LABEL] [-o FILE] [-r XFORM]... FILE``: the workflow's DOT graph
  (``sheaf.app.draw_workflow``), as ``wf.graph()`` asks for it; a DAGMan ``.dag`` file is refused;
- ``condor_q``: ``Pegasus.api``'s ``wf.wait()``/``wf.status()`` run ``condor_q -constraint ... -json``
  before they read ``<dag>.dagman.out`` (which ``sheaf run`` writes); sheaf's jobs are in no HTCondor
  queue, so the wrapper runs the next ``condor_q`` on PATH when there is one (a real HTCondor stays
  usable with the wrappers first on PATH), else answers as an empty queue does (``[]`` with ``-json``).

DIR defaults to the current directory, as for the Pegasus tools.  An option a tool does not know is
one usage message and exit 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence

import click

from sheaf import __version__, app
from sheaf.app import pegasus_status
from sheaf.cli import _exit, _pegasus_text
from sheaf.errors import UsageError

TOOLS = ("pegasus-plan", "pegasus-run", "pegasus-status", "pegasus-remove", "pegasus-analyzer",
         "pegasus-statistics", "pegasus-version", "pegasus-config", "pegasus-graphviz", "condor_q")
PEGASUS_VERSION = "5.0.0"  # the pegasus-plan whose command line sheaf reads


def main(tool: str, argv: Sequence[str]) -> int:
    """Run ``tool`` (one of ``TOOLS``) with ``argv``; returns its exit status."""
    from sheaf.cli import main as sheaf

    try:
        args = _TRANSLATE[tool](list(argv))
    except UsageError as exc:
        click.echo(f"{tool}: error: {exc}", err=True)
        return _exit.BAD_INPUT
    if args is None:
        return _exit.OK
    try:
        if tool == "pegasus-plan":
            _as_pegasus_plan(args[1:])
        else:
            sheaf(args=args, prog_name="sheaf")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else _exit.BAD_INPUT
    return _exit.OK


def _as_pegasus_plan(args: list[str]) -> None:
    """``sheaf plan``'s command run as the program the user ran: its usage, help and errors name
    ``pegasus-plan``, as argparse's ``prog`` names the program, not the ``sheaf plan`` playing it."""
    from sheaf.cli._app import HELP_OPTIONS, guarded
    from sheaf.cli._plan import command

    prog = "pegasus-plan"
    guarded(lambda: command.main(args=args, prog_name=prog, standalone_mode=False,
                                 help_option_names=HELP_OPTIONS), prog)


def _split(argv: list[str], flags: Sequence[str]) -> tuple[set[str], str]:
    """The flags given (``-vv`` counts as ``-v``) and the one directory argument (default: here)."""
    _, seen, words = _options(argv, (), flags)
    return seen, _one_directory(words)


def _plan(argv: list[str]) -> list[str]:
    # ends with pegasus-plan's lines (``_pegasus_text``); pegasus-plan's -c is --cache (sheaf plan's --conf)
    # and its -d the deprecated --dax (sheaf plan's --dir), attached (-dFILE) or not
    out: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[index:])
            break
        if arg.startswith("-d") and not arg.startswith("--"):
            named = arg[2:] or (argv[index + 1] if index + 1 < len(argv) else "")
            click.echo(f"pegasus-plan: warning: -d {named}: -d (--dax) is deprecated; the workflow is "
                       "the last argument", err=True)
            out.append(f"--dax={arg[2:]}" if arg[2:] else "--dax")
        else:
            out.append("--cache" if arg == "-c" else arg)
    return ["plan", "--as-pegasus-plan", *out]


def _run(argv: list[str]) -> None:
    seen, directory = _split(argv, ("-v", "--verbose", "--grid", "--nogrid", "-j", "--json"))
    braindump = os.path.join(directory, "braindump.yml")
    if not os.path.isfile(braindump):
        raise UsageError(f"{directory}: not a submit directory (no braindump.yml)")
    pid = app.submit(directory)
    if seen & {"-j", "--json"}:
        click.echo(json.dumps(_read_braindump(braindump)))
    else:
        click.echo(f"started: sheaf run {directory} (pid {pid}, log {os.path.join(directory, app.RUN_LOG)})",
                   err=True)
        click.echo(_pegasus_text.started(directory))


def _read_braindump(path: str) -> dict[str, object]:
    """``braindump.yml`` as sheaf writes it (``_braindump.yaml_text``: a JSON value per key)."""
    with open(path, encoding="utf-8") as file:
        pairs = (line.split(": ", 1) for line in file if ": " in line)
        return {key: json.loads(value) for key, value in pairs}


#: pegasus-status's flags (``-w``/``--watch`` takes a value); only ``--jsonrv`` changes what is shown
_STATUS_FLAGS = ("-l", "--long", "-j", "--jsonrv", "-D", "--dirs", "-L", "--legend", "-Q", "--noqueue",
                 "-d", "--debug", "-v", "--verbose")


def _status(argv: list[str]) -> list[str] | None:
    words = list(argv)
    for index, word in enumerate(argv):  # drop --watch's value: sheaf status shows the state once
        if word in ("-w", "--watch") and index + 1 < len(argv):
            words[index:index + 2] = ["", ""]
    words = [word for word in words if word and not word.startswith(("-w", "--watch"))]
    seen, directory = _split(words, _STATUS_FLAGS)
    if seen & {"-j", "--jsonrv"}:
        click.echo(json.dumps(_status_json(directory), indent=2))
        return None
    return ["status", *(["--long"] if seen & {"-l", "--long"} else []), directory]


def _status_json(directory: str) -> dict[str, object]:
    """pegasus-status --jsonrv: the counts of ``sheaf.monitor`` in Pegasus's keys."""
    from sheaf.monitor import workflow_status

    status = workflow_status(directory)
    return pegasus_status(os.path.basename(status.dag), status.state, status.total, status.counts)


def _options(argv: list[str], values: Sequence[str], flags: Sequence[str],
             every: dict[str, list[str]] | None = None) -> tuple[dict[str, str], set[str], list[str]]:
    """A Pegasus tool's command line: its options that take a value (``-o DIR``, ``--output DIR``,
    ``--output=DIR``; the last one given, and each one in ``every`` when given), its flags (``-vv``
    counts as ``-v``), and the other words."""
    given: dict[str, str] = {}
    seen: set[str] = set()
    words: list[str] = []
    rest = iter(argv)
    for word in rest:
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in values:
            if not eq:
                value = next(rest, None)  # type: ignore[assignment]
                if value is None:
                    raise UsageError(f"option {name} needs a value")
            given[name] = value
            if every is not None:
                every.setdefault(name, []).append(value)
        elif word.startswith("-") and word != "-":
            flag = "-v" if word.strip("v") == "-" else word
            if flag not in flags:
                raise UsageError(f"unknown option {word}")
            seen.add(flag)
        else:
            words.append(word)
    return given, seen, words


def _one_directory(words: list[str]) -> str:
    if len(words) > 1:
        raise UsageError(f"one submit directory expected, got {' '.join(words)}")
    return os.path.abspath(words[0] if words else ".")


def _no_effect(tool: str, given: dict[str, str], names: Sequence[str]) -> None:
    """A warning naming each of ``names`` given: options sheaf reads and does not act on."""
    for name in names:
        if name in given:
            click.echo(f"{tool}: warning: {name} {given[name]}: has no effect with sheaf", err=True)


def _pick(given: dict[str, str], *names: str) -> str | None:
    return next((given[name] for name in names if name in given), None)


_STATISTICS_VALUES = ("-o", "--output", "-c", "--conf", "-f", "--file", "-s", "--statistics-level",
                      "-t", "--time-filter")
_STATISTICS_FLAGS = ("-h", "--help", "-i", "--ignore-db-inconsistency", "-v", "--verbose", "-q", "--quiet",
                     "-m", "--multiple-wf", "-p", "--ispmc", "-u", "--isuuid")
_STATISTICS_LEVELS = {"all", "summary", "wf_stats", "jb_stats", "tf_stats", "ti_stats", "int_stats"}


def _statistics(argv: list[str]) -> list[str]:
    """pegasus-statistics: ``sheaf statistics DIR`` (its tables are pegasus-statistics' summary,
    breakdown and per-host ones, whatever the level); ``-f csv`` is ``--csv``."""
    given, seen, words = _options(argv, _STATISTICS_VALUES, _STATISTICS_FLAGS)
    if seen & {"-h", "--help"}:
        return ["statistics", "--help"]
    if seen & {"-m", "--multiple-wf", "-u", "--isuuid"} or len(words) > 1:
        raise UsageError("sheaf statistics reads one submit directory: statistics over several workflows "
                         "(-m) or of workflows named by UUID (-u) are not supported")
    levels = _pick(given, "-s", "--statistics-level")
    unknown = {level.strip().lower() for level in (levels or "summary").split(",")} - _STATISTICS_LEVELS
    if unknown:
        raise UsageError(f"unknown statistics level {', '.join(sorted(unknown))} "
                         f"(one of {', '.join(sorted(_STATISTICS_LEVELS))})")
    kind = (_pick(given, "-f", "--file") or "text").lower()
    if kind not in ("text", "csv"):
        raise UsageError(f"unknown file type {kind} (text or csv)")
    output = _pick(given, "-o", "--output")
    if output is not None:
        click.echo(f"pegasus-statistics: warning: -o {output}: sheaf prints the statistics, it writes no "
                   "files", err=True)
    if _pick(given, "-t", "--time-filter") is not None:
        click.echo("pegasus-statistics: warning: -t: sheaf's per-host table is not grouped by time", err=True)
    _no_effect("pegasus-statistics", given, ("-c", "--conf"))
    return ["statistics", *(["--csv"] if kind == "csv" else []), _one_directory(words)]


_ANALYZER_VALUES = ("-o", "--output-dir", "--dag", "-d", "-i", "--dir", "-p", "--print", "--type",
                    "--debug-job", "--debug-dir", "--local-executable", "-c", "--conf", "--top-dir",
                    "-I", "--indent")
_ANALYZER_FLAGS = ("-h", "--help", "-q", "--quiet", "-s", "--strict", "-S", "--summary", "-m", "-t",
                   "--monitord", "-v", "--verbose", "--files", "-T", "--traverse-all", "-r", "--recurse")


def _analyzer(argv: list[str]) -> list[str]:
    """pegasus-analyzer: ``sheaf analyze DIR`` (``--dir``/``-d``/``-i`` or the one word; ``--dag``
    passed on); its debug mode is refused by name, its display options have no meaning for sheaf."""
    given, seen, words = _options(argv, _ANALYZER_VALUES, _ANALYZER_FLAGS)
    if seen & {"-h", "--help"}:
        return ["analyze", "--help"]
    if "--debug-job" in given:
        raise UsageError("--debug-job: sheaf has no debug mode that reruns a job; the job's own .sub, "
                         ".out and .err files are under jobs/ in the submit directory")
    _no_effect("pegasus-analyzer", given, [name for name in given if name not in ("--dir", "-d", "-i",
                                                                                   "--dag")])
    named = _pick(given, "--dir", "-d", "-i")
    dag = given.get("--dag")
    if dag is not None:  # as pegasus-analyzer: the DAG file's directory overrides --dir
        named = os.path.dirname(os.path.abspath(dag))
    directory = _one_directory(words if named is None else [named, *words])
    return ["analyze", *(["--dag", os.path.basename(dag)] if dag is not None else []), directory]


_GRAPHVIZ_VALUES = {"-l": "label", "--label": "label", "-o": "output", "--output": "output",
                    "-r": "remove", "--remove": "remove", "-W": "width", "--width": "width",
                    "-H": "height", "--height": "height"}

_GRAPHVIZ_FLAGS = {"-h": "h", "--help": "h", "-s": "s", "--nosimplify": "s", "-f": "f", "--files": "f"}


def _graphviz(argv: list[str]) -> None:
    """pegasus-graphviz [-s] [-f] [-l LABEL] [-o FILE] [-r XFORM]... [-W W -H H] FILE: the workflow's
    graph (``sheaf.app.draw_workflow``); a DAGMan ``.dag`` file is refused by name."""
    from sheaf.errors import SheafError
    from sheaf.formats import read_workflow

    every: dict[str, list[str]] = {}
    _, seen, words = _options(argv, tuple(_GRAPHVIZ_VALUES), tuple(_GRAPHVIZ_FLAGS), every)
    flags = {_GRAPHVIZ_FLAGS[flag] for flag in seen}
    values: dict[str, list[str]] = {}
    for name, given in every.items():
        values.setdefault(_GRAPHVIZ_VALUES[name], []).extend(given)
    if "h" in flags:
        click.echo("usage: pegasus-graphviz [-s] [-f] [-l LABEL] [-o FILE] [-r XFORM]... "
                   "[-W WIDTH -H HEIGHT] FILE")
        return
    if len(words) != 1:
        raise UsageError(f"one workflow FILE expected, got {' '.join(words) or 'none'}")
    if words[0].endswith(".dag"):
        raise UsageError(f"{words[0]}: sheaf's pegasus-graphviz draws workflows (.yml, .dax, .xml), not "
                         "DAGMan files")
    try:
        size = [float(values[key][-1]) if key in values else None for key in ("width", "height")]
    except ValueError as exc:
        raise UsageError(f"--width and --height are numbers: {exc}") from None
    try:
        text = app.draw_workflow(read_workflow(words[0]), values.get("output", [None])[-1],
                                 label=values.get("label", ["label"])[-1], simplify="s" not in flags,
                                 files="f" in flags, remove=values.get("remove", []), width=size[0],
                                 height=size[1])
    except UsageError:
        raise
    except SheafError as exc:
        raise UsageError(str(exc)) from None
    if text is not None:
        click.echo(text, nl=False)


def _condor_q(argv: list[str]) -> None:
    """The next condor_q on PATH, else an empty queue (module docstring)."""
    real = _next_on_path("condor_q")
    if real is not None:
        os.execv(real, [real, *argv])
    if "-json" in argv:
        click.echo("[]")
    else:
        click.echo("0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, 0 suspended")


def _next_on_path(name: str) -> str | None:
    """``name`` on PATH after the directory of the running wrapper (its own copy is skipped)."""
    here = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.realpath(directory or ".") == here or not os.access(candidate, os.X_OK):
            continue
        if os.path.isfile(candidate):
            return candidate
    return None


def _remove(argv: list[str]) -> list[str]:
    _, directory = _split(argv, ("-v", "--verbose"))
    return ["remove", directory]


def _version(argv: list[str]) -> None:
    click.echo(f"{PEGASUS_VERSION} (sheaf {__version__})")


#: pegasus-config's options -> the variable of ``sheaf.app.pegasus_variables`` each prints
_CONFIG_OPTIONS = {"--bin": "PEGASUS_BIN_DIR", "--conf": "PEGASUS_CONF_DIR", "--java": "PEGASUS_JAVA_DIR",
                   "--python": "PEGASUS_PYTHON_DIR", "--python-externals": "PEGASUS_PYTHON_EXTERNALS_DIR",
                   "--schema": "PEGASUS_SCHEMA_DIR"}
#: what sheaf has no copy of: Pegasus's Java classes and its R client
_NO_SUCH = {"--classpath": "Java planner", "--r": "R client"}


def _config(argv: list[str]) -> None:
    """pegasus-config (module docstring): the directories a plan defines for ``${PEGASUS_*}``, the
    wrappers' own directory being the tools' (``--bin``)."""
    asked = [word for word in argv if word != "--noeoln"]
    if len(asked) != 1:
        raise UsageError("give one of --version, --bin, --conf, --java, --python, --python-externals, "
                         "--schema, --python-dump, --sh-dump")
    option = asked[0]
    if option in _NO_SUCH:
        raise UsageError(f"{option}: sheaf has no Pegasus {_NO_SUCH[option]}")
    variables = {**app.pegasus_variables(), "PEGASUS_BIN_DIR": os.path.dirname(os.path.realpath(sys.argv[0]))}
    dumped = [name for name in variables if name != "PEGASUS_HOME"]
    if option in ("-V", "--version"):
        text = PEGASUS_VERSION
    elif option in _CONFIG_OPTIONS:
        text = variables[_CONFIG_OPTIONS[option]]
    elif option == "--python-dump":
        text = "\n".join(f'{name.lower()} = "{variables[name]}"' for name in dumped)
    elif option == "--sh-dump":
        # pegasus-config's own spelling: a semicolon after the first assignment only
        ends = {"PEGASUS_BIN_DIR": ";"}
        text = "\n".join(f'{name}="{variables[name]}"{ends.get(name, "")}\nexport {name}' for name in dumped)
    else:
        raise UsageError(f"unknown option {option}")
    click.echo(text, nl="--noeoln" not in argv)


_TRANSLATE: dict[str, Callable[[list[str]], list[str] | None]] = {
    "pegasus-plan": _plan, "pegasus-run": _run, "pegasus-status": _status, "pegasus-remove": _remove,
    "pegasus-analyzer": _analyzer, "pegasus-statistics": _statistics,
    "pegasus-version": _version, "pegasus-config": _config, "pegasus-graphviz": _graphviz,
    "condor_q": _condor_q,
}
