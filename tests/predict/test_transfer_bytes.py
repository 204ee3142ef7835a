"""Data jobs' transfer time from the files' sizes: the data pass records what each stage-in,
stage-out and inter-site job moves, plan.json carries it (``bytes``, ``unknown_sizes``), and
``sheaf predict`` charges it at the model's bandwidth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_predict_app import env, sheaf

from sheaf.model import Job, Use, Workflow
from sheaf.planner._transfer_bytes import TransferBytes

IN_SIZE, MADE_SIZE, OUT_SIZE = 1_000, 2_000_000, 3_000_000

__all__ = ["env"]  # the fixture, shared with test_predict_app


SITES = """pegasus: 5.0.4
sites:
- name: local
  directories: []
{sites}"""
SITE = """- name: {name}
  directories:
  - type: sharedScratch
    path: {work}/{name}
    fileServers:
    - url: file://{work}/{name}
      operation: all
"""
TRANSFORMATIONS = """pegasus: 5.0.4
transformations:
- name: first
  sites: [{{name: one, pfn: {exe}, type: installed}}]
- name: second
  sites: [{{name: two, pfn: {exe}, type: installed}}]
"""
REPLICAS = """pegasus: 5.0.4
replicas:
- {{lfn: f.a, pfns: [{{site: local, pfn: {work}/f.a}}]}}
- {{lfn: f.x, pfns: [{{site: local, pfn: {work}/f.x}}]}}
"""
# f.a sized by ``size``, f.b by its metadata alone (as hand-written files may), f.c by both (as
# Pegasus's Python API writes it), f.x not at all
WORKFLOW = f"""pegasus: 5.0.4
name: two-sites
jobs:
- type: job
  name: first
  id: a
  arguments: []
  uses:
  - {{lfn: f.a, type: input, size: {IN_SIZE}}}
  - {{lfn: f.x, type: input}}
  - {{lfn: f.b, type: output, stageOut: false, registerReplica: false, metadata: {{size: {MADE_SIZE}}}}}
- type: job
  name: second
  id: b
  arguments: []
  uses:
  - {{lfn: f.b, type: input}}
  - {{lfn: f.c, type: output, stageOut: true, registerReplica: false, size: {OUT_SIZE},
     metadata: {{size: {OUT_SIZE}}}}}
