"""The pegasus-mpi-cluster (PMC) DAG format and its rescue log.

Grammar, one record per line (surrounding whitespace trimmed)::

    dag     := { blank | comment | meta | task | edge }
    comment := "#" anything                     -- "#" only at the start of a line
    meta    := "#@" WS pegasus-id WS transformation WS dax-id   -- describes the NEXT task
    task    := "TASK" WS name { WS option } WS executable { WS argument }
    option  := ("-m" | "--request-memory") MB   -- number >= 0, rounded up; default 0 (ignore memory)
             | ("-c" | "--request-cpus") N      -- number >= 0, rounded up; default 1
             | ("-t" | "--tries") T             -- integer >= 1; default: the program's --tries
             | ("-p" | "--priority") P          -- integer, negative allowed; larger runs first
             | ("-f" | "--pipe-forward") VAR=FILE
             | ("-F" | "--file-forward") SRC=DEST
    edge    := "EDGE" WS parent WS child
    rescue  := { blank | comment | "DONE" WS name }

Policy and invariants:

- Options come before the executable; the first word not starting with ``-`` is the executable and
  everything after it is the task's argv, tokenised with POSIX shell quoting (``_shellwords``:
  ``shlex.split``'s rules, in linear time), never run through a shell.  (PMC's own splitter ends an
  argument at any quote; sheaf reads the POSIX superset, and ``write_pmc_dag`` writes only what both
  read alike when no quoting is needed.)
- Task names are unique words; every EDGE names known tasks; the graph is acyclic (checked
  iteratively with in-degree counters; a cycle is reported with its path).  Duplicate edges collapse.
- Every violation raises ``FormatError`` (syntax) or ``ValidationError`` (graph) with the path, the
  line and the rule; nothing is skipped.
- ``write_pmc_dag`` inverts ``parse_pmc_dag`` on names, options, argv, metadata and edges.
"""

from __future__ import annotations

__all__ = ["PmcDag", "PmcTask", "parse_pmc_dag", "parse_rescue", "write_pmc_dag"]

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from sheaf._shellwords import join_words, quote_word, split_words
from sheaf.errors import FormatError, ValidationError
from sheaf.model import cycle_in, kahn_levels

_RULE_TASK = "TASK name [options] executable [arguments]"


@dataclass(frozen=True, slots=True)
class PmcTask:
    """One TASK record.  ``tries`` is None when the task takes the program's ``--tries``."""

    name: str
    argv: tuple[str, ...]
    memory: int = 0
    cpus: int = 1
    tries: int | None = None
    priority: int = 0
    pipe_forwards: tuple[tuple[str, str], ...] = ()
    file_forwards: tuple[tuple[str, str], ...] = ()
    pegasus_id: str | None = None
    transformation: str | None = None
    dax_id: str | None = None
    line: int = 0
    options: tuple[str, ...] = ()  # more task options, written after the others (pmc_task_arguments)


@dataclass(frozen=True, slots=True)
class PmcDag:
    """Tasks in file order and edges (parent, child) in file order, without duplicates."""

    tasks: dict[str, PmcTask] = field(default_factory=dict)
    edges: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Cursor:
    path: str | None
    line: int

    def error(self, message: str, rule: str, value: object) -> FormatError:
        return FormatError(message, rule=rule, value=value, path=self.path, line=self.line)


def _number(word: str, option: str, cur: _Cursor) -> int:
    try:
        value = float(word)
    except ValueError:
        raise cur.error(f"invalid value for {option}", f"{option} takes a number >= 0", word) from None
    if value < 0 or not math.isfinite(value):
        raise cur.error(f"invalid value for {option}", f"{option} takes a number >= 0", word)
    return math.ceil(value)


def _integer(word: str, option: str, rule: str, cur: _Cursor, low: int | None) -> int:
    text = word[1:] if word[:1] in "+-" else word
    if not text.isdigit() or (low is not None and int(word) < low):
        raise cur.error(f"invalid value for {option}", rule, word)
    return int(word)


def _forward(word: str, option: str, shape: str, cur: _Cursor) -> tuple[str, str]:
    left, eq, right = word.partition("=")
    if not eq or not left or not right:
        raise cur.error(f"invalid value for {option}", f"{option} takes {shape}", word)
    return left, right


