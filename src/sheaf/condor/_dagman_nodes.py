"""Node declarations of a DAG file: JOB, FINAL, SUBDAG EXTERNAL and SUBMIT-DESCRIPTION.

A declaration names the node and its submit file (quoted when the name holds blanks, as the ``DIR``
directory may be), or opens an inline description (``{`` ... ``}``, or ``@=TAG`` ... ``@TAG``) whose
lines are kept, numbered as lines of the DAG file, for the engine to read as a submit description; the
node options (``DIR``, ``NOOP``, ``DONE``) follow the file name or the closing token. A node's
``description`` names a SUBMIT-DESCRIPTION until ``parse_dag`` finds there is none of that name (a
submit file after all). Node names are unique; ``+`` (the splice separator), ``ALL_NODES``, ``PARENT``
and ``CHILD`` are not node names; only the top DAG file (or its INCLUDEs) has a FINAL node.
"""

from __future__ import annotations

__all__ = ["parse_declaration"]

from sheaf.condor._dagman_file import DagFile, bare, dag_keyword, resolve, split_words, warn
from sheaf.condor._dagman_records import ALL_NODES, InlineDescription, NodeSpec

_NODE_RULE = "JOB name submit-file|{ inline description } [DIR d] [NOOP] [DONE]"


def _inline_end(token: str) -> str | None:
    """The closing token of an inline description opened by ``token`` (``{`` or ``@=TAG``), if any."""
    if token.startswith("{"):
        return "}"
    if token.startswith("@="):
        return "@" + token[2:]
    return None


