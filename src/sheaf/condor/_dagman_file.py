"""The parse state of one DAG file, and the pieces of the grammar every command uses.

A :class:`DagFile` is the top file, a splice or an INCLUDEd file; an INCLUDEd file shares its
includer's node list, splices and command order (its commands are the includer's), a splice has
its own, with its name as the prefix of its nodes.  Numbers are read as DAGMan reads them (C's
``stoi``: a leading number, into a C ``int``); a file named in a command is resolved against the
directory of the file that names it.  Warnings (what sheaf does not carry out) are kept once each,
as ``file:line: message``.

Words, as DAGMan's lexer reads them: blanks separate them; a quote (``"`` or ``'``) runs to the same
quote, blanks included, a backslash within it taking the next character as it is.  A word keeps its
quotes where DAGMan keeps them (a node name), and loses them where DAGMan reads a file or a directory
(:func:`bare`).  Keywords are case-insensitive and ``-`` is ``_`` in them (:func:`dag_keyword`:
``ABORT-DAG-ON`` is ``abort_dag_on``).  A line starting ``#`` or ``//`` is a comment.
"""

from __future__ import annotations

__all__ = ["INT_MAX", "INT_MIN", "DagFile", "Quoted", "bare", "dag_int", "dag_keyword", "file_option",
           "read_lines", "resolve", "split_words", "warn"]

import functools
import os
import re

from sheaf._fields import INT_MAX, INT_MIN, NAME_MAX, long_component
from sheaf._text import read_text
from sheaf.condor._dagman_records import Dag
from sheaf.errors import FormatError


class DagFile:
    """Parse state of one DAG file (the top file, or a splice/include)."""

    def __init__(self, path: str, directory: str, prefix: str, dag: Dag, stack: tuple[str, ...]) -> None:
        self.path = path
        self.dir = directory
        self.prefix = prefix
        self.dag = dag
        self.stack = stack
        self.local: list[str] = []  # node names defined in this file (for ALL_NODES)
        self.nested: list[str] = []  # the nodes of its splices (and theirs): with local, a splice's nodes
        self.splices: dict[str, tuple[list[str], list[str]]] = {}  # name -> (sources, sinks)
        self.pins: dict[str, tuple[dict[int, list[str]], dict[int, list[str]]]] = {}  # splice -> (in, out)
        self.pin_in: dict[int, list[str]] = {}  # this file's PIN_IN / PIN_OUT (a splice's own)
        self.pin_out: dict[int, list[str]] = {}
        self.pin_lines: list[tuple[str, str, int]] = []  # (node, file, line) of each pin, for its error
        self.all_nodes: list[tuple[str, list[str], int, str, int]] = []  # deferred ALL_NODES commands
        self.later: list[tuple[str, list[str], int, str, int]] = []  # commands naming a node declared later
        self.order = [0]  # commands seen so far (shared with INCLUDEd files): "the last one wins"
        # PARENT/CHILD and CONNECT lines in file order, an INCLUDEd file's where it is included, as DAGMan
        # carries them out: (parents, children, line, WEAK) -- a CONNECT's with WEAK None
        self.edges: list[tuple[list[str], list[str], int, bool | None]] = []
        # DAGMan's node ids, the order its two passes over a file create nodes: node -> a key that sorts
        # as the ids do (shared by all the files of a parse); ``key`` is where this file's nodes fall
        self.rank: dict[str, tuple[int, ...]] = {}
        self.key: tuple[int, ...] = ()
        self.lineno = 0
        self.current = ""  # the line being parsed (VARS values keep their spacing)
        # a rescue DAG's DONE nodes, RETRY counts and UNLESS-EXIT values, kept apart from the DAG's own
        # settings because they say where the run starts (None: this file is no rescue DAG)
        self.rescue: tuple[set[str], dict[str, int], dict[str, int]] | None = None

    def error(self, message: str, rule: str, value: object) -> FormatError:
        return FormatError(message, rule=rule, value=value, path=self.path, line=self.lineno)


# a number as C's ``stoi`` reads one, from the start of a word (ASCII digits only: ``int`` also takes
# "1_0" and "\u0661", an Arabic-Indic one)
_INT_RE = re.compile(r"[-+]?[0-9]+")


def dag_int(f: DagFile, text: str, what: str, low: int = INT_MIN) -> int:
    """An integer of the DAG grammar as DAGMan reads one (``std::stoi``): the number the word starts
    with, the text after it ignored -- with a warning here, so that ``PRIORITY A 1.5`` is seen to be 1 --
    a word starting with no number refused, a number beyond a C ``int`` refused as ``stoi`` refuses it;
    ``low`` (default INT_MIN): sheaf's bound where DAGMan's parser has one."""
    match = _INT_RE.match(text)
    if match is None:
        raise f.error(f"{what} is not an integer", f"{what} is an integer", text)
    digits = match.group()
    # more than ten significant digits is beyond an int (and int() of thousands of digits is refused)
    value = int(digits) if len(digits.lstrip("+-").lstrip("0")) <= 10 else INT_MAX + 1
    if not max(low, INT_MIN) <= value <= INT_MAX:
        raise f.error(f"{what} is out of range", f"{what} is {low} to {INT_MAX}", text)
    if match.end() < len(text):
        warn(f, f"{what} {text!r} is read as {value}: the text after the number, "
             f"{text[match.end():]!r}, is ignored, as DAGMan ignores it")
    return value


