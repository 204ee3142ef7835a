"""The DAGMan input file: ``<name>.dag`` as pegasus-plan (or a person) writes it, parsed into a :class:`Dag`.

Grammar (one command per line; keywords case-insensitive; ``#`` starts a comment line)::

    JOB name submit [DIR d] [NOOP] [DONE]        FINAL name submit [DIR d] [NOOP]
    SUBDAG EXTERNAL name dagfile [DIR d] [NOOP] [DONE]
    SPLICE name dagfile [DIR d]                  INCLUDE file
    PARENT p1 p2 ... CHILD c1 c2 ...
    RETRY node n [UNLESS-EXIT v]                 VARS node [PREPEND|APPEND] key="value" ...
    SCRIPT [DEFER status time] [DEBUG f type] PRE|POST|HOLD node exe args...
    PRE_SKIP node code    PRIORITY node n    CATEGORY node cat    MAXJOBS cat n
    ABORT-DAG-ON node value [RETURN v]           DONE node         (rescue files)
    CONFIG file    DOT file [opts]    NODE_STATUS_FILE file [secs] [ALWAYS-UPDATE]    JOBSTATE_LOG file

``node`` may be ``ALL_NODES`` for RETRY, VARS, SCRIPT, PRE_SKIP, PRIORITY, CATEGORY and ABORT-DAG-ON:
the setting applies to every node of *that file* (not to splices' nodes, not to the FINAL node).  When
several commands set one property of a node (one VARS macro, the PRE script, the retries ...), the
last one in the file wins, an ALL_NODES command included (the DAGMan manual's ALL_NODES example).
A VARS line's ``PREPEND``/``APPEND`` is kept per macro (``NodeSpec.var_modes``; "" when the line
names neither, for ``DAGMAN_DEFAULT_APPEND_VARS`` to decide at submission).

Invariants of a parsed :class:`Dag`: node names are unique; every PARENT/CHILD name is a node (a splice
name stands for the splice's sink nodes as a parent and its source nodes as a child); spliced nodes
are named ``splice+node``; every path is absolute (resolved against the DAG file's directory and the
node's ``DIR``).  A cycle is not an error here: DAGMan runs what it can and reports the cycle at the
end (``DAG_STATUS_CYCLE``); :attr:`Dag.cycle` holds one, as a path, for the messages.  Parsing never
touches anything but the files it reads.  A broken line raises
:class:`sheaf.errors.FormatError` with path, line, rule and value.
"""

from __future__ import annotations

__all__ = ["Dag", "DotOptions", "InlineDescription", "NodeSpec", "Rescue", "Script", "parse_dag", "parse_rescue"]

import os
import re
from dataclasses import dataclass, field
from typing import Literal

from sheaf.errors import FormatError
from sheaf.formats._text import logical_lines, read_text

ScriptKind = Literal["PRE", "POST", "HOLD"]
ALL_NODES = "ALL_NODES"


@dataclass(frozen=True, slots=True)
class Script:
    kind: ScriptKind
    argv: tuple[str, ...]  # executable first; $JOB, $RETRY, $RETURN ... substituted when run
    cwd: str
    defer_status: int | None = None
    defer_time: float = 0.0
    debug: tuple[str, str] | None = None  # SCRIPT DEBUG: (absolute file, STDOUT | STDERR | ALL)


@dataclass(frozen=True, slots=True)
class InlineDescription:
    """A submit description written in the DAG file (``SUBMIT-DESCRIPTION name {...}``, ``JOB n {...}``):
    its logical lines, numbered as lines of the DAG file ``path``."""

    name: str
    path: str
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class DotOptions:
    update: bool = False  # DAGMan's default is DONT-UPDATE
    overwrite: bool = True
    include: str | None = None  # a header file copied into the graph


@dataclass(slots=True)
class NodeSpec:
    name: str
    submit: str  # absolute path of the submit description (the sub-DAG file for SUBDAG EXTERNAL)
    directory: str  # absolute: where the node's files are resolved and scripts run
    line: int
    path: str
    subdag: bool = False
    final: bool = False
    noop: bool = False
    done: bool = False
    retries: int = 0
    unless_exit: int | None = None
    vars: dict[str, str] = field(default_factory=dict)
    pre: Script | None = None
    post: Script | None = None
    pre_skip: int | None = None
    priority: int = 0
    category: str | None = None
    abort_on: tuple[int, int | None] | None = None  # (node exit value, DAG return value)
    var_modes: dict[str, str] = field(default_factory=dict)  # VARS key -> "PREPEND" | "APPEND" | ""
    explicit: dict[str, int] = field(default_factory=dict)  # property -> order of the command that set it
    var_order: dict[str, int] = field(default_factory=dict)  # VARS key -> order of the command that set it
    description: str | None = None  # the name of an InlineDescription that ``submit`` names
    hold: Script | None = None
    save_point: str | None = None  # SAVE_POINT_FILE (absolute)


