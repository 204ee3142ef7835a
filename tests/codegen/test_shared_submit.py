"""Shared submit descriptions (``sheaf.submit.shared``, the default) against one description per job:
for every node, what ``condor_submit_dag`` would submit (the official bindings, the node's VARS set)
and what ``sheaf run`` launches (the engine's own expansion) must be the same either way."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("CONDOR_CONFIG", "/dev/null")

from codegen_plans import node_description, write_planned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf.condor._dagman import Dag
from sheaf.engine import parse_dag
from sheaf.engine._nodejob import render_node
from sheaf.engine._state import Submit
from sheaf.engine._submit import JobSpec
from sheaf.engine._submit import node_description as node_description_of
from sheaf.errors import PlanningError, ValidationError
from sheaf.model import (
    Job,
    Properties,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    TransformationSite,
    Workflow,
)
from sheaf.planner import plan

TC = TransformationCatalog({("ns", f"t{i}", "1.0"): Transformation(
    f"t{i}", "ns", "1.0", (TransformationSite("local", "/bin/echo"),)) for i in range(3)})
SC = SiteCatalog({"local": Site("local")})
# quotes are left out: the planner refuses an unclosed one, and the quoting of both kinds through a
# shared description is test_random_plans' test_arguments_with_spaces_and_quotes_survive_...
ARGS = st.text(st.sampled_from("ab -=/.,:;$()\\é\t{}[]%"), max_size=8).filter(
    lambda a: "$$(" not in a and "$(dollar)" not in a.lower() and not a.endswith("\\"))
PROFILES = st.sampled_from([{}, {"env": {"A": "x y"}}, {"condor": {"request_memory": "64"}},
                            {"pegasus": {"cores": "1"}, "dagman": {"retry": "2"}}])


#: how the jobs are clustered: not at all, or horizontally into seqexec or PMC clusters of a size
CLUSTERING = st.one_of(st.none(), st.tuples(st.sampled_from(["seqexec", "mpiexec"]), st.integers(1, 4)))


@st.composite
def workflows(draw: st.DrawFn) -> tuple[Workflow, tuple[str, int] | None]:
    wf = Workflow("shared")
    for i in range(draw(st.integers(1, 12))):
        wf.jobs[f"ID{i:07d}"] = Job(f"ID{i:07d}", f"t{draw(st.integers(0, 2))}", "ns", "1.0",
                                    arguments=tuple(draw(st.lists(ARGS, max_size=4))),
                                    profiles=draw(PROFILES))
    return wf, draw(CLUSTERING)


def _written(wf: Workflow, root: Path, shared: bool, clustering: tuple[str, int] | None = None) -> Dag:
    props = {"sheaf.submit.shared": str(shared).lower()}
    if clustering is not None:
        props |= {"pegasus.clusters.size": str(clustering[1]),
                  "pegasus.clusterer.job.aggregator": clustering[0]}
    planned = plan(wf, tc=TC, sc=SC, rc=None, properties=Properties(props), sites=["local"],
                   clustering=("horizontal",) if clustering else ())
    return parse_dag(write_planned(planned, root).dag)


def _launched(dag: Dag, name: str) -> JobSpec:
    spec = dag.nodes[name]
    return render_node(node_description_of(spec, dag.descriptions), spec, Submit(spec.name, 0, 0, 0), False,
                       dag.parents[name])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows())
def test_a_shared_description_gives_each_node_its_own_values(
        drawn: tuple[Workflow, tuple[str, int] | None]) -> None:
    wf, clustering = drawn
    root = Path(tempfile.mkdtemp())
    try:
        try:
            own = _written(wf, root / "own", False, clustering)
            shared = _written(wf, root / "shared", True, clustering)
        except (PlanningError, ValidationError):
            return  # arguments the planner refuses (an unclosed quote): not this test's business

        def norm(text: str) -> str:
            return text.replace(str(root / "shared"), str(root / "own"))

        assert own.nodes.keys() == shared.nodes.keys()
        assert not list((root / "shared").rglob("merge_*.sub"))  # every cluster shares a description
        for name in own.nodes:
            sub_a, sub_b = node_description(own, name), node_description(shared, name)
            keys = set(sub_a.keys())  # type: ignore[attr-defined]
            assert keys - {"JOB"} <= set(sub_b.keys())  # type: ignore[attr-defined]
            for key in keys - {"JOB"}:
                assert sub_a.expand(key) == norm(sub_b.expand(key)), (name, key)  # type: ignore[attr-defined]
            ja, jb = _launched(own, name), _launched(shared, name)
            assert ja.argv == tuple(map(norm, jb.argv)) and ja.env == jb.env, name
            assert (ja.stdout, ja.stderr, ja.cwd) == (norm(jb.stdout), norm(jb.stderr), norm(jb.cwd))
            for attr in ("pegasus_wf_dag_job_id", "pegasus_wf_dax_job_id", "RequestMemory", "RequestCpus",
                         "Cmd", "JobUniverse", "DAGNodeName", "pegasus_site", "pegasus_wf_xformation"):
                assert ja.ad.get(attr) == jb.ad.get(attr), (name, attr)
    finally:
        shutil.rmtree(root)


def test_a_thousand_jobs_of_two_transformations_share_two_descriptions(tmp_path: Path) -> None:
    wf = Workflow("many")
    for i in range(1000):
        wf.jobs[f"ID{i:07d}"] = Job(f"ID{i:07d}", f"t{i % 2}", "ns", "1.0", arguments=("-n", str(i)))
    planned = plan(wf, tc=TC, sc=SC, rc=None, properties=Properties(), sites=["local"])
    files = write_planned(planned, tmp_path / "p")
    assert [Path(f).name for f in files.submit_files] == ["create_dir_many_0_local.sub"]
    dag = parse_dag(files.dag)
    assert sorted(dag.descriptions) == ["shared.0.ns__t0_1.0.local", "shared.1.ns__t1_1.0.local"]
    assert node_description(dag, "t1_ID0000999").expand("arguments") == '"-n 999"'  # type: ignore[attr-defined]
    assert sum(1 for _ in tmp_path.joinpath("p").rglob("*.sub")) == 1
