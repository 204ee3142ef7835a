"""``<dag>.metrics``: the JSON summary DAGMan writes when a run ends (``dagman_metrics.cpp``).

Version 2 by default (``DAGMAN_METRICS_FILE_VERSION``; version 1 names nodes "jobs"), the keys in
DAGMan's order, ``DagStatus`` last; with ``DAGMAN_REPORT_GRAPH_METRICS`` the graph's height (the
longest chain of nodes), width (the most nodes on one level), edges and vertices too.

How sheaf fills DAGMan's fields: ``dagman_id`` is the engine's DAGMan job id (its process id, the
``$(DAGManJobId)`` its node jobs see), ``parent_dagman_id`` the one of the run that started this DAG
as a SUBDAG (empty at the top); ``rescue_dag_number`` the rescue DAG the run started from (0 for
none); node counts split plain nodes from SUBDAG nodes, a node done at the start (DONE in the DAG or
its rescue DAG) counting as succeeded, as DAGMan's bootstrap counts it; ``jobs_submitted`` counts
job procs submitted (NOOP nodes' included; a ``queue N`` job counts N), ``jobs_succeeded`` the procs
that exited with 0, as the manual defines it (``dagman_metrics.cpp`` writes every completed proc
there), SERVICE nodes' jobs included.  SERVICE nodes are not among the nodes: ``service_nodes``
counts them, ``service_nodes_succeeded``/``_failed`` those whose job exited with 0 / failed or was
removed before the DAG ended (one removed as the DAG ends is neither), and version 2's totals add
them; ``provisioner_nodes`` is 1 with a PROVISIONER node (counted among the nodes too).
``version`` is sheaf's.  Written as DAGMan writes it: ``"key":value``, four spaces in.
"""

from __future__ import annotations

__all__ = ["RunCounts", "graph_shape", "metrics_text"]

import json
from dataclasses import dataclass

from sheaf import __version__
from sheaf.condor import Dag
from sheaf.model import kahn_levels


@dataclass(slots=True)
class RunCounts:
    """What the loop counts while the run goes (from the node events)."""

    jobs_submitted: int = 0
    jobs_succeeded: int = 0
    services_succeeded: int = 0  # SERVICE nodes whose job exited with 0
    services_failed: int = 0  # those whose job failed or was removed before the DAG ended


def graph_shape(dag: Dag) -> tuple[int, int]:
    """(height, width) of an acyclic DAG by levels (Kahn's order); (0, 0) with a cycle."""
    levels, blocked = kahn_levels(dag.nodes, dag.parents.__getitem__, dag.children.__getitem__)
    return (0, 0) if blocked else (len(levels), max(map(len, levels), default=0))


def metrics_text(dag: Dag, states: dict[str, str], counts: RunCounts, *, start: float, end: float,
                 exit_code: int, dag_status: int, dagman_id: str, parent_id: str, rescue_number: int,
                 version: int = 2, graph: bool = False) -> str:
    plain = {"total": 0, "failed": 0, "succeeded": 0}
    subdag = dict(plain)
    for name, spec in dag.nodes.items():
        tally = subdag if spec.subdag else plain
        tally["total"] += 1
        tally["failed"] += states[name] == "failed"
        tally["succeeded"] += states[name] == "done"
    word = "nodes" if version >= 2 else "jobs"
    out: dict[str, object] = {
        "client": "condor_dagman", "version": __version__, "type": "metrics"}
    if version >= 2:
        out["metrics_version"] = 2
    out.update({"start_time": round(start, 3), "end_time": round(end, 3), "duration": round(end - start, 3),
                "exitcode": exit_code, "dagman_id": dagman_id, "parent_dagman_id": parent_id,
                "rescue_dag_number": rescue_number})
    if version >= 2:
        out["has_final_node"] = dag.final is not None
    out.update({word: plain["total"], f"{word}_failed": plain["failed"],
                f"{word}_succeeded": plain["succeeded"],
                f"dag_{word}": subdag["total"], f"dag_{word}_failed": subdag["failed"],
                f"dag_{word}_succeeded": subdag["succeeded"]})
    total = plain["total"] + subdag["total"]
    ran = plain["failed"] + plain["succeeded"] + subdag["failed"] + subdag["succeeded"]
    if version >= 2:  # SERVICE nodes are counted apart, and in the totals (version 1 has none)
        out.update({"provisioner_nodes": int(dag.provisioner is not None), "service_nodes": len(dag.services),
                    "service_nodes_failed": counts.services_failed,
                    "service_nodes_succeeded": counts.services_succeeded})
        total += len(dag.services)
        ran += counts.services_failed + counts.services_succeeded
    out.update({f"total_{word}": total, f"total_{word}_run": ran})
    if version >= 2:
        out.update({"jobs_submitted": counts.jobs_submitted, "jobs_succeeded": counts.jobs_succeeded,
                    "jobs_failed": counts.jobs_submitted - counts.jobs_succeeded})
    if graph:
        height, width = graph_shape(dag) if dag_status != 5 else (0, 0)
        out.update({"graph_height": height, "graph_width": width,
                    "graph_num_edges": sum(len(c) for c in dag.children.values()),
                    "graph_num_vertices": len(dag.nodes)})
    out["DagStatus"] = dag_status
    return json.dumps(out, indent=4, separators=(",", ":")) + "\n"  # "key":value, as DAGMan writes it