@dataclass(slots=True)
class _Options:
    memory: int = 0
    cpus: int = 1
    tries: int | None = None
    priority: int = 0
    pipe_forwards: list[tuple[str, str]] = field(default_factory=list)
    file_forwards: list[tuple[str, str]] = field(default_factory=list)


def _apply_option(opts: _Options, flag: str, word: str, name: str, cur: _Cursor) -> None:
    if flag in ("-m", "--request-memory"):
        opts.memory = _number(word, "-m/--request-memory", cur)
    elif flag in ("-c", "--request-cpus"):
        opts.cpus = _number(word, "-c/--request-cpus", cur)
    elif flag in ("-t", "--tries"):
        opts.tries = _integer(word, "-t/--tries", "-t/--tries takes an integer >= 1", cur, 1)
    elif flag in ("-p", "--priority"):
        opts.priority = _integer(word, "-p/--priority", "-p/--priority takes an integer", cur, None)
    elif flag in ("-f", "--pipe-forward"):
        opts.pipe_forwards.append(_forward(word, "-f/--pipe-forward", "VAR=FILE", cur))
    elif flag in ("-F", "--file-forward"):
        opts.file_forwards.append(_forward(word, "-F/--file-forward", "SRC=DEST", cur))
    else:
        raise cur.error(f"unknown option for task {name}", "task options are -m -c -t -p -f -F", flag)


def _options(words: list[str], name: str, cur: _Cursor) -> tuple[_Options, list[str]]:
    opts = _Options()
    i = 0
    while i < len(words) and words[i].startswith("-"):
        if i + 1 >= len(words):
            raise cur.error(f"option {words[i]} of task {name} has no value", _RULE_TASK, words[i])
        _apply_option(opts, words[i], words[i + 1], name, cur)
        i += 2
    return opts, words[i:]


def _task(rest: str, meta: tuple[str, str, str] | None, cur: _Cursor) -> PmcTask:
    head = rest.split(None, 1)
    if len(head) < 2:
        raise cur.error("incomplete TASK record", _RULE_TASK, ("TASK " + rest).strip())
    name = head[0]
    try:
        words = split_words(head[1])
    except ValueError as exc:
        raise cur.error(f"cannot split TASK {name} ({exc})", "POSIX shell quoting: quotes balanced, "
                        "no dangling backslash", head[1]) from None
    opts, argv = _options(words, name, cur)
    if not argv:
        raise cur.error(f"task {name} has no executable", _RULE_TASK, "TASK " + rest)
    pegasus_id, transformation, dax_id = meta if meta is not None else (None, None, None)
    return PmcTask(name, tuple(argv), opts.memory, opts.cpus, opts.tries, opts.priority,
                   tuple(opts.pipe_forwards), tuple(opts.file_forwards),
                   pegasus_id, transformation, dax_id, cur.line)


def _edge(rest: str, tasks: dict[str, PmcTask], cur: _Cursor) -> tuple[str, str]:
    parts = rest.split()
    if len(parts) != 2:
        raise cur.error("bad EDGE record", "EDGE parent child", "EDGE " + rest)
    for name in parts:
        if name not in tasks:
            raise ValidationError("EDGE names an unknown task", rule="EDGE follows the TASK records of "
                                  "both ends", value=name, path=cur.path, line=cur.line)
    return parts[0], parts[1]


def _meta(body: str, cur: _Cursor) -> tuple[str, str, str]:
    fields = body[2:].split(None, 2)
    if len(fields) < 3:
        raise cur.error("incomplete task record", "'#@' needs: pegasus-id transformation dax-id", body)
    return fields[0], fields[1], fields[2]


def parse_pmc_dag(text: str, path: str | None = None) -> PmcDag:
    """Parse and validate a PMC DAG file."""
    tasks: dict[str, PmcTask] = {}
    edges: dict[tuple[str, str], int] = {}
    meta: tuple[str, str, str] | None = None
    cur = _Cursor(path, 0)
    for cur.line, raw in enumerate(text.split("\n"), start=1):
        body = raw.strip()
        if not body:
            continue
        keyword, rest = [*body.split(None, 1), ""][:2]
        if body.startswith("#@"):
            meta = _meta(body, cur)
        elif body.startswith("#"):
            continue
        elif keyword == "TASK":
            task = _task(rest, meta, cur)
            if task.name in tasks:
                raise ValidationError("duplicate task", rule="task names are unique", value=task.name,
                                      path=path, line=cur.line)
            tasks[task.name], meta = task, None
        elif keyword == "EDGE":
            edges.setdefault(_edge(rest, tasks, cur), cur.line)
        else:
            raise cur.error("unknown record", "records are TASK, EDGE, '#' comments", body)
    dag = PmcDag(tasks, tuple(edges))
    _check_acyclic(dag, path, edges)
    return dag