jobDependencies:
- {{id: a, children: [b]}}
"""


def two_sites(work: Path) -> None:
    """``a`` on site one reads f.a (sized) and f.x (no size) and makes f.b, which ``b`` on site two
    reads to make f.c, staged out: a stage-in, an inter-site and a stage-out job on one path."""
    exe = work / "tool.sh"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    sites = "".join(SITE.format(name=name, work=work) for name in ("one", "two"))
    (work / "sites.yml").write_text(SITES.format(sites=sites))
    (work / "transformations.yml").write_text(TRANSFORMATIONS.format(exe=exe))
    (work / "replicas.yml").write_text(REPLICAS.format(work=work))
    for name in ("f.a", "f.x"):
        (work / name).write_text(name)
    (work / "workflow.yml").write_text(WORKFLOW)


@pytest.fixture
def planned(tmp_path: Path, env: dict[str, str]) -> Path:
    two_sites(tmp_path)
    done = sheaf("plan", "workflow.yml", "--dir", "submit", "-s", "one,two", "--output-dir",
                 str(tmp_path / "out"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.split("submit directory: ")[1].splitlines()[0])


def data_jobs(directory: Path) -> dict[str, dict[str, Any]]:
    jobs = json.loads((directory / "plan.json").read_text())["jobs"]
    return {job["type"]: job for job in jobs if job["type"] in ("stage_in", "inter_site", "stage_out")}


def test_plan_json_records_the_bytes_each_transfer_job_moves(planned: Path) -> None:
    jobs = data_jobs(planned)
    assert jobs["stage_in"]["bytes"] == IN_SIZE and jobs["stage_in"]["unknown_sizes"] == 1  # f.x
    assert jobs["inter_site"]["bytes"] == MADE_SIZE and "unknown_sizes" not in jobs["inter_site"]
    assert jobs["stage_out"]["bytes"] == OUT_SIZE
    plan = json.loads((planned / "plan.json").read_text())
    others = [job for job in plan["jobs"] if job["type"] not in jobs]
    assert others and all("bytes" not in job for job in others)


def predict(directory: Path, env: dict[str, str], bandwidth: float) -> dict[str, Any]:
    model = directory.parent / f"model-{bandwidth:g}.json"
    model.write_text(json.dumps({"format": "sheaf-overheads/1",
                                 "backends": {"local": {"bandwidth": bandwidth}}}))
    done = sheaf("predict", str(directory), "--json", "--no-history", "--slots", "2", "--overheads",
                 str(model), cwd=directory, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert isinstance(got, dict)
    return got


def test_a_low_bandwidth_lengthens_the_prediction_by_bytes_over_bandwidth(planned: Path,
                                                                          env: dict[str, str]) -> None:
    fast = predict(planned, env, 1e15)
    slow = predict(planned, env, 1e5)
    moved = (IN_SIZE + MADE_SIZE + OUT_SIZE) / 1e5  # all three transfers lie on the one path
    assert slow["critical_path_s"] - fast["critical_path_s"] == pytest.approx(moved, rel=1e-3)
    assert slow["makespan_s"] - fast["makespan_s"] == pytest.approx(moved, rel=0.1)
    assert slow["runtime_sources"]["stage_in"] == "sizes"
    text = sheaf("predict", str(planned), "--no-history", cwd=planned, env=env).stdout
    assert "1 data jobs move 1 files of unknown size, counted as 0 bytes" in text


def test_a_traces_sizes_in_bytes_reach_plan_json(tmp_path: Path, env: dict[str, str]) -> None:
    trace = {"name": "t", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": [{"name": "a", "id": "a_ID1", "parents": [], "children": [],
                                     "inputFiles": ["in1", "in2"], "outputFiles": ["out1"]}],
                          "files": [{"id": "in1", "sizeInBytes": 10}, {"id": "in2", "sizeInBytes": 32},
                                    {"id": "out1", "sizeInBytes": 7}]},
        "execution": {"makespanInSeconds": 1, "executedAt": "2024", "tasks": [
            {"id": "a_ID1", "runtimeInSeconds": 1.0, "command": {"program": "true", "arguments": []}}]}}}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    (tmp_path / "input").mkdir()
    for name in ("in1", "in2"):
        (tmp_path / "input" / name).write_text(name)
    done = sheaf("plan", "t.json", "--dir", "runs", "--input-dir", "input", "--output-dir", "out",
                 cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    directory = Path(done.stdout.split("submit directory: ")[1].splitlines()[0])
    jobs = data_jobs(directory)
    assert jobs["stage_in"]["bytes"] == 42 and jobs["stage_out"]["bytes"] == 7


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.none() | st.integers(0, 1 << 40), st.booleans()),
                max_size=12),
       st.lists(st.sampled_from("abcdefg"), max_size=8))
def test_bytes_are_the_sum_of_the_first_stated_sizes(uses: list[tuple[str, int | None, bool]],
                                                     moved: list[str]) -> None:
    """A size is a use's ``size`` or its metadata's; the first use stating one wins; the rest are unknown."""
    jobs = {}
    first: dict[str, int] = {}
    for i, (lfn, size, in_metadata) in enumerate(uses):
        stated = in_metadata and size is not None
        use = Use(lfn, metadata={"size": str(size)}) if stated else Use(lfn, size=size)
        jobs[f"j{i}"] = Job(f"j{i}", "t", uses=(use,))
        if size is not None:
            first.setdefault(lfn, size)
    workflow = Workflow("w", jobs=jobs)
    expected = (sum(first.get(lfn, 0) for lfn in moved), sum(lfn not in first for lfn in moved))
    assert TransferBytes().of(workflow, moved) == expected
