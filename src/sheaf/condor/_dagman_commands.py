"""DAG-wide commands of a DAG file, one function each, found through one table (:data:`COMMANDS`).

MAXJOBS, CONFIG (the DAGMan configuration file, read here), DOT, JOBSTATE_LOG, NODE_STATUS_FILE,
ENV, SET_JOB_ATTR, SAVE_POINT_FILE, and the splice wiring PIN_IN, PIN_OUT and CONNECT.  A run has
at most one CONFIG file (naming the same one again is harmless; CONFIG, ENV and SET_JOB_ATTR in a
splice take no effect, as in DAGMan, which reads them at condor_submit_dag time); DOT, JOBSTATE_LOG and
NODE_STATUS_FILE take none in a splice either (DAGMan ignores them there) and keep the first one
named (the engine's ``_dot`` writes the DOT file with its options).  SET_JOB_ATTR sets an attribute
of DAGMan's own job ad: sheaf has no schedd, so the engine writes these attributes into the node
status file's ``DagStatus`` ad, where a DAGMan job's status can be read.
Pins are checked once the file is read (:func:`check_pins`); a CONNECT is carried out then, in line
order among the PARENT/CHILD lines (:func:`connect`): PIN_OUT n of the output splice's nodes become
parents of PIN_IN n's nodes.
"""

from __future__ import annotations

__all__ = ["COMMANDS", "check_pins", "connect"]

import re
from collections.abc import Callable

from sheaf._text import read_text
from sheaf.condor._config import parse_config
from sheaf.condor._dagman_file import DagFile, bare, dag_int, dag_keyword, file_option, resolve, warn
from sheaf.condor._dagman_records import ALL_NODES, DotOptions
from sheaf.condor._dagman_settings import set_save_point
from sheaf.condor._submit_lang import v1_environment_entries
from sheaf.errors import FormatError


def _parse_maxjobs(f: DagFile, words: list[str]) -> None:
    if len(words) != 3:
        raise f.error("bad MAXJOBS", "MAXJOBS category n", " ".join(words))
    value = dag_int(f, words[2], "MAXJOBS value", low=0)
    category = words[1] if not f.prefix or words[1].startswith("+") else f.prefix + words[1]
    before = f.dag.maxjobs.get(category)
    if before is not None and before != value and f.dag.maxjobs_lines[category][2] == f.prefix:
        # DAGMan's ThrottleByCategory::SetThrottle: a second value in one DAG file warns, the last wins
        warn(f, f"new MAXJOBS value {value} for category {category} overrides old value {before}", strict=3)
    f.dag.maxjobs[category] = value
    f.dag.maxjobs_lines[category] = (f.path, f.lineno, f.prefix)


def _in_splice(f: DagFile, keyword: str) -> bool:
    """A splice's NODE_STATUS_FILE, JOBSTATE_LOG and DOT (checked as any) take no effect, with a warning:
    DAGMan sets them on the splice's own DAG, which only lends its nodes to the run (the DAGMan manual:
    a splice's NODE_STATUS_FILE is ignored)."""
    if f.prefix:
        warn(f, f"{keyword} in a splice takes no effect: DAGMan ignores it there (only the DAG files "
             "given, and their INCLUDEs, name these files)")
    return bool(f.prefix)


def _parse_jobstate_log(f: DagFile, words: list[str]) -> None:
    if len(words) > 2:
        raise f.error("unexpected words after JOBSTATE_LOG", "JOBSTATE_LOG file", " ".join(words[2:]))
    path = file_option(f, words, "JOBSTATE_LOG")
    if _in_splice(f, "JOBSTATE_LOG"):
        return
    if f.dag.jobstate_log is not None and f.dag.jobstate_log != path:
        warn(f, f"JOBSTATE_LOG {path} does not override the first one, {f.dag.jobstate_log}", strict=3)
    f.dag.jobstate_log = f.dag.jobstate_log or path


def _parse_node_status_file(f: DagFile, words: list[str]) -> None:
    """``NODE_STATUS_FILE file [seconds] [ALWAYS-UPDATE]``: the options in any order, a later number
    replacing an earlier one, as DAGMan's parser takes them (a negative time is no limit, as 0)."""
    dag = f.dag
    path = file_option(f, words, "NODE_STATUS_FILE")
    secs, always = 60.0, False
    for word in words[2:]:
        if dag_keyword(word) == "ALWAYS_UPDATE":
            always = True
        elif word[0] in "0123456789+-":
            secs = float(dag_int(f, word, "update time"))
        else:
            raise f.error("unexpected word in NODE_STATUS_FILE",
                          "NODE_STATUS_FILE file [min-update-seconds] [ALWAYS-UPDATE]", word)
    if _in_splice(f, "NODE_STATUS_FILE"):
        return
    if dag.node_status_file is None:
        dag.node_status_file = (path, secs)
        dag.node_status_always = always
    elif dag.node_status_file[0] != path:
        warn(f, f"NODE_STATUS_FILE {path} does not override the first one, {dag.node_status_file[0]}",
             strict=3)


def _parse_config(f: DagFile, words: list[str]) -> None:
    if len(words) > 2:
        raise f.error("unexpected words after CONFIG", "CONFIG file", " ".join(words[2:]))
    path = file_option(f, words, "CONFIG")
    if f.dag.config_path is not None and f.dag.config_path != path:
        raise f.error("a second CONFIG file", "a DAG has at most one CONFIG file", words[1])
    f.dag.config_path = path
    config = parse_config(read_text(path, "DAGMan config file"), path, keep_undefined=True)
    used = {name.upper() for entry in config.entries.values() for name in _MACRO.findall(entry.raw)}
    for key in config:
        if key.startswith("DAGMAN_") or key not in used:  # a name only other values use is a macro
            f.dag.config[key] = config[key]
            f.dag.config_lines[key] = config.entries[key].line