@functools.lru_cache(maxsize=4096)
def resolve(base: str, name: str) -> str:
    """``name`` against the directory ``base``, normalised.  Cached: a plan's DAG names one shared
    submit description from thousands of JOB lines, and normpath is a large share of a node's read."""
    return os.path.normpath(os.path.join(base, name))


def read_lines(f: DagFile, what: str = "DAG file") -> list[tuple[int, list[str], str]]:
    """Logical lines, split at blanks (a line with quotes is split again by :func:`split_words` where its
    command's words may be quoted), as DAGMan's parser reads them: each line stripped; blank and comment
    lines passed over, inside a continuation too; a line ending in ``\\`` joined to the next one, with a
    blank between and its own blanks before the ``\\`` kept (a quoted VARS value keeps them).  A logical
    line is numbered by its last line, as DAGMan numbers a command in its messages."""
    out: list[tuple[int, list[str], str]] = []
    pending = ""
    for number, raw in enumerate(read_text(f.path, what).splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#" or line.startswith("//"):
            continue
        if pending:
            line = f"{pending} {line}"
        if line[-1] == "\\":
            pending = line[:-1]
            continue
        pending = ""
        out.append((number, line.split(), line))
    if pending.strip():  # the file ends inside a continuation: the command is read as it stands
        out.append((number, pending.split(), pending.strip()))
    return out


def dag_keyword(word: str) -> str:
    """A keyword as DAGMan compares it: case-insensitive, ``-`` and ``_`` the same."""
    return word.upper().replace("-", "_")


class Quoted(str):
    """A word written with quotes: the word as DAGMan keeps it (quotes kept, escapes read), and
    ``bare``, the word without its quotes."""

    bare: str


def bare(word: str) -> str:
    """``word`` without its quotes: a file or directory name as DAGMan reads it."""
    return word.bare if isinstance(word, Quoted) else word


def split_words(f: DagFile, line: str) -> list[str]:
    """``line``'s words, quotes read (module docstring); an unclosed quote is an error."""
    if '"' not in line and "'" not in line:
        return line.split()
    words: list[str] = []
    kept: list[str] = []
    plain: list[str] = []
    quote = ""
    escaped = quoted = False
    for char in line:
        if escaped:
            kept.append(char)
            plain.append(char)
            escaped = False
        elif quote:
            if char == "\\":
                escaped = True
            elif char == quote:
                kept.append(char)
                quote = ""
            else:
                kept.append(char)
                plain.append(char)
        elif char in " \t\r":
            if kept:
                words.append(_word(kept, plain, quoted))
                kept, plain, quoted = [], [], False
        elif char in "\"'":
            kept.append(char)
            quote = char
            quoted = True
        else:
            kept.append(char)
            plain.append(char)
    if quote:
        raise f.error("a quote is not closed", "a quoted word ends with the quote it starts with", line)
    if kept:
        words.append(_word(kept, plain, quoted))
    return words


def _word(kept: list[str], plain: list[str], quoted: bool) -> str:
    if not quoted:
        return "".join(kept)
    word = Quoted("".join(kept))
    word.bare = "".join(plain)
    return word


def file_option(f: DagFile, words: list[str], keyword: str) -> str:
    if len(words) < 2:
        raise f.error(f"{keyword} needs a file name", f"{keyword} file", " ".join(words))
    return resolve(f.dir, fitting_name(f, bare(words[1]), keyword))


def fitting_name(f: DagFile, name: str, keyword: str) -> str:
    """``name``, refused at its line when one of its components is longer than a file name may be: no
    file of that name can be read or written (``ENAMETOOLONG``), which a run would otherwise meet only
    when it writes the file, as a storage failure."""
    if long_component(name):
        raise f.error(f"the {keyword} file name has a component longer than {NAME_MAX} bytes",
                      f"each component of a file name is at most {NAME_MAX} bytes", name)
    return name


def warn(f: DagFile, message: str, strict: int = 0) -> None:
    """A warning at the line being read; ``strict``: the least ``DAGMAN_USE_STRICT`` level that makes
    DAGMan treat it as an error (0: none does)."""
    text = f"{f.path}:{f.lineno}: {message}"
    if text not in f.dag.warnings:
        f.dag.warnings.append(text)
        if strict:
            f.dag.strict_warnings.append((strict, f.path, f.lineno, message))
