"""The ``DOT`` file: the DAG drawn for Graphviz, in DAGMan's layout (``Dag::DumpDotFile``).

A ``digraph DAG`` labelled with the time of writing; the INCLUDE header file's text copied in after
the label between DAGMan's two comment lines (a header that cannot be read is skipped, as DAGMan
skips it); one line per node whose shape and label show its state - ``(I)`` not yet submitted,
``(Pre)``/``(Post)`` a script running (dotted), ``(R)`` a job in the pool (two peripheries),
``(Done)`` (bold), ``(E)`` failed (a box) - then one line per edge.

When: once as the run starts (DONT-UPDATE, the default), and with UPDATE again whenever nodes changed
state, at most once per :data:`UPDATE_EVERY` seconds (DAGMan writes it from its event-loop cycle,
every ``DAGMAN_USER_LOG_SCAN_INTERVAL`` = 5 s by default) and once more when the run ends, so that
the last file shows the outcome.  OVERWRITE (the default) replaces the file atomically;
DONT-OVERWRITE writes ``<file>.<n>`` instead, n the first number not taken yet, counting from 0 (so
a rerun continues the numbering, as DAGMan's ``ChooseDotFileName`` does).
"""

from __future__ import annotations

__all__ = ["UPDATE_EVERY", "DotFile", "dot_text"]

import os
import time
from collections.abc import Callable

from sheaf.condor import Dag
from sheaf.engine.reports._files import write_atomic

UPDATE_EVERY = 1.0

# sheaf's node state -> DAGMan's drawing of it (states missing here are drawn "(I)")
_DRAWN = {
    "pre": ("ellipse", "Pre", " style=dotted"), "pre_deferred": ("ellipse", "Pre", " style=dotted"),
    "submitted": ("ellipse", "R", " peripheries=2"),
    "post": ("ellipse", "Post", " style=dotted"), "post_deferred": ("ellipse", "Post", " style=dotted"),
    "done": ("ellipse", "Done", " style=bold"), "failed": ("box", "E", ""),
}


def _header(path: str | None, name: str | None) -> list[str]:
    """The header file's text between DAGMan's comments, which name it as the DAG does."""
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    shown = name or path
    return [f"// Beginning of commands included from {shown}.\n", text,
            f"// End of commands included from {shown}.\n\n"]


def dot_text(dag: Dag, state_of: Callable[[str], str] = lambda _n: "waiting") -> str:
    """The graph with each node drawn in its state (``state_of``); the label has the wall-clock time."""
    out = ["digraph DAG {\n", f'    label="DAGMan Job status at {time.ctime()}";\n\n',
           *_header(dag.dot_options.include, dag.dot_options.include_name)]
    for name in dag.nodes:
        shape, label, style = _DRAWN.get(state_of(name), ("ellipse", "I", ""))
        out.append(f'    "{name}" [shape={shape} label="{name} ({label})"{style}];\n')
    out.append("\n")
    out.extend(f'    "{name}" -> "{child}";\n'
               for name, children in dag.children.items() for child in children)
    out.append("}\n")
    return "".join(out)


class DotFile:
    """Writes one run's DOT file(s) by the rules above."""

    def __init__(self, dag: Dag) -> None:
        self.dag = dag
        self._suffix = 0
        self._outdated = False
        self._last = -1e18

    def _name(self) -> str:
        assert self.dag.dot is not None
        if self.dag.dot_options.overwrite:
            return self.dag.dot
        while os.path.exists(f"{self.dag.dot}.{self._suffix}"):
            self._suffix += 1
        self._suffix += 1
        return f"{self.dag.dot}.{self._suffix - 1}"

    def write(self, state_of: Callable[[str], str], now: float) -> None:
        self._last, self._outdated = now, False
        write_atomic(self._name(), dot_text(self.dag, state_of))

    def changed(self) -> None:
        self._outdated = True

    def update(self, state_of: Callable[[str], str], now: float, force: bool = False) -> None:
        """With UPDATE: rewrite when nodes changed (at most every UPDATE_EVERY s; ``force`` at the end)."""
        if self.dag.dot_options.update and self._outdated and (force or now - self._last >= UPDATE_EVERY):
            self.write(state_of, now)
