"""pegasus-graphviz: a workflow drawn as a Graphviz DOT graph (``workflow_dot``, ``draw_workflow``).

As Pegasus's manual describes the tool: the workflow (Pegasus 5.0 YAML, DAX 3, as ``sheaf.formats``
reads them) becomes one node per job, labelled by ``label`` (``label``: the job's node label, else
its transformation; ``xform``, ``id``, ``xform-id``, ``label-xform``, ``label-id``), filled with one
colour per transformation; ``files`` adds a box per file, edges job -> output and input -> job; jobs
of the ``remove`` transformations are dropped with their edges; edges implied by a longer path are
removed unless ``simplify`` is off; ``width``/``height`` set the drawing's size.  Output ending in
``.png``, ``.jpg``, ``.jpeg``, ``.pdf``, ``.gif`` or ``.svg`` is drawn by Graphviz's ``dot`` (a
``UsageError`` naming it when it is not installed); any other name gets the DOT text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from graphlib import CycleError, TopologicalSorter

from sheaf.errors import UsageError
from sheaf.model import Workflow, all_uses

LABELS = ("label", "xform", "id", "xform-id", "label-xform", "label-id")
DRAWN = ("png", "jpg", "jpeg", "pdf", "gif", "svg")
#: one fill colour per transformation, in the order they are met (then again from the first)
_PALETTE = ("#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9",
            "#bc80bd", "#ccebc5", "#ffffb3", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
_FILE_FILL = "#ffed6f"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(kind: str, job_id: str, xform: str, node_label: str) -> str:
    parts = {"label": [node_label or xform], "xform": [xform], "id": [job_id], "xform-id": [xform, job_id],
             "label-xform": [node_label, xform] if node_label else [xform],
             "label-id": [node_label, job_id] if node_label else [job_id]}[kind]
    return "\n".join(parts)


def _reduced(nodes: list[str], children: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges no longer path implies (transitive reduction of an acyclic graph), each node's reach
    gathered from its children's in one pass, children first (no recursion: a chain of any length)."""
    try:
        order = list(TopologicalSorter({n: children.get(n, set()) for n in nodes}).static_order())
    except CycleError as exc:
        raise UsageError(f"the workflow has a cycle: {' -> '.join(map(str, exc.args[1]))}") from None
    reach: dict[str, set[str]] = {}
    for node in order:
        found: set[str] = set()
        for child in children.get(node, ()):
            found.add(child)
            found |= reach[child]
        reach[node] = found
    out: dict[str, set[str]] = {}
    for node in nodes:
        kids = children.get(node, set())
        implied = set().union(*(reach[k] for k in kids)) if kids else set()
        out[node] = kids - implied
    return out


def workflow_dot(workflow: Workflow, *, label: str = "label", simplify: bool = True, files: bool = False,
                 remove: Iterable[str] = (), width: float | None = None, height: float | None = None) -> str:
    """The DOT text of ``workflow`` (module docstring)."""
    if label not in LABELS:
        raise UsageError(f"--label {label}: must be one of {', '.join(LABELS)}")
    if (width is None) != (height is None):
        raise UsageError("give both --width and --height, or neither")
    dropped = set(remove)
    jobs = {job_id: job for job_id, job in workflow.jobs.items()
            if (job.file if job.is_subworkflow else job.name) not in dropped}
    children: dict[str, set[str]] = {job_id: set() for job_id in jobs}
    for parent, kids in workflow.dependencies.items():
        if parent in jobs:
            children[parent].update(k for k in kids if k in jobs and k != parent)
    file_nodes: set[str] = set()
    if files:
        for job_id, job in jobs.items():
            for use in all_uses(job):
                node = f"file:{use.lfn}"
                file_nodes.add(node)
                children.setdefault(node, set())
                if use.type == "input":
                    children[node].add(job_id)
                elif use.type in ("output", "checkpoint"):
                    children[job_id].add(node)
    names = sorted(jobs) + sorted(file_nodes)
    edges = _reduced(names, children) if simplify else children
    lines = ["digraph dag {"]
    if width is not None and height is not None:
        lines.append(f'    size="{width:0.1f},{height:0.1f}"')
    lines += ["    ratio=fill", '    node [style=filled,color="#444444",fillcolor="#ffed6f"]',
              "    edge [arrowhead=normal,arrowsize=1.0]", ""]
    colours: dict[str, str] = {}
    shown = {name: name[5:] if name in file_nodes else name for name in names}
    for name in names:
        if name in file_nodes:
            lines.append(f'    {_quoted(shown[name])} [shape=rect,color="#000000",fillcolor="{_FILE_FILL}",'
                         f'label={_quoted(shown[name])}]')
            continue
        job = jobs[name]
        xform = (job.file or job.name) if job.is_subworkflow else job.name
        fill = colours.setdefault(xform, _PALETTE[len(colours) % len(_PALETTE)])
        text = _label(label, name, xform, job.node_label or "")
        lines.append(f'    {_quoted(name)} [shape=ellipse,color="#000000",fillcolor="{fill}",'
                     f'label={_quoted(text)}]')
    for name in names:
        for child in sorted(edges.get(name, ())):
            lines.append(f'    {_quoted(shown[name])} -> {_quoted(shown[child])} [color="#000000"]')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_workflow(workflow: Workflow, output: str | None, **options: object) -> str | None:
    """Write ``workflow``'s graph to ``output`` (DOT text, or drawn by ``dot`` for an image name);
    without ``output`` return the DOT text for the caller to print."""
    text = workflow_dot(workflow, **options)  # type: ignore[arg-type]
    if output is None:
        return text
    extension = os.path.splitext(output)[1].lower().lstrip(".")
    if extension not in DRAWN:
        with open(output, "w", encoding="utf-8") as out:
            out.write(text)
        return None
    dot = shutil.which("dot")
    if dot is None:
        raise UsageError(f"drawing {output} needs Graphviz's 'dot' on PATH (write a .dot file instead)")
    with tempfile.NamedTemporaryFile("w", suffix=".dot", encoding="utf-8") as source:
        source.write(text)
        source.flush()
        done = subprocess.run([dot, f"-T{extension}", "-o", output, source.name], capture_output=True,
                              text=True, check=False)
    if done.returncode != 0:
        raise UsageError(f"dot could not draw {output}: {done.stderr.strip()}")
    return None
