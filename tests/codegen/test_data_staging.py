"""The data pass: working directories, create_dir/stage_in/stage_out/register/cleanup jobs, and the
tools they run (sheaf-transfer, sheaf-cleanup, sheaf-register) as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from codegen_plans import blackdiamond_plan, node_description, write_planned

from plan_lists import data_list
from sheaf.engine import parse_dag
from sheaf.errors import PlanningError
from sheaf.model import PFN, Directory, FileServer, Replica, ReplicaCatalog, Site, SiteCatalog, Use

TRANSFER = [sys.executable, "-m", "sheaf.jobtools.transfer"]


def test_stage_in_from_input_dir_and_replicas(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "f.a").write_text("A")
    plan = blackdiamond_plan(2)
    extra = tmp_path / "extra.dat"
    extra.write_text("E")
    job = plan.workflow.jobs["ID0000003"]
    job.uses = (*job.uses, Use("extra.dat"), Use("nowhere.dat", optional=True))
    plan.input_dir = str(inputs)
    plan.replica_catalog = ReplicaCatalog([Replica("extra.dat", (PFN("gsiftp://x/extra.dat", "condorpool"),
                                                                 PFN(f"file://{extra}", "local")))])
    files = write_planned(plan, tmp_path / "plan")
    assert not any("nowhere.dat" in w for w in plan.warnings)  # optional and found nowhere: left out
    dag = parse_dag(files.dag)
    first, second = "stage_in_local_condorpool_1_0", "stage_in_local_condorpool_2_0"
    assert dag.parents[first] == dag.parents[second] == ["create_dir_blackdiamond_0_condorpool"]
    assert dag.children[first] == ["preprocess_ID0000001"]
    assert dag.children[second] == ["merge_diamond-findrange-4_0_PID2_ID1"]
    scratch = os.path.join(files.directory, "scratch", "condorpool")
    entries = json.loads(data_list(Path(files.directory), first))
    assert [(e["lfn"], [u["url"] for u in e["src_urls"]], e["dest_urls"][0]["url"]) for e in entries] == [
        ("f.a", [f"file://{inputs}/f.a"], f"file://{scratch}/f.a")]
    entries = json.loads(data_list(Path(files.directory), second))
    # Default selector: the file:// replica first, the remote one after it (tried if the first fails)
    assert [u["url"] for u in entries[0]["src_urls"]] == [f"file://{extra}", "gsiftp://x/extra.dat"]


@pytest.mark.parametrize("shared", ["true", "false"])
def test_data_jobs_read_slices_of_one_lists_file(tmp_path: Path, shared: str) -> None:
    """Every data job's list is its --slice of <workflow>.lists: no file of its own, whether the job
    shares a description (VARS) or has its own."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "f.a").write_text("A")
    plan = blackdiamond_plan(2, cleanup="inplace", properties={"sheaf.submit.shared": shared,
                                                               "pegasus.file.cleanup.clusters.num": "1"})
    plan.input_dir = str(inputs)
    plan.data = replace(plan.data, output_dir=str(tmp_path / "out"), rc_file=str(tmp_path / "rc.yml"))
    last = plan.workflow.jobs["ID0000004"]
    last.uses = tuple(replace(use, stage_out=True, register_replica=True) if use.type == "output" else use
                      for use in last.uses)
    directory = Path(write_planned(plan, tmp_path / "plan").directory)
    kinds = {job["id"]: job["type"] for job in json.loads((directory / "plan.json").read_text())["jobs"]}
    listed = [node for node, kind in kinds.items() if kind in ("stage_in", "stage_out", "register")]
    assert sorted({kinds[node] for node in listed}) == ["register", "stage_in", "stage_out"]
    assert not [p for p in directory.glob("jobs/*/*") if p.stem in listed and p.suffix != ".sub"]
    texts = [data_list(directory, node) for node in listed]
    assert all(isinstance(json.loads(text), list) and json.loads(text) for text in texts)
    assert "".join(texts) == (directory / "blackdiamond.lists").read_text()  # the slices tile the file