def _inline(f: DagFile, lines: list[tuple[int, list[str], str]], index: int, opener: str,
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
        number, _words, line = lines[i]
        if line == end or line.startswith((end + " ", end + "\t")):
            return InlineDescription(name, f.path, tuple(body)), split_words(f, line)[1:], i + 1
        body.append((number, line))
    f.lineno = start
    raise f.error("inline submit description not closed", f"an inline description ends with a line '{end}'",
                  opener)


def _node_options(f: DagFile, name: str, rest: list[str], final: bool) -> tuple[str, set[str]]:
    """The node's directory and its NOOP/DONE flags, from the words after its file."""
    directory = f.dir
    flags: set[str] = set()
    i = 0
    while i < len(rest):
        word = dag_keyword(rest[i])
        if word == "DIR" and i + 1 < len(rest):
            if f.dag.own_dirs:
                raise f.error("DIR cannot be used with -usedagdir", "under -usedagdir a node runs in its DAG "
                              "file's directory", " ".join(rest[i:i + 2]))
            directory = resolve(f.dir, bare(rest[i + 1]))
            i += 2
            continue
        if word in ("NOOP", "DONE"):
            if final and word == "DONE":  # DAGMan's warning: a FINAL node always runs
                warn(f, f"FINAL node {name} cannot be marked DONE; it runs")
            else:
                flags.add(word)
            i += 1
            continue
        raise f.error("unexpected word in node declaration", _NODE_RULE, rest[i])
    return directory, flags


def _check_name(f: DagFile, name: str, full: str) -> None:
    if full in f.dag.nodes or full in f.dag.services:
        raise f.error("duplicate node name", "node names are unique", name)
    if name in f.splices:  # DAGMan: a node name already associated with a splice
        raise f.error("duplicate node name", "node and splice names are unique", name)
    if name.upper() in (ALL_NODES, "PARENT", "CHILD"):
        raise f.error("reserved node name", "ALL_NODES, PARENT and CHILD are no node names", name)
    if "+" in name and not f.dag.flag("DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS", False):
        raise f.error("a node name holds an illegal character", "'+' joins a splice's name to its nodes' "
                      "names: not in a node name (unless DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS)", name)


def _parse_node_decl(f: DagFile, words: list[str], *, subdag: bool, final: bool,
                     inline: InlineDescription | None = None, service: bool = False,
                     provisioner: bool = False) -> None:
    if len(words) < 3:
        raise f.error("a node needs a name and a file", _NODE_RULE, " ".join(words))
    name, file_name = words[1], bare(words[2])
    if inline is not None:
        file_name = inline.name
    directory, flags = _node_options(f, name, words[3:], final)
    full = f.prefix + name
    _check_name(f, name, full)
    spec = NodeSpec(full, resolve(directory, file_name), directory, f.lineno, f.path, subdag=subdag,
                    final=final, noop="NOOP" in flags, done="DONE" in flags)
    if inline is not None:
        f.dag.descriptions[inline.name] = inline
        spec.description = inline.name
    elif not subdag:
        spec.description = file_name  # kept only if a SUBMIT-DESCRIPTION of that name exists (parse_dag)
    if final:
        if f.prefix:
            raise f.error("a splice cannot have a FINAL node",
                          "FINAL only in the top DAG file (or its INCLUDEs)", name)
        if f.dag.final is not None:
            raise f.error("more than one FINAL node", "a DAG has at most one FINAL node", name)
        f.dag.final = full
    if provisioner:
        if f.dag.provisioner is not None:
            raise f.error("more than one PROVISIONER node", "a DAG has at most one PROVISIONER node", name)
        f.dag.provisioner = full
    if service:
        f.dag.services[full] = spec  # beside the DAG: no edges, no ALL_NODES settings
        return
    f.dag.nodes[full] = spec
    f.dag.children[full] = []
    f.dag.parents[full] = []
    f.local.append(full)


def parse_declaration(f: DagFile, keyword: str, words: list[str], lines: list[tuple[int, list[str], str]],
                      i: int) -> int:
    """JOB, FINAL, SERVICE, PROVISIONER, SUBDAG EXTERNAL and SUBMIT-DESCRIPTION, which may
    open an inline description (``words``: the declaration's, ``lines[i]`` the line after it)."""
    subdag = keyword == "SUBDAG"
    if subdag:
        if len(words) < 2 or dag_keyword(words[1]) != "EXTERNAL":
            raise f.error("SUBDAG must be EXTERNAL", "SUBDAG EXTERNAL name file", " ".join(words))
        words = words[1:]
    inline = None
    if len(words) >= 3 and _inline_end(words[2]) is not None and not subdag:
        # DAGMan reads the description from the next line on, and node options after its closing
        # token: what follows the opening on its line is passed over (a warning here)
        opener = words[2]
        after = [opener[1:]] if opener.startswith("{") and len(opener) > 1 else []
        if after or len(words) > 3:
            warn(f, f"the text after the opening of {words[1]}'s inline description, "
                 f"{' '.join([*after, *words[3:]])!r}, is ignored, as DAGMan ignores it")
        name = words[1] if keyword == "SUBMIT_DESCRIPTION" else f"{f.prefix}{words[1]}-InlineDesc"
        inline, rest, i = _inline(f, lines, i, opener, name)
        if keyword == "SUBMIT_DESCRIPTION" and rest:  # DAGMan reads no options after it: passed over
            opening, f.lineno = f.lineno, lines[i - 1][0]
            warn(f, f"the text after the closing of SUBMIT-DESCRIPTION {name}, {' '.join(rest)!r}, is "
                 "ignored, as DAGMan ignores it")
            f.lineno, rest = opening, []
        words = [*words[:2], opener, *rest]
    if keyword == "SUBMIT_DESCRIPTION":
        if inline is None or len(words) != 3:
            raise f.error("bad SUBMIT-DESCRIPTION", "SUBMIT-DESCRIPTION name { ... }", f.current)
        _add_description(f, inline)
        return i
    _parse_node_decl(f, words, subdag=subdag, final=keyword == "FINAL", inline=inline,
                     service=keyword == "SERVICE", provisioner=keyword == "PROVISIONER")
    return i


def _add_description(f: DagFile, inline: InlineDescription) -> None:
    """A SUBMIT-DESCRIPTION name is one name space for the whole DAG, as DAGMan keeps it: within a DAG
    file and its INCLUDEs a later definition replaces an earlier one (``Dag::add_inline_desc``); a
    splice's never replaces its including DAG's, wherever the SPLICE line is (``LiftSplices`` adds a
    splice's descriptions to its parent's without replacing them).  Either way DAGMan warns."""
    name, scope = inline.name, f.prefix
    known = f.dag.descriptions.get(name)
    if known is not None:
        other = f.dag.description_scopes[name]
        if len(other) < len(scope) or (other != scope and scope.startswith(other)):
            if known.lines != inline.lines:
                warn(f, f"SUBMIT-DESCRIPTION {name} is defined by an including DAG too; that one is used")
            return
        warn(f, f"SUBMIT-DESCRIPTION {name} is defined again; this definition is used")
    f.dag.descriptions[name] = inline
    f.dag.description_scopes[name] = scope