def _check_acyclic(dag: PmcDag, path: str | None, lines: dict[tuple[str, str], int]) -> None:
    children: dict[str, list[str]] = {name: [] for name in dag.tasks}
    parents: dict[str, list[str]] = {name: [] for name in dag.tasks}
    for parent, child in dag.edges:
        children[parent].append(child)
        parents[child].append(parent)
    _, blocked = kahn_levels(dag.tasks, parents.__getitem__, children.__getitem__)
    if blocked:
        cycle = cycle_in(blocked, parents.__getitem__)
        raise ValidationError("the DAG has a cycle", rule="EDGE records form an acyclic graph",
                              value=" -> ".join(cycle), path=path,
                              line=max(lines[edge] for edge in pairwise(cycle)))  # closing edge


def parse_rescue(text: str, path: str | None, known: Iterable[str]) -> set[str]:
    """Names of the tasks a PMC rescue log records as DONE; unknown names are an error."""
    names = set(known)
    done: set[str] = set()
    for lineno, raw in enumerate(text.split("\n"), start=1):
        body = raw.strip()
        if not body or body.startswith("#"):
            continue
        parts = body.split()
        if parts[0] != "DONE" or len(parts) != 2:
            raise FormatError("bad rescue record", rule="rescue records are 'DONE taskname'",
                              value=body, path=path, line=lineno)
        if parts[1] not in names:
            raise ValidationError("rescue log names an unknown task", rule="every DONE task is in the "
                                  "DAG", value=parts[1], path=path, line=lineno)
        done.add(parts[1])
    return done


def _check_word(word: str, what: str) -> None:
    if not word or any(c.isspace() for c in word) or word.startswith("#"):
        raise ValueError(f"{what} must be a non-empty word not starting with '#': {word!r}")


def _task_line(task: PmcTask) -> str:
    _check_word(task.name, "task name")
    if not task.argv or task.argv[0].startswith("-"):
        raise ValueError(f"task {task.name}: the executable must not start with '-': {task.argv!r}")
    for arg in task.argv:
        if "\n" in arg or "\r" in arg or "\0" in arg:
            raise ValueError(f"task {task.name}: argument cannot be written on one line: {arg!r}")
    words = ["TASK", task.name]
    if task.memory:
        words += ["-m", str(task.memory)]
    if task.cpus != 1:
        words += ["-c", str(task.cpus)]
    if task.tries is not None:
        words += ["-t", str(task.tries)]
    if task.priority:
        words += ["-p", str(task.priority)]
    for flag, pairs in (("-f", task.pipe_forwards), ("-F", task.file_forwards)):
        for left, right in pairs:
            if not left or "=" in left or not right:
                raise ValueError(f"task {task.name}: {flag} takes NAME=PATH with '=' only as separator")
            words += [flag, quote_word(f"{left}={right}")]
    for option in task.options:
        if "\n" in option or "\r" in option or "\0" in option:
            raise ValueError(f"task {task.name}: option cannot be written on one line: {option!r}")
        words.append(quote_word(option))
    return " ".join([*words, join_words(task.argv)])


def write_pmc_dag(tasks: Iterable[PmcTask], edges: Sequence[tuple[str, str]]) -> str:
    """Render tasks (each preceded by its ``#@`` record when it has one) and then the edges."""
    out: list[str] = []
    for task in tasks:
        if task.pegasus_id is not None:
            meta = (task.pegasus_id, task.transformation or "-", task.dax_id or "-")
            for word in meta:
                _check_word(word, "'#@' field")
            out.append("#@ " + " ".join(meta))
        out.append(_task_line(task))
    for parent, child in edges:
        _check_word(parent, "EDGE parent")
        _check_word(child, "EDGE child")
        out.append(f"EDGE {parent} {child}")
    return "".join(line + "\n" for line in out)
