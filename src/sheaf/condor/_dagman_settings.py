"""Per-node settings of a DAG file: RETRY, VARS, SCRIPT, PRE_SKIP, PRIORITY, CATEGORY, ABORT-DAG-ON,
TOLERANCE, DONE.

``node`` may be ``ALL_NODES`` (not for DONE): the setting applies to every node of *that file* (not
to splices' nodes, not to the FINAL node), once the file is read.  A command may also name a node
declared later in the file (DAGMan reads node declarations first); it is applied when the file is
read.  When several commands set one property of a node (one VARS macro, the PRE script, the
retries ...), the last one in the file wins, an ALL_NODES command included (the DAGMan manual's
ALL_NODES example): every command gets its order in the file, and a property remembers the order of
the command that set it.  Each command is one ``_set_*`` function in one table (VARS is kept per
macro, so it is applied apart).  RETRY, PRIORITY, CATEGORY, ABORT-DAG-ON and DONE are refused on a
FINAL node, as DAGMan's parser refuses them.
"""

from __future__ import annotations

__all__ = ["SETTINGS", "apply_later", "apply_setting", "check_kind", "parse_setting", "set_done",
           "set_save_point"]

import copy
import os
import re

from sheaf.condor._dagman_file import DagFile, bare, dag_int, dag_keyword, fitting_name, resolve, warn
from sheaf.condor._dagman_records import ALL_NODES, NodeSpec, Script

# DAGMan's VARS entry (its lexer's key=value reading): a key is any run of characters but blanks, quotes
# and "="; blanks may stand around the "="; the value is one word of the lexer, which may mix plain text
# with quoted runs (a backslash in a quoted run takes the next character as it is) and does not start with
# "=" (a second "=").  The quoted runs are written "unrolled" (runs between escapes) because a
# per-character alternation is slower on long VARS lines; a test pins the language.  "+" and "My." alone
# are no names (DAGMan: a name needs a letter or digit).
_BLANK = " \t\r"
_VARS_KEY = rf"(?!(?:\+|My\.)[{_BLANK}=])[^{_BLANK}\"'=]+"
_PLAIN = rf"[^{_BLANK}\"']*"
_QUOTED = r"\"[^\"\\]*(?:\\.[^\"\\]*)*\"|'[^'\\]*(?:\\.[^'\\]*)*'"
_END = rf"(?=[{_BLANK}]|$)"
_WORD = rf"(?:{_QUOTED}|[^{_BLANK}=\"']){_PLAIN}(?:(?:{_QUOTED}){_PLAIN})*{_END}"
# the entry: key, then the value as the text of one quoted run (double, single: most values) or as a word
_VARS_RE = re.compile(rf"[{_BLANK}]*({_VARS_KEY})[{_BLANK}]*=[{_BLANK}]*"
                      rf"(?:\"([^\"\\]*(?:\\.[^\"\\]*)*)\"{_END}|'([^'\\]*(?:\\.[^'\\]*)*)'{_END}|({_WORD}))")
# a line that is entries and nothing else: an entry's match is the only one where it starts (a key
# stops at a blank or "=", a value at its first blank outside quotes), so this accepts exactly the
# lines the entry-by-entry loop accepts, and findall then gives the loop's entries
_VARS_LINE_RE = re.compile(rf"(?:[{_BLANK}]*{_VARS_KEY}[{_BLANK}]*=[{_BLANK}]*{_WORD})+[{_BLANK}]*")
_VARS_ESCAPE = re.compile(r"\\(.)")
_VARS_RULE = "VARS node [PREPEND|APPEND] key=value ... (a value one word; quotes around it are dropped)"


def set_done(f: DagFile, words: list[str]) -> None:
    """``DONE node``: one node, never ALL_NODES (DAGMan looks the name up as one node: ALL_NODES is
    not one of the commands it applies to)."""
    if len(words) != 2:
        raise f.error("bad DONE", "DONE node", " ".join(words))
    if dag_keyword(words[1]) == ALL_NODES:
        raise f.error("DONE does not take ALL_NODES", "DONE names one node (ALL_NODES is not allowed)",
                      words[1])
    spec = f.dag.nodes.get(f.prefix + words[1])
    if spec is None:
        f.order[0] += 1
        f.later.append(("DONE", words, f.lineno, f.current, f.order[0]))
        return
    check_kind(f, "DONE", spec)
    spec.done = True