@dataclass(slots=True)
class Dag:
    path: str
    nodes: dict[str, NodeSpec]
    children: dict[str, list[str]]
    parents: dict[str, list[str]]
    maxjobs: dict[str, int]  # per CATEGORY
    config: dict[str, str]  # DAGMan configuration (CONFIG file), upper-case keys
    config_path: str | None = None
    final: str | None = None
    dot: str | None = None
    node_status_file: tuple[str, float] | None = None
    jobstate_log: str | None = None
    cycle: tuple[str, ...] = ()  # a cycle of PARENT/CHILD edges (its first node repeated last), if any
    files: tuple[str, ...] = ()  # every DAG file of the run (``condor_submit_dag a.dag b.dag``), first first
    descriptions: dict[str, InlineDescription] = field(default_factory=dict)
    dot_options: DotOptions = field(default_factory=DotOptions)
    env: dict[str, str] = field(default_factory=dict)  # ENV SET: DAGMan's own environment
    env_get: tuple[str, ...] = ()  # ENV GET: names DAGMan takes from the submitter's environment
    job_attrs: dict[str, str] = field(default_factory=dict)  # SET_JOB_ATTR: DAGMan's own job ad
    warnings: list[str] = field(default_factory=list)  # "file:line: message" for what sheaf does not do


@dataclass(frozen=True, slots=True)
class Rescue:
    path: str
    done: frozenset[str]
    retries: dict[str, int]


