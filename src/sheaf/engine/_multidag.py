"""Several DAG files in one run, as ``condor_submit_dag a.dag b.dag`` runs them.

DAGMan reads every file into one DAG.  With ``DAGMAN_MUNGE_NODE_NAMES`` (true by default) each
node is renamed ``<n>.<name>``, ``n`` the file's place on the command line counting from 0, so two
files may use the same names; without it a name used twice is an error.  The files DAGMan writes
are named after the first (*primary*) DAG file: ``<primary>.nodes.log``, ``<primary>.metrics``,
and the rescue DAG ``<primary>_multi.rescueNNN``.  One FINAL node in all; the first file's
settings (CONFIG, DOT, NODE_STATUS_FILE, JOBSTATE_LOG) win over later files', as a second
setting of each does within one file.
"""

from __future__ import annotations

__all__ = ["combine_dags"]

from dataclasses import replace

from sheaf.engine._dagfile import Dag
from sheaf.errors import FormatError


def _munge_config(dags: list[Dag]) -> bool:
    raw = next((d.config["DAGMAN_MUNGE_NODE_NAMES"] for d in dags if "DAGMAN_MUNGE_NODE_NAMES" in d.config), "true")
    return raw.strip().lower() in ("true", "1", "yes")


def combine_dags(dags: list[Dag]) -> Dag:
    """One DAG of ``dags`` (at least two), named after the first."""
    munge = _munge_config(dags)
    first = dags[0]
    out = Dag(first.path, {}, {}, {}, {}, {}, first.config_path)
    for index, dag in enumerate(dags):
        name = (lambda n, i=index: f"{i}.{n}") if munge else (lambda n: n)
        for old, spec in dag.nodes.items():
            new = name(old)
            if new in out.nodes:
                raise FormatError("a node name used in two DAG files (DAGMAN_MUNGE_NODE_NAMES is false)",
                                  rule="node names are unique across the DAG files of one run", value=old,
                                  path=dag.path, line=spec.line)
            out.nodes[new] = replace(spec, name=new)
            out.children[new] = [name(c) for c in dag.children[old]]
            out.parents[new] = [name(p) for p in dag.parents[old]]
        if dag.final is not None:
            if out.final is not None:
                raise FormatError("a second FINAL node", rule="one FINAL node in all the DAG files of a run",
                                  value=dag.final, path=dag.path, line=dag.nodes[dag.final].line)
            out.final = name(dag.final)
        for category, limit in dag.maxjobs.items():
            out.maxjobs.setdefault(category, limit)
        for key, value in dag.config.items():
            out.config.setdefault(key, value)
        out.config_path = out.config_path or dag.config_path
        out.dot = out.dot or dag.dot
        out.jobstate_log = out.jobstate_log or dag.jobstate_log
        if out.node_status_file is None and dag.node_status_file is not None:
            out.node_status_file, out.node_status_always = dag.node_status_file, dag.node_status_always
        out.cycle = out.cycle or tuple(name(n) for n in dag.cycle)
    return out