def _settings_target(f: DagFile, name: str) -> list[NodeSpec] | None:
    """The node named (None for ALL_NODES, resolved at the end of the file; [] for a node not
    declared yet: DAGMan reads node declarations first, so a command may come before its JOB line)."""
    if dag_keyword(name) == ALL_NODES:
        return None
    spec = f.dag.nodes.get(f.prefix + name) or f.dag.services.get(f.prefix + name)
    return [] if spec is None else [spec]


def _property(f: DagFile, keyword: str, words: list[str]) -> str:
    """What a settings command sets: SCRIPT PRE and SCRIPT POST are different properties."""
    return f"SCRIPT {_script_parts(f, words)[2]}" if keyword == "SCRIPT" else keyword


#: what DAGMan's parser refuses on a node that is no JOB (FINAL, SERVICE, PROVISIONER) -- DONE is a
#: warning there, fatal under the default DAGMAN_USE_STRICT = 1 -- and ABORT-DAG-ON on a FINAL node
_JOBS_ONLY = ("RETRY", "PRIORITY", "CATEGORY", "DONE", "SAVE_POINT_FILE")
_NOT_FOR = {"FINAL": (*_JOBS_ONLY, "ABORT_DAG_ON"), "SERVICE": _JOBS_ONLY, "PROVISIONER": _JOBS_ONLY}


def _kind(f: DagFile, spec: NodeSpec) -> str:
    if spec.final:
        return "FINAL"
    if spec.name in f.dag.services:
        return "SERVICE"
    return "PROVISIONER" if spec.name == f.dag.provisioner else "JOB"


def check_kind(f: DagFile, keyword: str, spec: NodeSpec) -> None:
    """Refuse ``keyword`` on ``spec`` where DAGMan's parser refuses it (``_NOT_FOR``)."""
    kind = _kind(f, spec)
    if keyword in _NOT_FOR.get(kind, ()):
        raise f.error(f"a {kind} node cannot have {keyword}",
                      f"{kind} nodes take no " + ", ".join(_NOT_FOR[kind]), spec.name)


def apply_setting(f: DagFile, keyword: str, words: list[str], specs: list[NodeSpec], order: int) -> None:
    """Apply a command to ``specs`` unless a later command (by ``order``) already set the property."""
    if keyword == "VARS":
        mode, entries = _vars_entries(f, words)
        for spec in specs:
            for key, value in entries:
                before = spec.var_order.get(key, -1)
                if before >= 0:  # DAGMan warns, and the later definition (in file order) wins
                    warn(f, f"VARS macro {key} of node {spec.name} is defined more than once", strict=3)
                if before < order:  # its value: the macro keeps the place (PREPEND/APPEND) it was given
                    spec.vars[key], spec.var_order[key] = value, order
                    spec.var_modes.setdefault(key, mode)
        return
    prop = _property(f, keyword, words)
    handler = SETTINGS[keyword]
    for spec in specs:
        check_kind(f, keyword, spec)  # ALL_NODES lists JOB nodes only: these are named
        if keyword in _OVERRIDES and prop in spec.explicit:
            _warn_override(f, keyword, words, spec, spec.explicit[prop] < order)
        if spec.explicit.get(prop, -1) < order:
            handler(f, words, spec)
            spec.explicit[prop] = order


#: settings whose second value DAGMan warns about: the node's field, the DAGMAN_USE_STRICT level that
#: makes the warning fatal
_OVERRIDES = {"PRIORITY": ("priority", 2), "CATEGORY": ("category", 3), "PRE_SKIP": ("pre_skip", 3)}


