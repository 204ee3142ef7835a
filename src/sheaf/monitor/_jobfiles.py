"""Where a node's job keeps its files, and the command it runs: read from its submit description.

The loader needs a cluster job's stdout (the seqexec/PMC task records are there) and the analyzer
needs a failed job's stdout, stderr, submit description and command.  A description's values are
expanded with the node's DAG ``VARS``, ``$(JOB)``, ``$(Cluster)``/``$(Process)`` and the
description's own macros -- the substitutions the files and commands sheaf plan writes use.  It is a
reading aid, not the engine's full submit language: whatever does not expand stays as written.
"""

from __future__ import annotations

__all__ = ["JobFiles", "job_files"]

import os
import re
import shlex
from dataclasses import dataclass

from sheaf import engine
from sheaf.engine import Dag
from sheaf.errors import SheafError

_MACRO = re.compile(r"\$\((\w+)\)")


@dataclass(frozen=True, slots=True)
class JobFiles:
    submit: str  # the description's file (the DAG file for an inline SUBMIT-DESCRIPTION)
    text: str  # the description as written
    stdout: str | None
    stderr: str | None
    directory: str
    argv: tuple[str, ...]

    @property
    def command(self) -> str:
        """The shell line that reruns the job by hand, from its initial directory."""
        return f"cd {shlex.quote(self.directory)} && {shlex.join(self.argv)}"


def _expand(text: str, values: dict[str, str]) -> str:
    for _ in range(8):  # nested macros; a cycle stops here, left as written
        new = _MACRO.sub(lambda m: values.get(m.group(1).lower(), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def _description_text(path: str, description: str | None, dag: Dag) -> str:
    if description is not None:
        return "".join(text + "\n" for _, text in dag.descriptions[description].lines)
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def job_files(dag: Dag, node: str, cluster: int = 0) -> JobFiles | None:
    """The files and command of ``node``'s job (None for a NOOP or SUBDAG node, or an unreadable
    description)."""
    spec = dag.nodes.get(node) or dag.services.get(node)
    if spec is None or spec.noop or spec.subdag:
        return None
    try:
        desc = engine.node_description(spec, dag.descriptions)  # the ClassAd-using reader: loaded when needed
    except (SheafError, OSError, KeyError):
        return None
    values = {k.lower(): raw for k, (raw, _) in desc.values.items()}
    values.update({k.lower(): v for k, v in spec.vars.items() if not k.startswith("+")})
    values.update(
        {"job": node, "cluster": str(cluster), "clusterid": str(cluster), "process": "0", "procid": "0"}
    )
    directory = _expand(values.get("initialdir", spec.directory), values)
    directory = os.path.join(spec.directory, directory)

    def path_of(key: str) -> str | None:
        raw = values.get(key)
        return None if raw is None else os.path.join(directory, _expand(raw, values))

    try:
        args = engine.split_arguments(_expand(values.get("arguments", ""), values))
    except SheafError:
        args = [_expand(values.get("arguments", ""), values)]
    argv = (_expand(values.get("executable", ""), values), *args)
    submit = (
        spec.submit if spec.description is None else f"{spec.path} (SUBMIT-DESCRIPTION {spec.description})"
    )
    return JobFiles(
        submit,
        _description_text(spec.submit, spec.description, dag),
        path_of("output"),
        path_of("error"),
        directory,
        argv,
    )
