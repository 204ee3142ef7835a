"""The DAGMan input file: ``<name>.dag`` as pegasus-plan (or a person) writes it, parsed into a :class:`Dag`.

Grammar (one command per line; keywords case-insensitive, ``-`` and ``_`` alike in them; ``#`` or
``//`` starts a comment line; a word in quotes may hold blanks, and a file or directory name loses its
quotes)::

    JOB name submit [DIR d] [NOOP] [DONE]        FINAL name submit [DIR d] [NOOP]
    SERVICE name submit [DIR d] [NOOP]          PROVISIONER name submit [DIR d]
    SUBDAG EXTERNAL name dagfile [DIR d] [NOOP] [DONE]
    SPLICE name dagfile [DIR d]                  INCLUDE file
    [WEAK] PARENT p1 p2 ... CHILD c1 c2 ...
    RETRY node n [UNLESS-EXIT v]                 VARS node [PREPEND|APPEND] key="value" ...
    SCRIPT [DEFER status time] [DEBUG f type] PRE|POST|HOLD node exe args...
    PRE_SKIP node code    PRIORITY node n    CATEGORY node cat    MAXJOBS cat n
    TOLERANCE node value[%] [FAIL-FAST|WAIT]
    ABORT-DAG-ON node value [RETURN v]           DONE node         (rescue files)
    CONFIG file    DOT file [opts]    NODE_STATUS_FILE file [secs] [ALWAYS-UPDATE]    JOBSTATE_LOG file

``node`` may be ``ALL_NODES`` for RETRY, VARS, SCRIPT, PRE_SKIP, PRIORITY, CATEGORY, ABORT-DAG-ON and
TOLERANCE
(``_dagman_settings`` says how such settings combine).  Parsing never touches anything but the files
it reads.  A broken line raises :class:`sheaf.errors.FormatError` with path, line, rule and value.

This module reads a file line by line and hands each command to its part, each a module of its own
that imports only the ones before it: the records a DAG is parsed into (``_dagman_records``, which
states a parsed DAG's invariants), one file's parse state (``_dagman_file``), node declarations
(``_dagman_nodes``), per-node settings (``_dagman_settings``) and DAG-wide commands
(``_dagman_commands``).  SPLICE and INCLUDE, which read a file within a file, PARENT/CHILD and the
cycle check stay here.  The records are re-exported, so that ``Dag`` and ``NodeSpec`` can be imported
from here as from ``_dagman_records``.
"""

from __future__ import annotations

__all__ = ["Dag", "DotOptions", "InlineDescription", "NodeSpec", "Rescue", "Script", "check_categories",
           "parse_dag", "parse_rescue"]

import os
from typing import Literal

from sheaf._gc import gc_paused
from sheaf.condor._dagman_commands import COMMANDS, check_pins, connect
from sheaf.condor._dagman_file import (
    DagFile,
    bare,
    dag_int,
    dag_keyword,
    file_option,
    read_lines,
    resolve,
    split_words,
    warn,
)
from sheaf.condor._dagman_nodes import parse_declaration
from sheaf.condor._dagman_records import (
    ALL_NODES,
    Dag,
    DotOptions,
    InlineDescription,
    NodeSpec,
    Rescue,
    Script,
)
from sheaf.condor._dagman_settings import (
    SETTINGS,
    apply_later,
    apply_setting,
    check_kind,
    parse_setting,
    set_done,
)
from sheaf.model import cycle_in, kahn_levels


def _parse_splice(f: DagFile, words: list[str]) -> None:
    if len(words) < 3:
        raise f.error("a splice needs a name and a DAG file", "SPLICE name file [DIR d]", " ".join(words))
    name, file_name = words[1], bare(words[2])
    directory = f.dir
    if len(words) == 5 and dag_keyword(words[3]) == "DIR":
        directory = resolve(f.dir, bare(words[4]))
    elif len(words) != 3:
        raise f.error("unexpected words after SPLICE", "SPLICE name file [DIR d]", " ".join(words[3:]))
    path = resolve(directory, file_name)
    if f.dag.own_dirs:
        directory = os.path.dirname(path)
    _check_nesting(f, path, "SPLICE")
    _check_readable(f, path, "SPLICE")
    if name in f.splices or f.prefix + name in f.dag.nodes:
        raise f.error("duplicate splice name", "node and splice names are unique", name)
    sub = DagFile(path, directory, f.prefix + name + "+", f.dag, (*f.stack, path))
    sub.rank, sub.key = f.rank, (*f.key, 0, f.lineno)  # DAGMan's first pass reads it where it is named
    _parse_file(sub)
    f.pins[name] = (sub.pin_in, sub.pin_out)
    members = sub.local + sub.nested  # its initial and final nodes may be those of splices within it
    f.nested.extend(members)
    inner = set(members)
    sources = [n for n in members if not any(p in inner for p in f.dag.parents[n])]
    sinks = [n for n in members if not any(c in inner for c in f.dag.children[n])]
    f.splices[name] = (sources, sinks)