def _warn_override(f: DagFile, keyword: str, words: list[str], spec: NodeSpec, later: bool) -> None:
    """DAGMan's warning when a command gives a node's PRIORITY (a non-zero one), CATEGORY or PRE_SKIP
    another value; ``later``: this command comes after the one that set it (in file order)."""
    attr, level = _OVERRIDES[keyword]
    scratch = copy.copy(spec)
    SETTINGS[keyword](f, words, scratch)
    old, new = getattr(spec, attr), getattr(scratch, attr)
    if not later:
        old, new = new, old
    if old != new and (keyword != "PRIORITY" or old != 0):
        warn(f, f"new {keyword} {new} for node {spec.name} overrides old value {old}", strict=level)


def _set_retry(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    if len(words) not in (3, 5) or (len(words) == 5 and dag_keyword(words[3]) != "UNLESS_EXIT"):
        raise f.error("bad RETRY", "RETRY node n [UNLESS-EXIT value]", " ".join(words))
    spec.retries = dag_int(f, words[2], "retry count", low=0)
    spec.unless_exit = dag_int(f, words[4], "UNLESS-EXIT value") if len(words) == 5 else None


def _vars_entries(f: DagFile, words: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """The mode (PREPEND, APPEND or "") and the ``key="value"`` entries of a VARS line."""
    text = f.current.split(None, 2)[2] if len(words) > 2 else ""
    if not text.strip():
        raise f.error("VARS without a value", _VARS_RULE, " ".join(words))
    mode = ""
    if text[0] in "pPaA":  # maybe PREPEND or APPEND (most lines start with a key: no split of them)
        first = text.split(None, 1)
        if first[0].upper() in ("PREPEND", "APPEND"):
            mode = first[0].upper()
            text = first[1] if len(first) > 1 else ""
    if _VARS_LINE_RE.fullmatch(text) is not None:  # a good line (a plan's: one per node), in C
        entries = [(key, _vars_value(*value)) for key, *value in _VARS_RE.findall(text)]
        if "queue" in text.lower():
            for key, _value in entries:
                _check_vars_name(f, key)
        return mode, entries
    return mode, _checked_entries(f, words, text)


def _check_vars_name(f: DagFile, key: str) -> None:
    if key.lower().startswith("queue"):
        raise f.error("reserved VARS name", "VARS names do not begin with 'queue'", key)


def _unescaped(match: re.Match[str]) -> str:
    return match.group(1)


def _vars_value(double: str | None, single: str | None, word: str | None) -> str:
    """A VARS value from its match: the text of one quoted run with its escapes read (a backslash takes
    the next character), or a word mixing plain text and quoted runs (:func:`_vars_word`)."""
    if word:
        return _vars_word(word)
    quoted = double or single or ""
    return _VARS_ESCAPE.sub(_unescaped, quoted) if "\\" in quoted else quoted


def _vars_word(raw: str) -> str:
    """A value written as a word that is not one quoted run: its quoted runs read, then, when it starts
    with a quote, its first and last characters dropped -- as DAGMan drops them, whatever the last one
    is (``x="a"b`` gives ``a"``)."""
    if "\\" not in raw or ('"' not in raw and "'" not in raw):
        out = raw  # no escape in a quoted run: a backslash outside quotes is a character like any other
    else:
        chars: list[str] = []
        quote = ""
        escaped = False
        for char in raw:
            if escaped:
                chars.append(char)
                escaped = False
            elif quote and char == "\\":
                escaped = True
            else:
                if char == quote:
                    quote = ""
                elif not quote and char in "\"'":
                    quote = char
                chars.append(char)
        out = "".join(chars)
    return out[1:-1] if raw[0] in "\"'" else out


def _checked_entries(f: DagFile, words: list[str], text: str) -> list[tuple[str, str]]:
    """The entries of a VARS line read one by one, raising at the first that is not one, with
    DAGMan's reason."""
    pos = 0
    entries: list[tuple[str, str]] = []
    # each entry matched where the one before ended: a search (finditer) would try the pattern again
    # at every later position of a line that goes wrong, quadratic in a run of blanks before junk
    while (match := _VARS_RE.match(text, pos)) is not None:
        key = match.group(1)
        _check_vars_name(f, key)
        entries.append((key, _vars_value(*match.group(2, 3, 4))))
        pos = match.end()
    if text[pos:].strip(_BLANK):
        rest = text[pos:].strip(_BLANK)
        raise f.error(f"bad VARS entry: {_vars_problem(rest)}", _VARS_RULE, rest)
    if not entries:
        raise f.error("VARS without a value", _VARS_RULE, " ".join(words))
    return entries


def _vars_problem(text: str) -> str:
    """Why ``text`` (starting at a non-blank) is no VARS entry, in DAGMan's words."""
    key = re.match(rf"[^{_BLANK}\"'=]*", text)
    assert key is not None
    name, pos = key.group(), key.end()
    if pos < len(text) and text[pos] in "\"'":
        return "a key contains a quotation mark"
    if not name:
        return "a key=value pair misses its key"
    if name in ("+", "My."):
        return f"the variable name '{name}' has no letter or digit"
    after = text[pos:].lstrip(_BLANK)
    if not after:
        return f"'{name}' has no '=' and no value"
    if after[0] != "=":
        return f"no '=' after '{name}'"
    value = after[1:].lstrip(_BLANK)
    if not value:
        return f"'{name}=' has no value"
    if value[0] == "=":
        return f"a second '=' after '{name}'"
    return "a quote is not closed"


def _set_pre_skip(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad PRE_SKIP", "PRE_SKIP node exit-code", " ".join(words))
    spec.pre_skip = dag_int(f, words[2], "PRE_SKIP exit code")
    if not 0 <= spec.pre_skip <= 255:
        raise f.error("PRE_SKIP exit code is out of range", "PRE_SKIP exit code is 0 to 255", words[2])
    if spec.pre_skip == 0:  # DAGMan: "exit code 0 for a PRE_SKIP value is weird"
        warn(f, f"PRE_SKIP 0 for node {spec.name} never skips it: a PRE script that exits with 0 succeeds")


def _set_priority(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad PRIORITY", "PRIORITY node n", " ".join(words))
    spec.priority = dag_int(f, words[2], "priority")


def _set_category(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    if len(words) != 3:
        raise f.error("bad CATEGORY", "CATEGORY node name", " ".join(words))
    spec.category = words[2] if words[2].startswith("+") else f.prefix + words[2] if f.prefix else words[2]
    f.dag.category_lines.setdefault(spec.category, (f.path, f.lineno))  # a category once named stays one


def _set_abort(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    if len(words) not in (3, 5) or (len(words) == 5 and words[3].upper() != "RETURN"):
        raise f.error("bad ABORT-DAG-ON", "ABORT-DAG-ON node value [RETURN v]", " ".join(words))
    value = dag_int(f, words[2], "abort exit value")
    ret = dag_int(f, words[4], "DAG return value") if len(words) == 5 else None
    if ret is not None and not 0 <= ret <= 255:
        raise f.error("DAG return value out of range", "RETURN value is 0..255", words[4])
    spec.abort_on = (value, ret)


def _set_tolerance(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    """``TOLERANCE node value[%] [FAIL-FAST|WAIT]``: the proc failures a node's job list tolerates."""
    rule = "TOLERANCE node value[%] [FAIL-FAST|WAIT]"
    if len(words) > 3 and words[3] == "%":  # DAGMan's parser takes the percent sign as its own word too
        words = [*words[:2], words[2] + "%", *words[4:]]
    if len(words) not in (3, 4) or (len(words) == 4 and dag_keyword(words[3]) not in ("FAIL_FAST", "WAIT")):
        raise f.error("bad TOLERANCE", rule, " ".join(words))
    percent = words[2].endswith("%")
    value = dag_int(f, words[2][:-1] if percent else words[2], "TOLERANCE value", low=0)
    if percent and value > 100:
        raise f.error("TOLERANCE percentage out of range", "a percentage is 0..100%", words[2])
    spec.tolerance = (value, percent, dag_keyword(words[3]).replace("_", "-") if len(words) == 4 else "")


_SCRIPT_RULE = ("SCRIPT [DEFER status time] [DEBUG file STDOUT|STDERR|ALL] PRE|POST|HOLD node "
                "executable [args]")


def _script_parts(f: DagFile, words: list[str]) -> tuple[int | None, float, str, str, list[str]]:
    i = 1
    defer_status, defer_time = None, 0.0
    if len(words) > i and words[i].upper() == "DEFER":
        if len(words) < i + 3:
            raise f.error("bad DEFER", _SCRIPT_RULE, " ".join(words))
        defer_status = dag_int(f, words[i + 1], "DEFER status")
        # a negative time is taken, as DAGMan takes it: the script is due again at once, as with 0
        defer_time = float(max(0, dag_int(f, words[i + 2], "DEFER time")))
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


def _script_debug(words: list[str], directory: str) -> tuple[str, str] | None:
    """The DEBUG file and stream, when DEBUG stands where the syntax puts it: right after SCRIPT or
    after its DEFER status and time (a node or executable named DEBUG is no keyword)."""
    at = 4 if len(words) > 1 and words[1].upper() == "DEFER" else 1
    if len(words) <= at + 2 or words[at].upper() != "DEBUG":
        return None
    return resolve(directory, words[at + 1]), words[at + 2].upper()


def _set_script(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    defer_status, defer_time, kind, _name, argv = _script_parts(f, words)
    local = resolve(spec.directory, argv[0])
    exe = local if not os.path.isabs(argv[0]) and os.path.exists(local) else argv[0]
    script = Script(kind, (exe, *argv[1:]), spec.directory, defer_status, defer_time,  # type: ignore[arg-type]
                    _script_debug(words, spec.directory), f.path, f.lineno)
    if kind == "PRE":
        spec.pre = script
    elif kind == "POST":
        spec.post = script
    else:
        spec.hold = script


SETTINGS = {
    "RETRY": _set_retry, "SCRIPT": _set_script, "PRE_SKIP": _set_pre_skip,
    "PRIORITY": _set_priority, "CATEGORY": _set_category, "ABORT_DAG_ON": _set_abort,
    "TOLERANCE": _set_tolerance,
}


def parse_setting(f: DagFile, keyword: str, words: list[str]) -> None:
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
        apply_setting(f, keyword, words, specs, f.order[0])


def set_save_point(f: DagFile, words: list[str], spec: NodeSpec) -> None:
    """``SAVE_POINT_FILE node [file]``: a bare file name goes to ``save_files/`` beside the (primary)
    DAG; a path is the DAG's directory's."""
    check_kind(f, "SAVE_POINT_FILE", spec)
    name = bare(words[2]) if len(words) == 3 else f"{words[1]}-{os.path.basename(f.path)}.save"
    spec.save_point = save_point_path(f.dag.path, fitting_name(f, name, "SAVE_POINT_FILE"))


def save_point_path(dag_path: str, name: str) -> str:
    """Where the save point file ``name`` of the DAG ``dag_path`` is, written (``SAVE_POINT_FILE``) and
    read back (condor_submit_dag ``-load_save``): a bare file name in ``save_files/`` beside the
    (primary) DAG, a path from the DAG's directory."""
    top = os.path.dirname(dag_path)
    return resolve(top if "/" in name else os.path.join(top, "save_files"), name)


def apply_later(f: DagFile) -> None:
    """Commands that named a node before its declaration, in file order (``order`` keeps "the last
    one wins" against commands applied earlier)."""
    for keyword, words, lineno, line, order in f.later:
        f.lineno, f.current = lineno, line
        name = _script_parts(f, words)[3] if keyword == "SCRIPT" else words[1]
        spec = f.dag.nodes.get(f.prefix + name) or f.dag.services.get(f.prefix + name)
        if spec is None:
            raise f.error("unknown node", "settings name a node declared in the DAG file", name)
        if keyword == "DONE":
            check_kind(f, "DONE", spec)
            spec.done = True
        elif keyword == "SAVE_POINT_FILE":
            set_save_point(f, words, spec)
        else:
            apply_setting(f, keyword, words, [spec], order)