def test_shared_scratch_from_the_site_catalog(tmp_path: Path) -> None:
    plan = blackdiamond_plan(2)
    shared = tmp_path / "shared"
    plan.site_catalog = SiteCatalog({"condorpool": Site("condorpool", directories=(
        Directory("sharedScratch", str(shared), True, (FileServer(f"file://{shared}"),)),))})
    files = write_planned(plan, tmp_path / "plan")
    text = node_description(parse_dag(files.dag), "preprocess_ID0000001").expand("initialdir")  # type: ignore[attr-defined]
    assert text == str(shared)
    # a file server URL without a scheme is a path, as Pegasus's PegasusURL reads it
    bare = blackdiamond_plan(2)
    bare.site_catalog = SiteCatalog({"condorpool": Site("condorpool", directories=(
        Directory("sharedScratch", str(shared), True, (FileServer(str(shared)),)),))})
    files = write_planned(bare, tmp_path / "plan1")
    assert node_description(parse_dag(files.dag), "preprocess_ID0000001").expand(  # type: ignore[attr-defined]
        "initialdir") == str(shared)
    remote = blackdiamond_plan(2)
    remote.site_catalog = SiteCatalog({"condorpool": Site("condorpool", directories=(
        Directory("sharedScratch", "/remote/scratch", True, (FileServer("gsiftp://h/remote/scratch"),)),))})
    files = write_planned(remote, tmp_path / "plan2")
    text = node_description(parse_dag(files.dag), "preprocess_ID0000001").expand("initialdir")  # type: ignore[attr-defined]
    assert text == f"{files.directory}/scratch/condorpool"


def test_an_lfn_escaping_the_working_directory_is_refused(tmp_path: Path) -> None:
    plan = blackdiamond_plan(2)
    job = plan.workflow.jobs["ID0000001"]
    job.uses = (*job.uses, Use("../../etc/passwd"))
    with pytest.raises(PlanningError, match="escape"):
        write_planned(plan, tmp_path / "plan")
    assert not (tmp_path / "plan").exists()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRANSFER, *args], capture_output=True, text=True, check=False)


def test_sheaf_transfer_copies_and_refuses(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    src = tmp_path / "a b.txt"
    src.write_text("data")
    pairs = tmp_path / "pairs"
    pairs.write_text(f"# comment\n'file://{src}' '{root}/sub/a b.txt'\n'{src}' {root}/c.txt\n")
    done = _run("--root", str(root), str(pairs))
    assert done.returncode == 0, done.stderr
    assert (root / "sub" / "a b.txt").read_text() == "data" and (root / "c.txt").read_text() == "data"
    pairs.write_text(f"'{src}' {root}/../escaped.txt\n")
    refused = _run("--root", str(root), str(pairs))
    assert refused.returncode == 2 and "escapes" in refused.stderr
    assert not (tmp_path / "escaped.txt").exists()
    os.symlink(tmp_path, root / "link")
    pairs.write_text(f"'{src}' {root}/link/escaped.txt\n")
    assert _run("--root", str(root), str(pairs)).returncode == 2  # through a symbolic link
    pairs.write_text(f"gsiftp://host/x {root}/x\n")
    assert _run("--root", str(root), str(pairs)).returncode == 2
    pairs.write_text(f"{tmp_path}/missing {root}/m\n")
    missing = _run("--root", str(root), str(pairs))
    assert missing.returncode == 1 and "source missing" in missing.stderr
    (tmp_path / "made").mkdir()  # a job's output named "made/": a directory, not a file
    pairs.write_text(f"{tmp_path}/made {root}/made\n")
    directory = _run("--root", str(root), str(pairs))
    assert directory.returncode == 1 and "source is a directory" in directory.stderr
    assert "source missing" not in directory.stderr
    pairs.write_text(f"'{src}' {root}/linked\n")
    assert _run("--link", "--root", str(root), str(pairs)).returncode == 0
    assert os.readlink(root / "linked") == str(src)