MAX_NESTING = 64  # INCLUDE and SPLICE files within one another (each level costs a few frames)


def _check_nesting(f: DagFile, path: str, keyword: str) -> None:
    """INCLUDE and SPLICE form no cycle (a file reached from itself) and nest at most MAX_NESTING deep."""
    if path in f.stack:
        cycle = " -> ".join((*f.stack[f.stack.index(path):], path))
        raise f.error(f"{keyword} of a file that is being read", "INCLUDE and SPLICE files form no cycle",
                      cycle)
    if len(f.stack) > MAX_NESTING:
        raise f.error(f"{keyword} nested too deep", f"INCLUDE and SPLICE nest at most {MAX_NESTING} deep",
                      path)


def _check_readable(f: DagFile, path: str, keyword: str) -> None:
    """A SPLICE or INCLUDE file that cannot be read is an error at the line naming it."""
    if not os.access(path, os.R_OK) or os.path.isdir(path):
        raise f.error(f"cannot read the {keyword} file", f"the {keyword} file exists and is readable", path)


def _parse_include(f: DagFile, words: list[str]) -> None:
    """INCLUDE: the file's commands are this file's (its nodes, splices and command order shared)."""
    if len(words) > 2:
        raise f.error("unexpected words after INCLUDE", "INCLUDE file", " ".join(words[2:]))
    path = file_option(f, words, "INCLUDE")
    _check_nesting(f, path, "INCLUDE")
    _check_readable(f, path, "INCLUDE")
    sub = DagFile(path, os.path.dirname(path) if f.dag.own_dirs else f.dir, f.prefix, f.dag, (*f.stack, path))
    sub.splices, sub.pins, sub.pin_in, sub.pin_out = f.splices, f.pins, f.pin_in, f.pin_out
    sub.pin_lines = f.pin_lines
    sub.local, sub.nested, sub.order = f.local, f.nested, f.order
    sub.later, sub.edges = f.later, f.edges
    # DAGMan's second pass over the file reads INCLUDE: its nodes follow the including file's own
    sub.rank, sub.key = f.rank, (*f.key, 1, f.lineno)
    _parse_body(sub)
    f.all_nodes.extend(sub.all_nodes)