_VARS_RE = re.compile(r'\s*([A-Za-z_+][\w.+]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_NODE_SETTINGS = ("RETRY", "VARS", "SCRIPT", "PRE_SKIP", "PRIORITY", "CATEGORY", "ABORT-DAG-ON")


class _File:
    """Parse state of one DAG file (the top file, or a splice/include)."""

    def __init__(self, path: str, directory: str, prefix: str, dag: Dag, stack: tuple[str, ...]) -> None:
        self.path = path
        self.dir = directory
        self.prefix = prefix
        self.dag = dag
        self.stack = stack
        self.local: list[str] = []  # node names defined in this file (for ALL_NODES)
        self.splices: dict[str, tuple[list[str], list[str]]] = {}  # name -> (sources, sinks)
        self.pins: dict[str, tuple[dict[int, list[str]], dict[int, list[str]]]] = {}  # splice -> (in, out)
        self.pin_in: dict[int, list[str]] = {}  # this file's PIN_IN / PIN_OUT (a splice's own)
        self.pin_out: dict[int, list[str]] = {}
        self.all_nodes: list[tuple[str, list[str], int, str, int]] = []  # deferred ALL_NODES commands
        self.later: list[tuple[str, list[str], int, str, int]] = []  # commands naming a node declared later
        self.connects: list[tuple[str, str, int]] = []
        self.order = [0]  # commands seen so far (shared with INCLUDEd files): "the last one wins"
        self.edges: list[tuple[list[str], list[str], int]] = []
        self.lineno = 0
        self.current = ""  # the line being parsed (VARS values keep their spacing)

    def error(self, message: str, rule: str, value: object) -> FormatError:
        return FormatError(message, rule=rule, value=value, path=self.path, line=self.lineno)


_INT_RE = re.compile(r"[-+]?[0-9]{1,10}\Z")  # ASCII digits only (``int`` also takes "1_0" and "١")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1  # DAGMan reads every number into a C int


def _int(f: _File, text: str, what: str, low: int = INT_MIN) -> int:
    """An integer of the DAG grammar: ``low`` (default INT_MIN) to INT_MAX, as DAGMan's ``int``."""
    if _INT_RE.match(text) is None:
        if re.fullmatch(r"[-+]?[0-9]+", text) is None:
            raise f.error(f"{what} is not an integer", f"{what} is an integer", text)
        raise f.error(f"{what} is out of range", f"{what} is {low} to {INT_MAX}", text)
    value = int(text)
    if not low <= value <= INT_MAX:
        raise f.error(f"{what} is out of range", f"{what} is {low} to {INT_MAX}", text)
    return value


def _resolve(base: str, name: str) -> str:
    return os.path.normpath(os.path.join(base, name))


def _read_lines(f: _File, what: str = "DAG file") -> list[tuple[int, list[str], str]]:
    """Logical lines (``\\`` continues a line, as DAGMan's reader does), split into words."""
    return [(number, line.split(), line) for number, line in logical_lines(read_text(f.path, what))]


_NODE_RULE = "JOB name submit-file|{ inline description } [DIR d] [NOOP] [DONE]"


def _node_words(f: _File, line: str) -> list[str]:
    """A node line's words; the submit file may be double-quoted (a name holding blanks), as in DAGMan."""
    head = line.split(None, 2)
    if len(head) == 3 and head[2].startswith('"'):
        end = head[2].find('"', 1)
        if end < 0:
            raise f.error("unterminated quoted file name", _NODE_RULE, head[2])
        return [head[0], head[1], head[2][1:end], *head[2][end + 1:].split()]
    return line.split()


def _inline_end(token: str) -> str | None:
    """The closing token of an inline description opened by ``token`` (``{`` or ``@=TAG``), if any."""
    if token.startswith("{"):
        return "}"
    if token.startswith("@="):
        return "@" + token[2:]
    return None


def _inline(f: _File, lines: list[tuple[int, list[str], str]], index: int, opener: str,
            name: str) -> tuple[InlineDescription, list[str], int]:
    """Read an inline description that starts after line ``index - 1``: its lines up to the closing
    token; returns it, the words after the closing token (node options) and the next line's index."""
    end = _inline_end(opener)
    assert end is not None
    if end == "@":
        raise f.error("an inline description needs a closing tag", "@=TAG ... @TAG", opener)
    start = f.lineno
    body: list[tuple[int, str]] = []
    for i in range(index, len(lines)):
        number, words, line = lines[i]
        if line == end or line.startswith((end + " ", end + "\t")):
            return InlineDescription(name, f.path, tuple(body)), words[1:], i + 1
        body.append((number, line))
    f.lineno = start
    raise f.error("inline submit description not closed", f"an inline description ends with a line '{end}'",
                  opener)


def _parse_node_decl(f: _File, words: list[str], *, subdag: bool, final: bool,
                     inline: InlineDescription | None = None) -> None:
    if len(words) < 3:
        raise f.error("a node needs a name and a file", _NODE_RULE, " ".join(words))
    name, file_name, rest = words[1], words[2], words[3:]
    if inline is not None:
        file_name = inline.name
    directory = f.dir
    flags: set[str] = set()
    i = 0
    while i < len(rest):
        word = rest[i].upper()
        if word == "DIR" and i + 1 < len(rest):
            directory = _resolve(f.dir, rest[i + 1])
            i += 2
            continue
        if word in ("NOOP", "DONE") and not (final and word == "DONE"):
            flags.add(word)
            i += 1
            continue
        raise f.error("unexpected word in node declaration", _NODE_RULE, rest[i])
    full = f.prefix + name
    if "+" in name or full in f.dag.nodes or name.upper() in (ALL_NODES, "PARENT", "CHILD"):
        raise f.error("duplicate or reserved node name", "node names are unique", name)
    spec = NodeSpec(full, _resolve(directory, file_name), directory, f.lineno, f.path, subdag=subdag,
                    final=final, noop="NOOP" in flags, done="DONE" in flags)
    if inline is not None:
        f.dag.descriptions[inline.name] = inline
        spec.description = inline.name
    elif not subdag:
        spec.description = file_name  # kept only if a SUBMIT-DESCRIPTION of that name exists (parse_dag)
    if final:
        if f.prefix:
            raise f.error("a splice cannot have a FINAL node", "FINAL only in the top DAG file (or its INCLUDEs)",
                          name)
        if f.dag.final is not None:
            raise f.error("more than one FINAL node", "a DAG has at most one FINAL node", name)
        f.dag.final = full
    f.dag.nodes[full] = spec
    f.dag.children[full] = []
    f.dag.parents[full] = []
    f.local.append(full)


def _parse_splice(f: _File, words: list[str]) -> None:
    if len(words) < 3:
        raise f.error("a splice needs a name and a DAG file", "SPLICE name file [DIR d]", " ".join(words))
    name, file_name = words[1], words[2]
    directory = f.dir
    if len(words) == 5 and words[3].upper() == "DIR":
        directory = _resolve(f.dir, words[4])
    elif len(words) != 3:
        raise f.error("unexpected words after SPLICE", "SPLICE name file [DIR d]", " ".join(words[3:]))
    path = _resolve(directory, file_name)
    _check_nesting(f, path, "SPLICE")
    if name in f.splices or f.prefix + name in f.dag.nodes:
        raise f.error("duplicate splice name", "node and splice names are unique", name)
    sub = _File(path, directory, f.prefix + name + "+", f.dag, f.stack + (path,))
    _parse_file(sub)
    f.pins[name] = (sub.pin_in, sub.pin_out)
    inner = set(sub.local)
    sources = [n for n in sub.local if not any(p in inner for p in f.dag.parents[n])]
    sinks = [n for n in sub.local if not any(c in inner for c in f.dag.children[n])]
    f.splices[name] = (sources, sinks)


MAX_NESTING = 64  # INCLUDE and SPLICE files within one another (each level costs a few frames)


def _check_nesting(f: _File, path: str, keyword: str) -> None:
    """INCLUDE and SPLICE form no cycle (a file reached from itself) and nest at most MAX_NESTING deep."""
    if path in f.stack:
        cycle = " -> ".join((*f.stack[f.stack.index(path):], path))
        raise f.error(f"{keyword} of a file that is being read", "INCLUDE and SPLICE files form no cycle", cycle)
    if len(f.stack) > MAX_NESTING:
        raise f.error(f"{keyword} nested too deep", f"INCLUDE and SPLICE nest at most {MAX_NESTING} deep", path)


def _set_done(f: _File, words: list[str]) -> None:
    """``DONE node``: one node, never ALL_NODES (DAGMan looks the name up as one node: ALL_NODES is
    not one of the commands it applies to)."""
    if len(words) != 2:
        raise f.error("bad DONE", "DONE node", " ".join(words))
    if words[1].upper() == ALL_NODES:
        raise f.error("DONE does not take ALL_NODES", "DONE names one node (ALL_NODES is not allowed)", words[1])
    spec = f.dag.nodes.get(f.prefix + words[1])
    if spec is None:
        f.order[0] += 1
        f.later.append(("DONE", words, f.lineno, f.current, f.order[0]))
        return
    if spec.final:
        raise _final_error(f, "DONE", spec)
    spec.done = True


def _targets(f: _File, names: list[str], role: Literal["parent", "child"]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name in f.splices:
            sources, sinks = f.splices[name]
            out.extend(sinks if role == "parent" else sources)
        elif f.prefix + name in f.dag.nodes:
            out.append(f.prefix + name)
        else:
            raise f.error(f"unknown {role} node", "PARENT/CHILD name declared nodes or splices", name)
    return out


def _parse_edges(f: _File, words: list[str]) -> None:
    upper = [w.upper() for w in words]
    if "CHILD" not in upper:
        raise f.error("PARENT without CHILD", "PARENT p... CHILD c...", " ".join(words))
    cut = upper.index("CHILD")
    parents, children = words[1:cut], words[cut + 1:]
    if not parents or not children:
        raise f.error("PARENT and CHILD each need at least one node", "PARENT p... CHILD c...",
                      " ".join(words))
    f.edges.append((parents, children, f.lineno))


def _settings_target(f: _File, name: str) -> list[NodeSpec] | None:
    """The node named (None for ALL_NODES, resolved at the end of the file; [] for a node not
    declared yet: DAGMan reads node declarations first, so a command may come before its JOB line)."""
    if name.upper() == ALL_NODES:
        return None
    spec = f.dag.nodes.get(f.prefix + name)
    return [] if spec is None else [spec]


def _property(f: _File, keyword: str, words: list[str]) -> str:
    """What a settings command sets: SCRIPT PRE and SCRIPT POST are different properties."""
    return f"SCRIPT {_script_parts(f, words)[2]}" if keyword == "SCRIPT" else keyword


_NOT_FOR_FINAL = ("RETRY", "PRIORITY", "CATEGORY", "ABORT-DAG-ON", "DONE")


def _final_error(f: _File, keyword: str, spec: NodeSpec) -> FormatError:
    """DAGMan's parse.cpp refuses these on a FINAL node (DONE: a warning, fatal under the default
    DAGMAN_USE_STRICT = 1)."""
    return f.error(f"a FINAL node cannot have {keyword}", "FINAL nodes take no " + ", ".join(_NOT_FOR_FINAL),
                   spec.name)


def _apply(f: _File, keyword: str, words: list[str], specs: list[NodeSpec], order: int) -> None:
    """Apply a command to ``specs`` unless a later command (by ``order``) already set the property."""
    if keyword == "VARS":
        mode, entries = _vars_entries(f, words)
        for spec in specs:
            for key, value in entries:
                if spec.var_order.get(key, -1) < order:
                    spec.vars[key], spec.var_modes[key], spec.var_order[key] = value, mode, order
        return
    prop = _property(f, keyword, words)
    handler = _SETTINGS[keyword]
    for spec in specs:
        if spec.final and keyword in _NOT_FOR_FINAL:  # ALL_NODES never lists FINAL: named here
            raise _final_error(f, keyword, spec)
        if spec.explicit.get(prop, -1) < order:
            handler(f, words, spec)
            spec.explicit[prop] = order


def _set_retry(f: _File, words: list[str], spec: NodeSpec) -> None:
    if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "UNLESS-EXIT"):
        raise f.error("bad RETRY", "RETRY node n [UNLESS-EXIT value]", " ".join(words))
    spec.retries = _int(f, words[2], "retry count", low=0)
    spec.unless_exit = _int(f, words[4], "UNLESS-EXIT value") if len(words) == 5 else None


def _vars_entries(f: _File, words: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """The mode (PREPEND, APPEND or "") and the ``key="value"`` entries of a VARS line."""
    text = f.current.split(None, 2)[2] if len(words) > 2 else ""
    if not text.strip():
        raise f.error("VARS without a value", 'VARS node key="value" ...', " ".join(words))
    mode = ""
    if text.split(None, 1)[0].upper() in ("PREPEND", "APPEND"):
        mode = text.split(None, 1)[0].upper()
        text = text.split(None, 1)[1] if len(text.split(None, 1)) > 1 else ""
    pos = 0
    entries: list[tuple[str, str]] = []
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _VARS_RE.match(text, pos)
        if match is None:
            raise f.error("bad VARS entry", 'VARS node key="value" ...', text[pos:].strip())
        key, value = match.group(1), re.sub(r"\\(.)", r"\1", match.group(2))
        if key.lower().startswith("queue"):
            raise f.error("reserved VARS name", "VARS names are not reserved words", key)
        entries.append((key, value))
        pos = match.end()
    if not entries:
        raise f.error("VARS without a value", 'VARS node key="value" ...', " ".join(words))
    return mode, entries


def _set_pre_skip(f: _File, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad PRE_SKIP", "PRE_SKIP node exit-code", " ".join(words))
    spec.pre_skip = _int(f, words[2], "PRE_SKIP exit code")


def _set_priority(f: _File, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad PRIORITY", "PRIORITY node n", " ".join(words))
    spec.priority = _int(f, words[2], "priority")


def _set_category(f: _File, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad CATEGORY", "CATEGORY node name", " ".join(words))
    spec.category = words[2] if words[2].startswith("+") else f.prefix + words[2] if f.prefix else words[2]


def _set_abort(f: _File, words: list[str], spec: NodeSpec) -> None:
    if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "RETURN"):
        raise f.error("bad ABORT-DAG-ON", "ABORT-DAG-ON node value [RETURN v]", " ".join(words))
    value = _int(f, words[2], "abort exit value")
    ret = _int(f, words[4], "DAG return value") if len(words) == 5 else None
    if ret is not None and not 0 <= ret <= 255:
        raise f.error("DAG return value out of range", "RETURN value is 0..255", words[4])
    spec.abort_on = (value, ret)


_SCRIPT_RULE = "SCRIPT [DEFER status time] [DEBUG file STDOUT|STDERR|ALL] PRE|POST|HOLD node executable [args]"


def _script_parts(f: _File, words: list[str]) -> tuple[int | None, float, str, str, list[str]]:
    i = 1
    defer_status, defer_time = None, 0.0
    if len(words) > i and words[i].upper() == "DEFER":
        if len(words) < i + 3:
            raise f.error("bad DEFER", _SCRIPT_RULE, " ".join(words))
        defer_status = _int(f, words[i + 1], "DEFER status")
        defer_time = float(_int(f, words[i + 2], "DEFER time", low=0))
        i += 3
    if len(words) > i and words[i].upper() == "DEBUG":
        if len(words) < i + 3 or words[i + 2].upper() not in ("STDOUT", "STDERR", "ALL"):
            raise f.error("bad DEBUG", _SCRIPT_RULE, " ".join(words))
        i += 3
    if len(words) < i + 3:
        raise f.error("bad SCRIPT", _SCRIPT_RULE, " ".join(words))
    if words[i].upper() not in ("PRE", "POST", "HOLD"):
        raise f.error("unknown script type", "SCRIPT type is PRE, POST or HOLD", words[i])
    return defer_status, defer_time, words[i].upper(), words[i + 1], words[i + 2:]


def _script_debug(f: _File, words: list[str], directory: str) -> tuple[str, str] | None:
    upper = [w.upper() for w in words[:5]]
    if "DEBUG" not in upper:
        return None
    at = upper.index("DEBUG")
    return _resolve(directory, words[at + 1]), words[at + 2].upper()


def _set_script(f: _File, words: list[str], spec: NodeSpec) -> None:
    defer_status, defer_time, kind, _name, argv = _script_parts(f, words)
    local = _resolve(spec.directory, argv[0])
    exe = local if not os.path.isabs(argv[0]) and os.path.exists(local) else argv[0]
    script = Script(kind, (exe, *argv[1:]), spec.directory, defer_status, defer_time,  # type: ignore[arg-type]
                    _script_debug(f, words, spec.directory))
    if script.debug is not None:
        _warn(f, "SCRIPT DEBUG: sheaf run appends every script's output to .sheaf/<dag>.scripts.log; the "
              "DEBUG file is not written")
    if kind == "PRE":
        spec.pre = script
    elif kind == "POST":
        spec.post = script
    else:
        spec.hold = script
        _warn(f, "SCRIPT HOLD: sheaf run never leaves a job held (a held attempt fails at once), so HOLD "
              "scripts are not run")


def _warn(f: _File, message: str) -> None:
    text = f"{f.path}:{f.lineno}: {message}"
    if text not in f.dag.warnings:
        f.dag.warnings.append(text)


_SETTINGS = {
    "RETRY": _set_retry, "SCRIPT": _set_script, "PRE_SKIP": _set_pre_skip,
    "PRIORITY": _set_priority, "CATEGORY": _set_category, "ABORT-DAG-ON": _set_abort,
}


def _settings(f: _File, keyword: str, words: list[str]) -> None:
    if keyword == "SCRIPT":
        name = _script_parts(f, words)[3]
    elif len(words) < 2:
        raise f.error(f"{keyword} needs a node name", f"{keyword} node ...", " ".join(words))
    else:
        name = words[1]
    specs = _settings_target(f, name)
    f.order[0] += 1
    if specs is None:
        f.all_nodes.append((keyword, words, f.lineno, f.current, f.order[0]))
    elif not specs:
        f.later.append((keyword, words, f.lineno, f.current, f.order[0]))
    else:
        _apply(f, keyword, words, specs, f.order[0])


def _apply_later(f: _File) -> None:
    """Commands that named a node before its declaration, in file order (``order`` keeps "the last
    one wins" against commands applied earlier)."""
    for keyword, words, lineno, line, order in f.later:
        f.lineno, f.current = lineno, line
        name = _script_parts(f, words)[3] if keyword == "SCRIPT" else words[1]
        spec = f.dag.nodes.get(f.prefix + name)
        if spec is None:
            raise f.error("unknown node", "settings name a node declared in the DAG file", name)
        if keyword == "DONE":
            if spec.final:
                raise _final_error(f, "DONE", spec)
            spec.done = True
        else:
            _apply(f, keyword, words, [spec], order)


def _file_option(f: _File, words: list[str], keyword: str) -> str:
    if len(words) < 2:
        raise f.error(f"{keyword} needs a file name", f"{keyword} file", " ".join(words))
    return _resolve(f.dir, words[1])


def _parse_config(f: _File, words: list[str]) -> None:
    path = _file_option(f, words, "CONFIG")
    if f.dag.config_path is not None and f.dag.config_path != path:
        raise f.error("a second CONFIG file", "a DAG has at most one CONFIG file", words[1])
    f.dag.config_path = path
    f.dag.config.update(parse_config(path))


def parse_config(path: str) -> dict[str, str]:
    """A DAGMan configuration file (HTCondor config syntax, ``KEY = value``); keys upper-cased."""
    out: dict[str, str] = {}
    lines = read_text(path, "DAGMan config file").splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip() or " " in key.strip():
            raise FormatError("not a configuration assignment", rule="KEY = value", value=line,
                              path=path, line=number)
        out[key.strip().upper()] = value.strip()
    return out


def _parse_misc(f: _File, keyword: str, words: list[str]) -> None:
    dag = f.dag
    if keyword == "MAXJOBS":
        if len(words) != 3:
            raise f.error("bad MAXJOBS", "MAXJOBS category n", " ".join(words))
        value = _int(f, words[2], "MAXJOBS value", low=0)
        dag.maxjobs[words[1] if not f.prefix or words[1].startswith("+") else f.prefix + words[1]] = value
    elif keyword == "CONFIG":
        _parse_config(f, words)
    elif keyword == "DOT":
        _parse_dot(f, words)
    elif keyword == "JOBSTATE_LOG":
        dag.jobstate_log = dag.jobstate_log or _file_option(f, words, "JOBSTATE_LOG")
    elif keyword == "NODE_STATUS_FILE":
        timed = len(words) > 2 and words[2].upper() != "ALWAYS-UPDATE"
        secs = float(_int(f, words[2], "update time", low=0)) if timed else 60.0
        dag.node_status_file = dag.node_status_file or (_file_option(f, words, "NODE_STATUS_FILE"), secs)
    elif keyword == "DONE":
        _set_done(f, words)
    elif keyword == "INCLUDE":
        path = _file_option(f, words, "INCLUDE")
        _check_nesting(f, path, "INCLUDE")
        sub = _File(path, f.dir, f.prefix, dag, f.stack + (path,))
        sub.splices, sub.pins, sub.pin_in, sub.pin_out = f.splices, f.pins, f.pin_in, f.pin_out
        sub.local, sub.order, sub.later, sub.connects = f.local, f.order, f.later, f.connects
        _parse_body(sub)
        f.edges.extend(sub.edges)
        f.all_nodes.extend(sub.all_nodes)


def _parse_dot(f: _File, words: list[str]) -> None:
    """``DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE header]``; the first DOT wins."""
    path = _file_option(f, words, "DOT")
    update, overwrite, include = False, True, None
    i = 2
    while i < len(words):
        word = words[i].upper()
        if word in ("UPDATE", "DONT-UPDATE"):
            update = word == "UPDATE"
        elif word in ("OVERWRITE", "DONT-OVERWRITE"):
            overwrite = word == "OVERWRITE"
        elif word == "INCLUDE" and i + 1 < len(words):
            include = _resolve(f.dir, words[i + 1])
            i += 1
        else:
            raise f.error("unknown DOT option",
                          "DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE header]", words[i])
        i += 1
    if f.dag.dot is None:
        f.dag.dot = path
        f.dag.dot_options = DotOptions(update, overwrite, include)
        if update or not overwrite or include:
            _warn(f, "DOT: sheaf run writes the graph once, at the start of the run; UPDATE, DONT-OVERWRITE "
                  "and INCLUDE are not carried out")


def _parse_env(f: _File, words: list[str]) -> None:
    """``ENV GET name...`` / ``ENV SET name=value;...`` (DAGMan's own environment, which its scripts
    inherit and ``$ENV()``/``getenv`` read)."""
    rule = "ENV GET name [name ...] | ENV SET name=value[;name=value...]"
    if len(words) < 3 or words[1].upper() not in ("GET", "SET"):
        raise f.error("bad ENV", rule, " ".join(words))
    if words[1].upper() == "GET":
        f.dag.env_get += tuple(n for w in words[2:] for n in w.replace(",", " ").split())
        return
    text = f.current.split(None, 2)[2]
    for item in text.split(";"):
        if not item.strip():
            continue
        name, eq, value = item.strip().partition("=")
        if not eq or not name or any(c.isspace() for c in name):
            raise f.error("bad ENV SET entry", rule, item.strip())
        f.dag.env[name] = value


def _parse_set_job_attr(f: _File, words: list[str]) -> None:
    text = f.current.split(None, 1)[1] if len(words) > 1 else ""
    name, eq, value = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][\w.]*", name.strip()) or not value.strip():
        raise f.error("bad SET_JOB_ATTR", "SET_JOB_ATTR name = value", text)
    f.dag.job_attrs[name.strip()] = value.strip()
    _warn(f, f"SET_JOB_ATTR {name.strip()}: sheaf run has no DAGMan job ad in a schedd; the attribute is "
          "kept with the DAG but nothing reads it")


def _parse_save_point(f: _File, words: list[str]) -> None:
    if len(words) not in (2, 3) or words[1].upper() == ALL_NODES:
        raise f.error("bad SAVE_POINT_FILE", "SAVE_POINT_FILE node [file] (one node, not ALL_NODES)",
                      " ".join(words))
    spec = f.dag.nodes.get(f.prefix + words[1])
    if spec is None:
        raise f.error("unknown node", "SAVE_POINT_FILE names a node declared before it", words[1])
    default = f"{words[1]}-{os.path.basename(f.dag.path)}.save"
    spec.save_point = _resolve(os.path.join(os.path.dirname(f.dag.path), "save_files"),
                               words[2] if len(words) == 3 else default)
    _warn(f, f"SAVE_POINT_FILE {words[1]}: sheaf run keeps a durable journal instead and does not write "
          "save files (condor_submit_dag -load_save has no sheaf equivalent)")


def _parse_pin(f: _File, keyword: str, words: list[str]) -> None:
    if len(words) != 3:
        raise f.error(f"bad {keyword}", f"{keyword} node pin-number", " ".join(words))
    number = _int(f, words[2], "pin number", low=1)
    pins = f.pin_in if keyword == "PIN_IN" else f.pin_out
    pins.setdefault(number, []).append(f.prefix + words[1])  # checked once the file is read


def _parse_connect(f: _File, words: list[str]) -> None:
    if len(words) != 3:
        raise f.error("bad CONNECT", "CONNECT output-splice input-splice", " ".join(words))
    f.connects.append((words[1], words[2], f.lineno))


def _connect(f: _File, out_name: str, in_name: str) -> None:
    """CONNECT: PIN_OUT n of the output splice's nodes become parents of PIN_IN n's nodes."""
    for name in (out_name, in_name):
        if name not in f.pins:
            raise f.error("CONNECT names no splice", "CONNECT joins two splices of this file", name)
    outs, ins = f.pins[out_name][1], f.pins[in_name][0]
    for pins, name, kind in ((outs, out_name, "PIN_OUT"), (ins, in_name, "PIN_IN")):
        if sorted(pins) != list(range(1, len(pins) + 1)):
            raise f.error(f"{kind}s are not numbered 1..n", "pins are numbered consecutively from 1",
                          f"{name}: {sorted(pins)}")
    if len(outs) != len(ins):
        raise f.error("pin counts differ", "the output splice's PIN_OUTs match the input splice's PIN_INs",
                      f"{out_name}: {len(outs)} PIN_OUT, {in_name}: {len(ins)} PIN_IN")
    pinned = {n for nodes in ins.values() for n in nodes}
    loose = [n for n in f.splices[in_name][0] if n not in pinned]
    if loose:
        raise f.error("an initial node of the input splice has no PIN_IN",
                      "every initial node of a CONNECT's input splice is on a PIN_IN", loose[0])
    for number, parents in outs.items():
        for p in parents:
            for c in ins[number]:
                f.dag.children[p].append(c)
                f.dag.parents[c].append(p)


# Commands DAGMan knows that sheaf refuses, each with why (a refusal names the line).
_REFUSED = {
    "SERVICE": "SERVICE nodes (run beside the DAG, removed when it ends) are not run by sheaf run",
    "PROVISIONER": "PROVISIONER nodes (which provision a pool for the DAG) are not run by sheaf run",
    "TOLERANCE": "TOLERANCE (the job failures a multi-proc node tolerates) is not run by sheaf run; "
                 "a node fails when any of its procs fails",
    "WEAK": "WEAK dependencies (a child that waits for its parents to finish, not to succeed) are not run "
            "by sheaf run",
}
_OTHER = ("MAXJOBS", "CONFIG", "DOT", "JOBSTATE_LOG", "NODE_STATUS_FILE", "DONE", "INCLUDE")
_KNOWN = ("JOB, FINAL, SUBDAG EXTERNAL, SPLICE, SUBMIT-DESCRIPTION, PARENT/CHILD, SCRIPT, RETRY, VARS, "
          "PRE_SKIP, PRIORITY, CATEGORY, MAXJOBS, ABORT-DAG-ON, DONE, CONFIG, DOT, NODE_STATUS_FILE, "
          "JOBSTATE_LOG, INCLUDE, ENV, SET_JOB_ATTR, SAVE_POINT_FILE, CONNECT, PIN_IN, PIN_OUT, REJECT")


def _parse_body(f: _File) -> None:
    lines = _read_lines(f)
    i = 0
    while i < len(lines):
        f.lineno, words, f.current = lines[i]
        i += 1
        keyword = words[0].upper()
        if keyword in ("JOB", "FINAL", "SUBDAG", "SUBMIT-DESCRIPTION"):
            i = _parse_declaration(f, keyword, lines, i)
        elif keyword == "SPLICE":
            _parse_splice(f, words)
        elif keyword == "PARENT":
            _parse_edges(f, words)
        elif keyword in _SETTINGS or keyword == "VARS":  # VARS: _apply keeps its entries per macro
            _settings(f, keyword, words)
        elif keyword in _OTHER:
            _parse_misc(f, keyword, words)
        elif keyword in ("ENV", "SET_JOB_ATTR", "SAVE_POINT_FILE", "CONNECT", "PIN_IN", "PIN_OUT"):
            _parse_extra(f, keyword, words)
        elif keyword in _REFUSED:
            raise f.error(f"{keyword} is not supported", _REFUSED[keyword], f.current)
        elif keyword == "REJECT":
            raise f.error("the DAG file is marked REJECT", "a REJECT DAG cannot run", f.current)
        else:
            raise f.error(f"unknown DAG command (DAGMan's commands: {_KNOWN})", "a known DAGMan command", words[0])


def _parse_extra(f: _File, keyword: str, words: list[str]) -> None:
    if keyword == "ENV":
        _parse_env(f, words)
    elif keyword == "SET_JOB_ATTR":
        _parse_set_job_attr(f, words)
    elif keyword == "SAVE_POINT_FILE":
        _parse_save_point(f, words)
    elif keyword == "CONNECT":
        _parse_connect(f, words)
    else:
        _parse_pin(f, keyword, words)


def _parse_declaration(f: _File, keyword: str, lines: list[tuple[int, list[str], str]], i: int) -> int:
    """JOB, FINAL, SUBDAG EXTERNAL and SUBMIT-DESCRIPTION, which may open an inline description."""
    words = _node_words(f, f.current)
    subdag = keyword == "SUBDAG"
    if subdag:
        if len(words) < 2 or words[1].upper() != "EXTERNAL":
            raise f.error("SUBDAG must be EXTERNAL", "SUBDAG EXTERNAL name file", " ".join(words))
        words = words[1:]
    inline = None
    if len(words) >= 3 and _inline_end(words[2]) is not None and not subdag:
        if len(words) > 3 or (words[2] != "{" and not words[2].startswith("@=")):
            raise f.error("text after the opening of an inline description",
                          "the opening { (or @=TAG) ends its line; node options follow the closing }",
                          " ".join(words[2:]))
        name = words[1] if keyword == "SUBMIT-DESCRIPTION" else f"{f.prefix}{words[1]}-InlineDesc"
        inline, rest, i = _inline(f, lines, i, words[2], name)
        words = [*words[:3], *rest]
    if keyword == "SUBMIT-DESCRIPTION":
        if inline is None or len(words) != 3:
            raise f.error("bad SUBMIT-DESCRIPTION", "SUBMIT-DESCRIPTION name { ... }", f.current)
        if inline.name in f.dag.descriptions:
            raise f.error("duplicate SUBMIT-DESCRIPTION name", "description names are unique", inline.name)
        f.dag.descriptions[inline.name] = inline
        return i
    _parse_node_decl(f, words, subdag=subdag, final=keyword == "FINAL", inline=inline)
    return i


def _parse_file(f: _File) -> None:
    _parse_body(f)
    _apply_later(f)
    for pins in (f.pin_in, f.pin_out):
        for nodes in pins.values():
            for name in nodes:
                if name not in f.dag.nodes:
                    f.lineno = 0
                    raise f.error("unknown node", "PIN_IN/PIN_OUT name nodes of their splice",
                                  name[len(f.prefix):])
    for out_name, in_name, lineno in f.connects:
        f.lineno = lineno
        _connect(f, out_name, in_name)
    for parents, children, lineno in f.edges:
        f.lineno = lineno
        for p in _targets(f, parents, "parent"):
            for c in _targets(f, children, "child"):
                if f.dag.nodes[p].final or f.dag.nodes[c].final:
                    raise f.error("a FINAL node cannot have parents or children",
                                  "FINAL nodes are not in PARENT/CHILD", p if f.dag.nodes[p].final else c)
                f.dag.children[p].append(c)
                f.dag.parents[c].append(p)
    specs = [f.dag.nodes[n] for n in f.local if not f.dag.nodes[n].final]  # ALL_NODES skips FINAL
    for keyword, words, lineno, line, order in f.all_nodes:
        f.lineno = lineno
        f.current = line
        _apply(f, keyword, words, specs, order)


def _cycle_of(dag: Dag) -> tuple[str, ...]:
    indegree = {n: len(dag.parents[n]) for n in dag.nodes}
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for child in dag.children[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    if seen == len(dag.nodes):
        return ()
    return tuple(_find_cycle(dag, {n for n, d in indegree.items() if d > 0}))


def _find_cycle(dag: Dag, remaining: set[str]) -> list[str]:
    """Walk parents inside the unresolved set until a node repeats (every such node has one)."""
    node = min(remaining)
    order: dict[str, int] = {}
    path: list[str] = []
    while node not in order:
        order[node] = len(path)
        path.append(node)
        node = min(p for p in dag.parents[node] if p in remaining)
    cycle = path[order[node]:] + [node]
    cycle.reverse()
    return cycle


def parse_dag(path: str, *more: str) -> Dag:
    """Parse a DAG file (with its splices, includes and CONFIG file) into a :class:`Dag`; with
    ``more`` files, all of them into one DAG as ``condor_submit_dag a.dag b.dag`` does: node names
    unique across the files, ALL_NODES per file, at most one FINAL node and one CONFIG file in all,
    the first file naming the run (its rescue DAG, its journal)."""
    path = os.path.abspath(path)
    paths = (path, *(os.path.abspath(p) for p in more))
    dag = Dag(path, {}, {}, {}, {}, {}, files=paths)
    for one in paths:
        f = _File(one, os.path.dirname(one), "", dag, (one,))
        _parse_file(f)
    for spec in dag.nodes.values():
        if spec.description is not None and spec.description not in dag.descriptions:
            spec.description = None  # a submit file after all
    dag.cycle = _cycle_of(dag)
    return dag


def parse_rescue(path: str, dag: Dag) -> Rescue:
    """A partial rescue DAG: ``DONE node`` and ``RETRY node n`` lines naming nodes of ``dag``."""
    done: set[str] = set()
    retries: dict[str, int] = {}
    f = _File(path, os.path.dirname(path), "", dag, (path,))
    for lineno, words, _line in _read_lines(f, "rescue DAG"):
        f.lineno = lineno
        keyword = words[0].upper()
        if keyword not in ("DONE", "RETRY") or len(words) < 2 or words[1] not in dag.nodes:
            raise f.error("not a rescue DAG line for this DAG", "DONE node | RETRY node n",
                          " ".join(words))
        if keyword == "DONE":
            done.add(words[1])
        else:
            retries[words[1]] = _int(f, words[2] if len(words) > 2 else "", "retry count", low=0)
    return Rescue(path, frozenset(done), retries)
