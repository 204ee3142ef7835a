"""Decaf clusters: the optimization chapter's 1000Genome shape (16 ``individuals`` tasks and one
``individuals_merge``, ranks 0-16) compared with expected files in golden/, and the chapter's five
rules checked."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from codegen_plans import node_description, write_planned

from sheaf.model import Job, Properties, Use, Workflow
from sheaf.planner import ExecJob, ExecutableWorkflow, Task

GOLDEN = Path(__file__).parent / "golden"
# The chapter's run script lists the individuals tasks in this order (rank 0..15).
RANGES = [(1, 15626), (171876, 187501), (15626, 31251), (187501, 203126), (140626, 156251),
          (156251, 171876), (62501, 78126), (234376, 250001), (78126, 93751), (31251, 46876),
          (203126, 218751), (46876, 62501), (218751, 234376), (125001, 140626), (93751, 109376),
          (109376, 125001)]


def genome_plan() -> ExecutableWorkflow:
    wf = Workflow("1000genome")
    tasks = []
    merged = [f"chr1n-{a}-{b}.tar.gz" for a, b in sorted(RANGES)]
    for n, (a, b) in enumerate(RANGES, start=1):
        jid = f"ID{n:07d}"
        argv = ("ALL.chr1.250000.vcf", "1", str(a), str(b), "250000")
        wf.jobs[jid] = Job(jid, "individuals", "1000genome", "1.0", arguments=argv,
                           uses=(Use("ALL.chr1.250000.vcf", optional=True),  # no replica: not staged
                                 Use(f"chr1n-{a}-{b}.tar.gz", "output")))
        tasks.append(Task(jid, "1000genome::individuals:1.0", "./individuals", argv, {}, 1))
    argv = ("1", *merged)
    wf.jobs["ID0000017"] = Job("ID0000017", "individuals_merge", "1000genome", "1.0", arguments=argv,
                               uses=(*(Use(m) for m in merged), Use("chr1n.tar.gz", "output")))
    tasks.append(Task("ID0000017", "1000genome::individuals_merge:1.0", "./individuals_merge", argv, {}, 2))
    cluster = ExecJob("merge_cluster1", "cluster", "cori", None, 1, tuple(tasks), aggregator="decaf",
                      profiles={"pegasus": {"runtime": "18000", "glite.arguments": "--qos=regular --nodes=17",
                                            "exitcode.successmsg": "Execution time in seconds:",
                                            "dagman.post": "pegasus-exitcode"},
                                "env": {"DECAF_ENV_SOURCE": "/global/env.sh"}},
                      executable="1Kgenome.json", label="cluster1")
    return ExecutableWorkflow("1000genome", wf, Properties(), [cluster], [], sites=("cori",),
                              clustering=("label",))


@pytest.fixture(scope="module")
def decaf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = write_planned(genome_plan(), tmp_path_factory.mktemp("decaf") / "plan")
    return Path(files.directory)


def test_run_script_matches_golden(decaf_dir: Path) -> None:
    script = decaf_dir / "jobs" / "000" / "merge_cluster1" / "merge_cluster1.sh"
    assert script.read_text() == (GOLDEN / "merge_cluster1.sh").read_text()
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert "srun --multi-prog ./merge_cluster1.conf" in text and text.startswith("#!/bin/bash\nset -e\n")
    # the multi-prog configuration is its own file (no job argument in the script), its lines
    # exactly as in the chapter's script from a 1000Genome run on Cori
    conf = (decaf_dir / "jobs" / "000" / "merge_cluster1" / "merge_cluster1.conf").read_text()
    assert conf == (GOLDEN / "merge_cluster1.conf").read_text()
    for line in ("0 ./individuals ALL.chr1.250000.vcf 1 1 15626 250000",
                 "7 ./individuals ALL.chr1.250000.vcf 1 234376 250001 250000",
                 "16 ./individuals_merge 1 chr1n-1-15626.tar.gz chr1n-15626-31251.tar.gz"):
        assert line in conf and line not in text


def test_json_matches_golden_and_the_five_rules(decaf_dir: Path) -> None:
    path = decaf_dir / "jobs" / "000" / "merge_cluster1" / "1Kgenome.json"
    assert path.read_bytes() == (GOLDEN / "1Kgenome.json").read_bytes()
    graph = msgspec.json.decode(path.read_bytes())["workflow"]
    nodes, edges = graph["nodes"], graph["edges"]
    assert [n["start_proc"] for n in nodes] == list(range(17)) and {n["nprocs"] for n in nodes} == {1}
    assert all(n["inports"] == [] and n["outports"] == ["out"] for n in nodes[:16])  # rule 1: roots
    assert nodes[16]["inports"] == ["in"] and nodes[16]["outports"] == []  # rule 1: the leaf
    assert {n["func"] for n in nodes[:16]} == {"individuals"} and nodes[16]["func"] == "individuals_merge"
    assert {e["name"] for e in edges} == {"individuals_individuals_merge"}  # rule 3
    assert [(e["source"], e["target"]) for e in edges] == [(i, 16) for i in range(16)]  # rules 4 and 5


def test_cluster_submit_runs_the_script(decaf_dir: Path) -> None:
    from sheaf.engine import parse_dag

    sub = node_description(parse_dag(str(decaf_dir / "1000genome.dag")), "merge_cluster1")
    assert sub["executable"] == str(decaf_dir / "jobs" / "000" / "merge_cluster1" / "merge_cluster1.sh")  # type: ignore[index]
    assert sub["initialdir"] == str(decaf_dir / "jobs" / "000" / "merge_cluster1")  # type: ignore[index]
    assert sub["batch_extra_submit_args"] == "--qos=regular --nodes=17"  # type: ignore[index]
    env = sub["environment"]  # type: ignore[index]
    assert f"PEGASUS_SCRATCH_DIR={decaf_dir}/scratch/cori" in env and "DECAF_ENV_SOURCE=/global/env.sh" in env
    dag = (decaf_dir / "1000genome.dag").read_text()
    assert "SCRIPT POST merge_cluster1 " in dag and " -s Execution+time+in+seconds: " in dag