_MACRO = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.]*)")


def _parse_dot(f: DagFile, words: list[str]) -> None:
    """``DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE header]``; the first DOT wins."""
    path = file_option(f, words, "DOT")
    update, overwrite, include, include_name = False, True, None, None
    i = 2
    while i < len(words):
        word = dag_keyword(words[i])
        if word in ("UPDATE", "DONT_UPDATE"):
            update = word == "UPDATE"
        elif word in ("OVERWRITE", "DONT_OVERWRITE"):
            overwrite = word == "OVERWRITE"
        elif word == "INCLUDE" and i + 1 < len(words):
            include_name = bare(words[i + 1])
            include = resolve(f.dir, include_name)
            i += 1
        else:
            raise f.error("unknown DOT option",
                          "DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE header]",
                          words[i])
        i += 1
    if not _in_splice(f, "DOT") and f.dag.dot is None:
        f.dag.dot = path
        f.dag.dot_options = DotOptions(update, overwrite, include, include_name)


def _parse_env(f: DagFile, words: list[str]) -> None:
    """``ENV GET name...`` / ``ENV SET name=value;...`` (DAGMan's own environment, which its scripts
    inherit and ``$ENV()``/``getenv`` read)."""
    rule = "ENV GET name [name ...] | ENV SET name=value[;name=value...]"
    if len(words) < 3 or words[1].upper() not in ("GET", "SET"):
        raise f.error("bad ENV", rule, " ".join(words))
    if words[1].upper() == "GET":
        f.dag.env_get += tuple(n for w in words[2:] for n in w.replace(",", " ").split())
        return
    for item in v1_environment_entries(f.current.split(None, 2)[2]):
        name, eq, value = item.strip().partition("=")
        if not eq or not name or any(c.isspace() for c in name):
            raise f.error("bad ENV SET entry", rule, item.strip())
        f.dag.env[name] = value


def _parse_set_job_attr(f: DagFile, words: list[str]) -> None:
    text = f.current.split(None, 1)[1] if len(words) > 1 else ""
    name, eq, value = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][\w.]*", name.strip()) or not value.strip():
        raise f.error("bad SET_JOB_ATTR", "SET_JOB_ATTR name = value", text)
    f.dag.job_attrs[name.strip()] = value.strip()  # the last one named wins


def _parse_save_point(f: DagFile, words: list[str]) -> None:
    if len(words) not in (2, 3) or dag_keyword(words[1]) == ALL_NODES:
        raise f.error("bad SAVE_POINT_FILE", "SAVE_POINT_FILE node [file] (one node, not ALL_NODES)",
                      " ".join(words))
    spec = f.dag.nodes.get(f.prefix + words[1])
    if spec is None:  # a node declared further down: DAGMan reads the command in its second pass
        f.later.append(("SAVE_POINT_FILE", words, f.lineno, f.current, f.order[0]))
        return
    set_save_point(f, words, spec)


def _parse_pin(f: DagFile, words: list[str]) -> None:
    keyword = dag_keyword(words[0])
    if len(words) != 3:
        raise f.error(f"bad {keyword}", f"{keyword} node pin-number", " ".join(words))
    number = dag_int(f, words[2], "pin number", low=1)
    pins = f.pin_in if keyword == "PIN_IN" else f.pin_out
    pins.setdefault(number, []).append(f.prefix + words[1])  # checked once the file is read
    f.pin_lines.append((f.prefix + words[1], f.path, f.lineno))


def _parse_connect(f: DagFile, words: list[str]) -> None:
    if len(words) != 3:
        raise f.error("bad CONNECT", "CONNECT output-splice input-splice", " ".join(words))
    f.edges.append(([words[1]], [words[2]], f.lineno, None))  # carried out in line order


def connect(f: DagFile, out_name: str, in_name: str) -> None:
    """CONNECT: PIN_OUT n of the output splice's nodes become parents of PIN_IN n's nodes, pin 1
    first (DAGMan's ``Dag::ConnectSplices``); then every initial node of the input splice has a
    parent -- a pin's, or one a PARENT line before the CONNECT gave it."""
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
    for number, parents in sorted(outs.items()):
        for p in parents:
            for c in ins[number]:
                f.dag.children[p].append(c)
                f.dag.parents[c].append(p)
    loose = [n for n in f.splices[in_name][0] if not f.dag.parents[n]]  # as DAGMan checks, once connected
    if loose:
        raise f.error("a node of the input splice has no parent once connected",
                      "every initial node of a CONNECT's input splice is on a PIN_IN or has a parent "
                      "from a PARENT line before the CONNECT", loose[0])


COMMANDS: dict[str, Callable[[DagFile, list[str]], None]] = {
    "MAXJOBS": _parse_maxjobs, "CONFIG": _parse_config, "DOT": _parse_dot,
    "JOBSTATE_LOG": _parse_jobstate_log, "NODE_STATUS_FILE": _parse_node_status_file,
    "ENV": _parse_env, "SET_JOB_ATTR": _parse_set_job_attr, "SAVE_POINT_FILE": _parse_save_point,
    "CONNECT": _parse_connect, "PIN_IN": _parse_pin, "PIN_OUT": _parse_pin,
}


def check_pins(f: DagFile) -> None:
    """Once the file is read (its nodes all declared): its PIN_IN/PIN_OUT name its nodes."""
    for name, path, lineno in f.pin_lines:  # at the pin's line, which may be an INCLUDEd file's
        if name not in f.dag.nodes:
            raise FormatError("unknown node", rule="PIN_IN/PIN_OUT name nodes of their splice",
                              value=name[len(f.prefix):], path=path, line=lineno)
