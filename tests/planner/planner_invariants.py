"""The invariants every plan must satisfy (checked on random DAGs and on the real traces)."""

from __future__ import annotations

from sheaf.model import Workflow, build_graph
from sheaf.planner import ExecutableWorkflow


def closure(n: int, edges: list[tuple[int, int]]) -> list[int] | None:
    """Reachability bitsets (bit c of reach[u]: c reachable from u), or None when there is a cycle."""
    children: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for p, c in edges:
        children[p].append(c)
        indeg[c] += 1
    order = [u for u in range(n) if indeg[u] == 0]
    for u in order:
        for c in children[u]:
            indeg[c] -= 1
            if indeg[c] == 0:
                order.append(c)
    if len(order) != n:
        return None
    reach = [0] * n
    for u in reversed(order):
        for c in children[u]:
            reach[u] |= (1 << c) | reach[c]
    return reach


def check(wf: Workflow, ew: ExecutableWorkflow, sites: dict[str, str] | None = None,
          horizontal_only: bool = False) -> None:
    jobs = ew.jobs
    # every abstract job runs exactly once
    where: dict[str, int] = {}
    for k, job in enumerate(jobs):
        for task in job.tasks:
            assert task.id not in where, f"{task.id} runs twice"
            where[task.id] = k
    assert sorted(where) == sorted(wf.jobs)
    # ids unique, edges unique, acyclic
    assert len({j.id for j in jobs}) == len(jobs)
    assert len(set(ew.edges)) == len(ew.edges)
    assert all(p != c for p, c in ew.edges)
    reach = closure(len(jobs), ew.edges)
    assert reach is not None, "the executable graph has a cycle"
    # every abstract dependency is preserved
    graph = build_graph(wf)
    position = {j: {t.id: i for i, t in enumerate(job.tasks)} for j, job in enumerate(jobs)}
    for p, c in graph.edges():
        a, b = where[graph.ids[p]], where[graph.ids[c]]
        if a == b:
            order = position[a]
            assert order[graph.ids[p]] < order[graph.ids[c]], "a cluster runs a child before its parent"
        else:
            assert reach[a] >> b & 1, f"{graph.ids[p]} -> {graph.ids[c]} lost"
    for job in jobs:
        if job.type != "cluster":
            assert len(job.tasks) == 1
            continue
        if sites is not None:  # clusters never mix sites
            assert {sites[t.id] for t in job.tasks} == {job.site}
        if job.technique in ("horizontal", "runtime"):
            assert len({t.transformation for t in job.tasks}) == 1
            assert job.transformation == job.tasks[0].transformation
            if horizontal_only:
                assert len({t.level for t in job.tasks}) == 1
    # levels: 1 + max level of the parents
    level = [1] * len(jobs)
    for p, c in sorted(ew.edges, key=lambda e: jobs[e[0]].level):
        level[c] = max(level[c], jobs[p].level + 1)
    assert [j.level for j in jobs] == level


def sites_of(ew: ExecutableWorkflow) -> dict[str, str]:
    return {t.id: j.site or "" for j in ew.jobs for t in j.tasks}


def label_cycle(wf: Workflow, key: str = "label") -> bool:
    """Independent oracle: would contracting each label's jobs make a cycle?"""
    graph = build_graph(wf)
    unit: dict[int, int] = {}
    labels: dict[str, int] = {}
    for i, jid in enumerate(graph.ids):
        job = wf.jobs[jid]
        value = job.profiles.get("pegasus", {}).get(key) if not job.is_subworkflow else None
        unit[i] = labels.setdefault(value, len(graph.ids) + len(labels)) if value else i
    ids = {u: k for k, u in enumerate(sorted(set(unit.values())))}
    edges = {(ids[unit[p]], ids[unit[c]]) for p, c in graph.edges() if unit[p] != unit[c]}
    return closure(len(ids), sorted(edges)) is None


def whole_cycle(wf: Workflow) -> bool:
    """Independent oracle: a sub-workflow job with a compute ancestor and a compute descendant."""
    graph = build_graph(wf)
    n = len(graph.ids)
    reach = closure(n, list(graph.edges()))
    assert reach is not None
    compute = [not wf.jobs[j].is_subworkflow for j in graph.ids]
    for s in range(n):
        if compute[s]:
            continue
        below = any(compute[c] for c in range(n) if reach[s] >> c & 1)
        above = any(compute[a] and reach[a] >> s & 1 for a in range(n))
        if below and above:
            return True
    return False
