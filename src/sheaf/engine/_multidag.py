"""Several DAG files in one run, as ``condor_submit_dag a.dag b.dag`` runs them.

DAGMan reads every file into one DAG.  With ``DAGMAN_MUNGE_NODE_NAMES`` (true by default) each
node is renamed ``<n>.<name>`` (in a splice each part: ``<n>.<splice>+<n>.<name>``), ``n`` the file's
place on the command line counting from 0, so two
files may use the same names and the DAGs stay independent (:func:`combine_dags`); without it the
files are read in turn into one name space (``parse_dag(a, b)``), where a name used twice is an
error.  The setting is read from the first file's CONFIG.  The files DAGMan writes
are named after the first (*primary*) DAG file: ``<primary>.nodes.log``, ``<primary>.metrics``,
and the rescue DAG ``<primary>_multi.rescueNNN``.  One FINAL node in all; the first file's
settings (CONFIG, DOT, NODE_STATUS_FILE, JOBSTATE_LOG) win over later files', as a second
setting of each does within one file; a later file's ``SET_JOB_ATTR`` and ``ENV SET`` values win, as
the last one named does.
"""

from __future__ import annotations

__all__ = ["combine_dags", "munges_names"]

from dataclasses import replace

from sheaf.condor import Dag
from sheaf.errors import FormatError


def munges_names(first: Dag) -> bool:
    """``DAGMAN_MUNGE_NODE_NAMES`` as the first DAG file's CONFIG sets it (default true)."""
    return first.flag("DAGMAN_MUNGE_NODE_NAMES", True)


def combine_dags(dags: list[Dag]) -> Dag:
    """One DAG of ``dags`` (at least two, independent), named after the first, nodes renamed."""
    first = dags[0]
    out = Dag(first.path, {}, {}, {}, {}, {}, first.config_path, files=tuple(d.path for d in dags),
              dot_options=first.dot_options)
    for index, dag in enumerate(dags):
        def name(n: str, i: int = index) -> str:
            # DAGMan munges every name as it is parsed, a splice's own nodes too: 0.S1+0.A
            return "+".join(f"{i}.{part}" for part in n.split("+"))

        for old, spec in dag.nodes.items():
            new = name(old)
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
            if key not in out.config and key in dag.config_lines:
                out.config_lines[key] = dag.config_lines[key]
            out.config.setdefault(key, value)
        out.config_path = out.config_path or dag.config_path
        out.dot = out.dot or dag.dot
        out.jobstate_log = out.jobstate_log or dag.jobstate_log
        if out.node_status_file is None and dag.node_status_file is not None:
            out.node_status_file, out.node_status_always = dag.node_status_file, dag.node_status_always
        out.cycle = out.cycle or tuple(name(n) for n in dag.cycle)
        for label, description in dag.descriptions.items():
            out.descriptions.setdefault(label, description)
        out.env.update(dag.env)  # DAGMan merges each file's ENV SET in turn: a later value wins
        out.env_get += tuple(v for v in dag.env_get if v not in out.env_get)
        out.weak.update((name(p), name(c)) for p, c in dag.weak)
        out.services.update((name(old), replace(spec, name=name(old))) for old, spec in dag.services.items())
        out.job_attrs.update(dag.job_attrs)  # SET_JOB_ATTR: the last value named wins (DAGMan's manual)
        out.warnings.extend(dag.warnings)
        out.strict_warnings.extend(dag.strict_warnings)
        for category, where in dag.maxjobs_lines.items():
            out.maxjobs_lines.setdefault(category, where)
        for category, place in dag.category_lines.items():
            out.category_lines.setdefault(category, place)
    return out