def _targets(f: DagFile, names: list[str], role: Literal["parent", "child"]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name in f.splices:
            sources, sinks = f.splices[name]
            out.extend(sinks if role == "parent" else sources)
        elif f.prefix + name in f.dag.nodes:
            out.append(f.prefix + name)
        else:
            raise f.error(f"unknown {role} node", "PARENT/CHILD name declared nodes or splices (not SERVICE "
                          "nodes)", name)
    return out


def _parse_edges(f: DagFile, words: list[str]) -> None:
    """``[WEAK] PARENT p... CHILD c...`` (a WEAK child needs its parents finished, not successful)."""
    weak = words[0].upper() == "WEAK"
    if weak:
        words = words[1:]
        if not words or words[0].upper() != "PARENT":
            raise f.error("WEAK without PARENT", "WEAK PARENT p... CHILD c...", f.current)
    upper = [w.upper() for w in words]
    if "CHILD" not in upper:
        raise f.error("PARENT without CHILD", "[WEAK] PARENT p... CHILD c...", " ".join(words))
    cut = upper.index("CHILD")
    # a CHILD word after the first is passed over, as DAGMan's parser passes it
    parents = words[1:cut]
    children = [w for w, u in zip(words[cut + 1:], upper[cut + 1:], strict=True) if u != "CHILD"]
    if not parents or not children:
        raise f.error("PARENT and CHILD each need at least one node", "[WEAK] PARENT p... CHILD c...",
                      " ".join(words))
    f.edges.append((parents, children, f.lineno, weak))


_KNOWN = ("JOB, FINAL, SERVICE, PROVISIONER, SUBDAG EXTERNAL, SPLICE, SUBMIT-DESCRIPTION, PARENT/CHILD, "
          "SCRIPT, RETRY, VARS, WEAK PARENT/CHILD, TOLERANCE, PRE_SKIP, PRIORITY, CATEGORY, MAXJOBS, "
          "ABORT-DAG-ON, DONE, CONFIG, DOT, NODE_STATUS_FILE, JOBSTATE_LOG, INCLUDE, ENV, SET_JOB_ATTR, "
          "SAVE_POINT_FILE, CONNECT, PIN_IN, PIN_OUT, REJECT")


#: commands whose text after their first words DAGMan reads as it is written, quotes and all (a script's
#: arguments, VARS values, ENV and SET_JOB_ATTR assignments): their lines are not split at quotes
_RAW_TEXT = frozenset({"SCRIPT", "VARS", "ENV", "SET_JOB_ATTR"})
_SUBMIT_TIME = frozenset({"CONFIG", "ENV", "SET_JOB_ATTR"})  # condor_submit_dag's, read from the top files
#: what would change the DAG's shape after DAGMan has set its edges up for the run: not read from a rescue DAG
_NOT_IN_RESCUE = frozenset({"SPLICE", "INCLUDE", "PARENT", "WEAK", "CONNECT", "PIN_IN", "PIN_OUT"})


def _parse_body(f: DagFile) -> None:
    lines = read_lines(f)
    i = 0
    while i < len(lines):
        f.lineno, words, f.current = lines[i]
        i += 1
        keyword = dag_keyword(words[0])
        if keyword not in _RAW_TEXT and ('"' in f.current or "'" in f.current):
            words = split_words(f, f.current)
        if f.rescue is not None and keyword in _NOT_IN_RESCUE:
            raise f.error(f"{words[0]} in a rescue DAG: sheaf does not change the DAG's shape from its "
                          "rescue DAG", "a rescue DAG's lines set nodes of its DAG (no SPLICE, INCLUDE, "
                          "PARENT/CHILD, CONNECT or PIN_IN/PIN_OUT)", words[0])
        if keyword in ("JOB", "FINAL", "SERVICE", "PROVISIONER", "SUBDAG", "SUBMIT_DESCRIPTION"):
            known = len(f.local)
            i = parse_declaration(f, keyword, words, lines, i)
            if f.rescue is not None and len(f.local) > known:  # one naming a node of the DAG is a duplicate
                raise f.error("a node declared in a rescue DAG: sheaf adds no nodes from a rescue DAG",
                              "a rescue DAG's lines set nodes of its DAG", f.local[known])
            for name in f.local[known:]:
                f.rank[name] = (*f.key, 0, f.lineno)
        elif keyword == "SPLICE":
            _parse_splice(f, words)
        elif keyword == "INCLUDE":
            _parse_include(f, words)
        elif keyword in ("PARENT", "WEAK"):
            _parse_edges(f, words)
        elif f.rescue is not None and keyword in ("DONE", "RETRY"):
            _rescue_line(f, keyword, words)
        elif keyword in SETTINGS or keyword == "VARS":  # VARS: apply_setting keeps its entries per macro
            if keyword != "VARS" or f.dag.vars_read:
                parse_setting(f, keyword, words)
        elif keyword == "DONE":
            set_done(f, words)
        elif keyword in _SUBMIT_TIME and f.rescue is not None:
            warn(f, f"{keyword} in a rescue DAG takes no effect: DAGMan reads CONFIG, ENV and SET_JOB_ATTR "
                 "from the DAG files it is given, not from the rescue DAG")
        elif keyword in _SUBMIT_TIME and f.prefix:
            warn(f, f"{keyword} in a splice takes no effect: DAGMan reads CONFIG, ENV and SET_JOB_ATTR "
                 "from the DAG files it is given, not from their splices")
        elif keyword in COMMANDS:
            COMMANDS[keyword](f, words)
        elif keyword == "REJECT":
            raise f.error("the DAG file is marked REJECT", "a REJECT DAG cannot run", f.current)
        else:
            raise f.error(f"'{words[0]}' is not a valid DAG command", f"a DAGMan command ({_KNOWN})",
                          words[0])


def _parse_file(f: DagFile) -> None:
    _parse_body(f)
    apply_later(f)
    check_pins(f)
    weak: dict[tuple[str, str], int] = {}  # WEAK declarations per pair
    for parents, children, lineno, is_weak in f.edges:  # in line order, as DAGMan's second pass
        f.lineno = lineno
        if is_weak is None:  # CONNECT: its check sees the parents the PARENT lines before it gave
            connect(f, parents[0], children[0])
            continue
        # DAGMan sorts a line's parents and children by node id: edges, readiness, DAG_PARENT_NAMES follow
        line_children = sorted(dict.fromkeys(_targets(f, children, "child")), key=f.rank.__getitem__)
        for p in sorted(dict.fromkeys(_targets(f, parents, "parent")), key=f.rank.__getitem__):
            for c in line_children:
                if f.dag.nodes[p].final or f.dag.nodes[c].final:
                    raise f.error("a FINAL node cannot have parents or children",
                                  "FINAL nodes are not in PARENT/CHILD", p if f.dag.nodes[p].final else c)
                if f.dag.provisioner in (p, c):  # DAGMan's Node::CanAddParent/CanAddChildren
                    raise f.error("a PROVISIONER node cannot have parents or children",
                                  "PROVISIONER nodes are not in PARENT/CHILD", f.dag.provisioner)
                f.dag.children[p].append(c)
                f.dag.parents[c].append(p)
                if is_weak:
                    weak[p, c] = weak.get((p, c), 0) + 1
    # strongest wins (DAGMan's EDGE.md): a pair is weak only when every declaration of it is WEAK
    f.dag.weak.update(pair for pair, n in weak.items() if f.dag.children[pair[0]].count(pair[1]) == n)
    specs = [f.dag.nodes[n] for n in f.local if not f.dag.nodes[n].final]  # ALL_NODES skips FINAL
    for keyword, words, lineno, line, order in f.all_nodes:
        f.lineno = lineno
        f.current = line
        apply_setting(f, keyword, words, specs, order)


def _cycle_of(dag: Dag) -> tuple[str, ...]:
    _, blocked = kahn_levels(dag.nodes, dag.parents.__getitem__, dag.children.__getitem__)
    return tuple(cycle_in(sorted(blocked), dag.parents.__getitem__))


def parse_dag(path: str, *more: str, read_vars: bool = True, base: str | None = None,
              usedagdir: bool = False) -> Dag:
    """Parse a DAG file (with its splices, includes and CONFIG file) into a :class:`Dag`; with
    ``more`` files, all of them into one DAG as ``condor_submit_dag a.dag b.dag`` does: node names
    unique across the files, ALL_NODES per file, at most one FINAL node and one CONFIG file in all,
    the first file naming the run (its rescue DAG, its journal).  ``read_vars=False`` passes over the
    VARS lines, unread and unchecked, for a reader of the DAG's shape that submits nothing
    (``sheaf predict``: a plan's DAG is largely its VARS lines).  ``base``: the directory the files'
    relative paths (submit files, DIR, SPLICE, INCLUDE, scripts) start from and nodes run in --
    DAGMan's working directory; ``None`` takes each file's own directory.  ``usedagdir``
    (``-usedagdir``, with ``base`` None): a SPLICE's and an INCLUDE's file in its own directory too,
    and a node's ``DIR`` refused, as DAGMan parses then."""
    path = os.path.abspath(path)
    paths = (path, *(os.path.abspath(p) for p in more))
    dag = Dag(path, {}, {}, {}, {}, {}, files=paths, vars_read=read_vars, own_dirs=usedagdir)
    rank: dict[str, tuple[int, ...]] = {}
    order = [0]  # one command order for all the files: a later file's line is a later line of the DAG
    with gc_paused():  # a few objects a line, no cycles among them
        for number, one in enumerate(paths):
            where = os.path.abspath(base) if base is not None else os.path.dirname(one)
            f = DagFile(one, where, "", dag, (one,))
            f.rank, f.key, f.order = rank, (number,), order
            _parse_file(f)
    for spec in (*dag.nodes.values(), *dag.services.values()):
        if spec.description is not None and spec.description not in dag.descriptions:
            spec.description = None  # a submit file after all
    _one_edge_per_pair(dag)
    dag.cycle = _cycle_of(dag)
    return dag


def check_categories(dag: Dag) -> None:
    """DAGMan's check of its categories once every DAG file is read (``Dag::CheckThrottleCats``): a
    MAXJOBS category no node is in, and a category with nodes but no MAXJOBS, are warnings that
    ``DAGMAN_USE_STRICT`` makes fatal from 2.  A category throttled to 0 is warned about here too
    (DAGMan says nothing): DAGMan never submits its nodes, so the DAG waits until it is stopped."""
    members: dict[str, list[str]] = {}
    for name, spec in dag.nodes.items():
        if spec.category is not None:
            members.setdefault(spec.category, []).append(name)
    for category, limit in dag.maxjobs.items():
        path, line, _scope = dag.maxjobs_lines[category]
        nodes = members.get(category, [])
        if not nodes:
            _dag_warning(dag, path, line, f"category {category} has no assigned nodes, so the MAXJOBS "
                         f"value ({limit}) will have no effect", strict=2)
        elif limit == 0:
            shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
            _dag_warning(dag, path, line, f"MAXJOBS {category} 0: DAGMan submits no node of category "
                         f"{category} ({shown}); they and the nodes after them wait until the DAG is "
                         "stopped (sheaf remove) or halted, as DAGMan waits", strict=0)
    for category, (path, line) in dag.category_lines.items():
        if category not in dag.maxjobs:
            if category not in members:  # named by a CATEGORY that a later one replaced
                _dag_warning(dag, path, line, f"category {category} has no assigned nodes", strict=2)
            _dag_warning(dag, path, line, f"category {category} has no MAXJOBS value set", strict=2)


def _dag_warning(dag: Dag, path: str, line: int, message: str, strict: int) -> None:
    text = f"{path}:{line}: {message}"
    if text not in dag.warnings:
        dag.warnings.append(text)
        if strict:
            dag.strict_warnings.append((strict, path, line, message))


def _one_edge_per_pair(dag: Dag) -> None:
    """A dependency declared twice (two PARENT lines, or a PARENT line and a CONNECT) is one edge, as
    DAGMan keeps its edges: a child lists each parent once (``$(DAG_PARENT_NAMES)``), first one first."""
    for table in (dag.parents, dag.children):
        for name, others in table.items():
            if len(others) > 1 and len(set(others)) != len(others):
                table[name] = list(dict.fromkeys(others))


#: the command order a rescue DAG's commands start from: above any a DAG file reaches, so that they
#: override the DAG's own, as lines read after all of them
_RESCUE_ORDER = 1 << 62


def parse_rescue(path: str, dag: Dag) -> Rescue:
    """A partial rescue DAG (or save point file), parsed onto ``dag`` as DAGMan parses it: one more DAG
    file read after the DAG's own, its lines naming nodes by their full names, ``ALL_NODES`` every node
    of the DAG.  Its settings (VARS, PRIORITY, CATEGORY, MAXJOBS, SCRIPT ...) override the DAG's as later
    lines would; its ``DONE node`` and ``RETRY node n [UNLESS-EXIT v]`` lines are returned as the
    :class:`Rescue` the run starts from.  A node declared again is a duplicate, as in DAGMan; a new node
    or an edge is refused by name (DAGMan would add it after it has set the DAG up for the run)."""
    f = DagFile(path, os.path.dirname(path), "", dag, (path,))
    f.local = list(dag.nodes)  # ALL_NODES: the splices are part of the DAG by now, as in DAGMan
    f.order = [_RESCUE_ORDER]
    done: set[str] = set()
    retries: dict[str, int] = {}
    unless: dict[str, int] = {}
    f.rescue = (done, retries, unless)
    _parse_file(f)
    return Rescue(path, frozenset(done), retries, unless)


def _rescue_line(f: DagFile, keyword: str, words: list[str]) -> None:
    """A rescue DAG's ``DONE`` or ``RETRY`` line, into the record of where the run starts."""
    assert f.rescue is not None
    done, retries, unless = f.rescue
    if keyword == "DONE":
        if len(words) != 2:
            raise f.error("bad DONE", "DONE node", " ".join(words))
        if dag_keyword(words[1]) == ALL_NODES:
            raise f.error("DONE does not take ALL_NODES", "DONE names one node (ALL_NODES is not allowed)",
                          words[1])
        check_kind(f, "DONE", _rescue_node(f, words[1]))
        done.add(words[1])
        return
    if len(words) not in (3, 5) or (len(words) == 5 and dag_keyword(words[3]) != "UNLESS_EXIT"):
        raise f.error("bad RETRY", "RETRY node n [UNLESS-EXIT v]", " ".join(words))
    count = dag_int(f, words[2], "retry count", low=0)
    value = dag_int(f, words[4], "UNLESS-EXIT value") if len(words) == 5 else None
    every = dag_keyword(words[1]) == ALL_NODES
    for spec in ([s for s in f.dag.nodes.values() if not s.final] if every else [_rescue_node(f, words[1])]):
        check_kind(f, "RETRY", spec)
        retries[spec.name] = count
        if value is not None:  # without it the DAG's own value stays, as DAGMan's SetMaxRetries keeps it
            unless[spec.name] = value


def _rescue_node(f: DagFile, name: str) -> NodeSpec:
    spec = f.dag.nodes.get(name)
    if spec is None:
        raise f.error("unknown node", "a rescue DAG's lines name nodes of its DAG", name)
    return spec
