"""The data pass end to end: ``sheaf plan`` then the real ``sheaf run`` (sharedfs), outputs delivered to
``--output-dir`` and registered, scratch left clean, and a re-plan reusing what the run registered."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from data_inputs import catalogs, diamond, job_types, plan_dir, plan_json, sheaf

from plan_lists import data_lists
from sheaf.formats import read_replica_catalog


def _plan(work: Path, *extra: str) -> Path:
    return plan_dir(sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                          *extra))


def _run(directory: Path) -> str:
    done = sheaf(directory, "run", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    catalogs(work)
    diamond(work)
    return work


def test_diamond_delivers_registers_cleans_and_replans_with_reuse(work: Path) -> None:
    out = work / "out"
    first = _plan(work, "--output-dir", str(out))
    assert job_types(first) == {"create_dir": 1, "stage_in": 1, "compute": 4, "stage_out": 1, "register": 1,
                                "cleanup": 3}
    _run(first)
    assert (out / "f.d").read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"
    assert sorted(os.listdir(out)) == ["f.d"]  # only what is marked stage_out
    assert os.listdir(first / "scratch" / "condorpool") == []  # intermediates and the staged copy gone
    # registered in the output replica catalog of the submit directory, as Pegasus 5 registers; the
    # catalog the plan read is left as it was, so planning again runs the workflow again
    rc = read_replica_catalog(first / "diamond.replicas.yml")
    assert [(p.pfn, p.site) for r in rc if r.lfn == "f.d" for p in r.pfns] == [(f"file://{out}/f.d", "local")]
    assert [r.lfn for r in read_replica_catalog(work / "replicas.yml")] == ["f.a"]
    again = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                  "--output-dir", str(out))
    assert "data reuse" not in again.stderr and job_types(plan_dir(again))["compute"] == 4
    # the output catalog read as the input catalog: f.d is registered, nothing to run
    reused = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                   "--output-dir", str(out), "--rc", str(first / "diamond.replicas.yml"))
    assert "data reuse: 4 job(s) not planned" in reused.stderr and job_types(plan_dir(reused)) == {}
    # pegasus-plan --reuse: the earlier submit directory's output catalog, named in its plan.json
    assert plan_json(first)["options"]["replica_output"] == {"file": str(first / "diamond.replicas.yml"),
                                                             "format": "yaml"}
    again = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                  "--output-dir", str(out), "--reuse", str(first))
    assert "data reuse: 4 job(s) not planned" in again.stderr and job_types(plan_dir(again)) == {}


def test_a_database_output_catalog_is_warned_about(work: Path) -> None:
    """pegasus.catalog.replica.output = JDBCRC (Pegasus's database catalog): sheaf writes files only,
    says so, and names the file it registers into."""
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                 "--output-dir", str(work / "out"), "-Dpegasus.catalog.replica.output=JDBCRC")
    directory = plan_dir(done)
    assert "pegasus.catalog.replica.output = JDBCRC is not supported" in done.stderr
    assert str(directory / "diamond.replicas.yml") in done.stderr


def test_partial_reuse_stages_the_registered_intermediates_in(work: Path) -> None:
    rc = (work / "replicas.yml").read_text()
    kept = work / "kept"
    kept.mkdir()
    for name in ("f.c0", "f.c1"):
        (kept / name).write_text(f"old {name}\n")
    (work / "replicas.yml").write_text(rc + "".join(
        f"- lfn: {name}\n  pfns:\n  - {{site: local, pfn: 'file://{kept / name}'}}\n"
        for name in ("f.c0", "f.c1")))
    directory = _plan(work, "--output-dir", str(work / "out"))
    assert job_types(directory)["compute"] == 1  # pre and both findranges are reused
    _run(directory)
    assert (work / "out" / "f.d").read_text() == "old f.c0\nold f.c1\nf.d\n"


@pytest.mark.parametrize("mode", ["none", "leaf"])
def test_cleanup_none_keeps_and_leaf_removes_everything(work: Path, mode: str) -> None:
    directory = _plan(work, "--output-dir", str(work / "out"), "--cleanup", mode, "--force")
    _run(directory)
    scratch = directory / "scratch" / "condorpool"
    if mode == "none":
        assert sorted(os.listdir(scratch)) == ["f.a", "f.b0", "f.b1", "f.c0", "f.c1", "f.d"]
    else:
        assert not scratch.exists()  # leaf: the files, then the emptied directory
    assert (work / "out" / "f.d").exists()


def test_without_an_output_site_outputs_stay_in_scratch_and_intermediates_go(work: Path) -> None:
    directory = _plan(work)
    assert "stage_out" not in job_types(directory)
    _run(directory)
    assert os.listdir(directory / "scratch" / "condorpool") == ["f.d"]  # kept: nowhere to stage it to


def test_text_output_catalog_and_throttles_in_both_spellings(work: Path) -> None:
    props = work / "p.properties"
    props.write_text(f"pegasus.catalog.replica.output.file = {work / 'out.rc'}\n"
                     "dagman.stagein.maxjobs = 3\ndagman.cleanup.maxjobs = 2\n")
    directory = _plan(work, "--output-dir", str(work / "out"), "--conf", str(props))
    dag = (directory / "diamond.dag").read_text()
    assert "MAXJOBS stage-in 3\n" in dag and "MAXJOBS cleanup 2\n" in dag and "MAXJOBS stage-out 10\n" in dag
    assert "MAXJOBS registration 1\n" in dag
    _run(directory)
    assert (work / "out.rc").read_text() == f'f.d file://{work}/out/f.d site="local"\n'


def test_a_cleanup_job_follows_a_files_last_users_not_the_jobs_they_follow(work: Path) -> None:
    """Each cleanup job is a child of the users of the files it removes, less those another user of
    the same file descends from -- the stage-in job of f.a (pre reads it), pre as the maker of f.b0
    and f.b1 (the find jobs read them), post as the maker of f.d (its stage-out job follows it) --
    as Pegasus drops a cleanup job's redundant edges."""
    record = plan_json(_plan(work, "--output-dir", str(work / "out")))
    jobs = {job["id"]: job for job in record["jobs"]}  # type: ignore[attr-defined]

    def name(job_id: str) -> str:
        job = jobs[job_id]
        return job["type"] if not job["tasks"] else "+".join(job["tasks"])
    parents: dict[str, set[str]] = {}
    for parent, child in record["edges"]:  # type: ignore[attr-defined]
        if jobs[child]["type"] == "cleanup":
            parents.setdefault(child, set()).add(name(parent))
    assert sorted(map(sorted, parents.values())) == [["find0", "find1"], ["post", "stage_out"], ["pre"]]


def test_stage_in_jobs_per_level_follow_the_clusters_profile(tmp_path: Path) -> None:
    from Pegasus.api import File, Job, ReplicaCatalog, Workflow

    work = tmp_path / "w"
    work.mkdir()
    catalogs(work)
    wf = Workflow("wide")
    rc = ReplicaCatalog()
    for i in range(25):
        (work / "input" / f"in{i}").write_text(f"{i}\n")
        rc.add_replica("local", f"in{i}", str(work / "input" / f"in{i}"))
        wf.add_jobs(Job("tool", _id=f"j{i}").add_args("-i", File(f"in{i}"), "-o", File(f"o{i}"))
                    .add_inputs(File(f"in{i}")).add_outputs(File(f"o{i}")))
    rc.write(str(work / "replicas.yml"))
    wf.write(str(work / "workflow.yml"))
    assert job_types(_plan(work))["stage_in"] == 3  # ceil(25/10)
    assert job_types(_plan(work, "-D", "pegasus.stagein.clusters=1"))["stage_in"] == 1
    types = job_types(_plan(work, "--output-dir", str(work / "out")))
    assert types["stage_out"] == 3 and types["register"] == 1 and types["cleanup"] == 5  # ceil(25/5)
    # one stage-in and one stage-out job share the level of the 25 compute jobs: each compute job, not
    # the data job, is the last user of its files, so the files still spread over ceil(25/5) jobs
    single = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.stagein.clusters=1",
                   "-D", "pegasus.stageout.clusters=1")
    assert job_types(single) == {**types, "stage_in": 1, "stage_out": 1}
    sized = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.file.cleanup.clusters.size=25")
    assert job_types(sized)["cleanup"] == 2  # 50 files (25 inputs, 25 outputs), 25 a job


def test_checksums_from_the_catalog_go_into_the_transfer_list(work: Path) -> None:
    digest = "0" * 64
    (work / "replicas.yml").write_text(
        f"pegasus: '5.0'\nreplicas:\n- lfn: f.a\n  pfns:\n  - {{site: local, pfn: '{work}/input/f.a'}}\n"
        f"  checksum: {{sha256: '{digest}'}}\n")
    directory = _plan(work)
    (entry,) = _transfer_list(directory, "stage_in")
    assert entry["checksum"] == {"sha256": digest} and entry["linkage"] == "input"


def _transfer_list(directory: Path, kind: str) -> list[dict[str, object]]:
    import json

    return [entry for text in data_lists(directory, kind) for entry in json.loads(text)]


def test_concurrency_limits_name_each_job_type(work: Path) -> None:
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.condor.concurrency.limits=true",
                      "-D", "sheaf.submit.shared=false")
    subs = {path.stem: path.read_text() for path in directory.glob("jobs/*/*.sub")}
    assert "concurrency_limits = pegasus_transfer.stagein" in subs["stage_in_local_condorpool_1_0"]
    assert "concurrency_limits = pegasus_compute" in subs["tool_pre"]
    assert any("concurrency_limits = pegasus_auxillary.cleanup" in text for text in subs.values())


def test_an_unknown_data_configuration_is_one_message(work: Path) -> None:
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                 "-D", "pegasus.data.configuration=bogus")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pegasus.data.configuration" in done.stderr and not (work / "submit").exists()


def test_condorio_jobs_run_in_sandboxes_fed_from_the_staging_site(work: Path) -> None:
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=condorio")
    staging = directory / "scratch" / "local"  # the submit host's working directory
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/tool_post.sub")]
    assert "should_transfer_files = YES\n" in sub and f"initialdir = {staging}\n" in sub
    (inputs,) = [line.split(" = ", 1)[1] for line in sub.splitlines()
                 if line.startswith("transfer_input_files")]
    assert sorted(inputs.split(",")) == [f"{staging}/f.c0", f"{staging}/f.c1"]  # the API's uses: a set
    assert "transfer_output_files = f.d\n" in sub
    _run(directory)  # the tool reads its inputs from its working directory: the sandbox must hold them
    assert (work / "out" / "f.d").read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"
    assert os.listdir(staging) == [] and not (directory / "scratch" / "condorpool").exists()


@pytest.mark.parametrize("technique", ["horizontal", "whole"])
def test_condorio_clusters_run_in_sandboxes_and_deliver(work: Path, technique: str) -> None:
    """A cluster's command is resolved once: its input file is written once, whether its submit
    description is shared or, with HTCondor file transfer, its own."""
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=condorio",
                      "--cluster", technique, "-D", "pegasus.clusters.size=2")
    assert job_types(directory)["cluster"] == 1
    (cluster_in,) = directory.glob("jobs/*/merge_*.in")
    assert cluster_in.read_text().count("tool") >= 2
    _run(directory)
    assert (work / "out" / "f.d").read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"


def _lite_tools() -> bool:
    from sheaf.jobtools import transfer

    return hasattr(transfer, "load_transfer_list")


def test_nonsharedfs_jobs_run_under_sheaf_lite_with_a_manifest(work: Path) -> None:
    import json

    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=nonsharedfs",
                      "-D", "pegasus.transfer.lite.threads=3", "--staging-site", "condorpool=local")
    staging = directory / "scratch" / "local"
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/tool_post.sub")]
    manifest_path = next(directory.glob("jobs/*/tool_post.lite.json"))
    assert "sheaf-lite" in sub and f'"{manifest_path} -- {work}/tool.py -i f.c0 f.c1 -o f.d"' in sub
    manifest = json.loads(manifest_path.read_text())
    assert manifest["threads"] == 3 and manifest["integrity"] == "full" and manifest["keep_workdir"] is False
    assert sorted((e["src_urls"][0]["url"], e["dest_urls"][0]["url"]) for e in manifest["inputs"]) == [
        (f"file://{staging}/f.c0", "file:f.c0"), (f"file://{staging}/f.c1", "file:f.c1")]
    assert [(e["src_urls"][0]["url"], e["dest_urls"][0]["url"]) for e in manifest["outputs"]] == [
        ("file:f.d", f"file://{staging}/f.d")]
    if not _lite_tools():
        pytest.skip("needs sheaf-transfer JSON lists")
    _run(directory)
    assert (work / "out" / "f.d").read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"
    assert os.listdir(staging) == []


def test_nonsharedfs_jobs_redirect_their_streams_in_the_job_directory(work: Path) -> None:
    """A job's stdin and stdout files under nonsharedfs are files of sheaf-lite's job directory: the
    stdin file is pulled there and the stdout file pushed from there, as PegasusLite does."""
    from Pegasus.api import File as PFile
    from Pegasus.api import Job, Transformation, TransformationCatalog, Workflow

    TransformationCatalog().add_transformations(
        Transformation("cat", site="condorpool", pfn="/bin/cat", is_stageable=False)).write(
            str(work / "transformations.yml"))
    Workflow("streams").add_jobs(Job("cat").set_stdin(PFile("f.a")).set_stdout(PFile("copy.txt"))).write(
        str(work / "workflow.yml"))
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=nonsharedfs",
                      "--staging-site", "condorpool=local")
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/cat_*.sub")]
    assert "copy.txt" not in sub and "f.a" not in sub  # no HTCondor redirection: sheaf-lite's
    if not _lite_tools():
        pytest.skip("needs sheaf-transfer JSON lists")
    _run(directory)
    assert (work / "out" / "copy.txt").read_text() == "A\n"


def test_a_dead_first_replica_falls_through_to_the_second(work: Path) -> None:
    (work / "replicas.yml").write_text(
        "pegasus: '5.0'\nreplicas:\n- lfn: f.a\n  pfns:\n"
        f"  - {{site: local, pfn: 'file://{work}/gone/f.a'}}\n  - {{site: local, pfn: '{work}/input/f.a'}}\n")
    directory = _plan(work, "--output-dir", str(work / "out"))
    (entry,) = _transfer_list(directory, "stage_in")
    assert [u["url"] for u in entry["src_urls"]] == [f"file://{work}/gone/f.a", f"file://{work}/input/f.a"]
    if not _lite_tools():
        pytest.skip("needs sheaf-transfer JSON lists")
    _run(directory)
    assert (work / "out" / "f.d").exists()


def test_a_corrupted_input_is_caught_by_its_checksum(work: Path) -> None:
    import hashlib

    digest = hashlib.sha256(b"not what is there\n").hexdigest()
    (work / "replicas.yml").write_text(
        f"pegasus: '5.0'\nreplicas:\n- lfn: f.a\n  pfns:\n  - {{site: local, pfn: '{work}/input/f.a'}}\n"
        f"  checksum: {{sha256: '{digest}'}}\n")
    directory = _plan(work, "--output-dir", str(work / "out"))
    if not _lite_tools():
        pytest.skip("needs sheaf-transfer JSON lists")
    done = sheaf(directory, "run", str(directory))
    assert done.returncode == 1 and not (work / "out" / "f.d").exists()
    errors = "".join(p.read_text() for p in directory.glob("jobs/*/stage_in_*.err"))
    assert "f.a" in errors and digest in errors


def test_bypass_reads_the_replica_in_place_under_condorio(work: Path) -> None:
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=condorio",
                      "-D", "pegasus.transfer.bypass.input.staging=true")
    assert "stage_in" not in job_types(directory)  # f.a is not copied
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/tool_pre.sub")]
    assert f"transfer_input_files = {work}/input/f.a\n" in sub  # HTCondor takes it from the replica
    _run(directory)
    assert (work / "out" / "f.d").exists() and (work / "input" / "f.a").read_text() == "A\n"
    shared = _plan(work, "--output-dir", str(work / "out"), "--force",
                   "-D", "pegasus.transfer.bypass.input.staging=true")
    assert job_types(shared)["stage_in"] == 1  # sharedfs: jobs read scratch by name, nothing bypassed


def test_under_condorio_a_replica_named_otherwise_than_its_lfn_is_staged_not_bypassed(work: Path) -> None:
    """HTCondor puts a file it moves into a sandbox under the file's own name; a job reads its input
    by lfn (Pegasus's job pulls a bypassed input into its lfn). A replica whose name differs from its
    lfn (a generator naming lfns by directory: a_conf.txt for a/conf.txt) is staged in under the lfn;
    one named as its lfn is still read in place."""
    from Pegasus.api import File, Job, ReplicaCatalog, Workflow

    (work / "input" / "a").mkdir()
    (work / "input" / "a" / "conf.txt").write_text("C\n")
    ReplicaCatalog().add_replica("local", "f.a", str(work / "input" / "f.a")).add_replica(
        "local", "a_conf.txt", f"file://{work}/input/a/conf.txt").write(str(work / "replicas.yml"))
    fa, conf, fd = File("f.a"), File("a_conf.txt"), File("f.d")
    Workflow("renamed").add_jobs(Job("tool", _id="only").add_args("-i", fa, conf, "-o", fd)
                                 .add_inputs(fa, conf).add_outputs(fd)).write(str(work / "workflow.yml"))
    directory = _plan(work, "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=condorio",
                      "-D", "pegasus.transfer.bypass.input.staging=true")
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/tool_only.sub")]
    line = next(x for x in sub.splitlines() if x.startswith("transfer_input_files = "))
    reads = line.split(" = ", 1)[1].split(",")
    assert f"{work}/input/f.a" in reads and f"{work}/input/a/conf.txt" not in reads
    assert [r for r in reads if r.endswith("/a_conf.txt")]  # the staged copy, under its lfn
    _run(directory)
    assert (work / "out" / "f.d").read_text() == "A\nC\nf.d\n"


def test_the_replica_output_mapper_delivers_each_output_where_its_catalog_says(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pegasus.dir.storage.mapper = Replica: a regex output map (as a Pegasus 4 properties file names
    it, ${VAR} in it from the environment) places each staged-out file; registered there too."""
    monkeypatch.setenv("PROJECT", str(work / "project"))
    (work / "output.map").write_text('# where outputs go\n'
                                     '(.*)\\.d file://${PROJECT}/results/[1]/[0] site="local" regex="true"\n')
    (work / "mapper.properties").write_text("pegasus.dir.storage.mapper = Replica\n"
                                            "pegasus.dir.storage.mapper.replica = Regex\n"
                                            "pegasus.dir.storage.mapper.replica.file = ./output.map\n")
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                 "-o", "local", "--conf", "mapper.properties")
    directory = plan_dir(done)
    assert "storage.mapper" not in done.stderr
    _run(directory)
    delivered = work / "project" / "results" / "f" / "f.d"
    assert delivered.read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"
    rc = read_replica_catalog(directory / "diamond.replicas.yml")
    assert [p.pfn for r in rc if r.lfn == "f.d" for p in r.pfns] == [f"file://{delivered}"]
    # an output the catalog does not place fails the plan, as Pegasus's mapper does
    (work / "output.map").write_text('(.*)\\.x file:///nowhere/[0] site="local" regex="true"\n')
    refused = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                    "-o", "local", "--conf", "mapper.properties")
    assert refused.returncode == 2 and "'f.d'" in refused.stderr and "Traceback" not in refused.stderr
    (work / "output.map").unlink()
    missing = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                    "-o", "local", "--conf", "mapper.properties")
    assert missing.returncode == 2 and "output.map" in missing.stderr and "Traceback" not in missing.stderr


@pytest.mark.parametrize(("lines", "said"), [
    ("pegasus.dir.storage.mapper = Replica\n",
     "mapper.properties:1: the Replica output mapper names no catalog"),
    (("pegasus.dir.storage.mapper = Replica\npegasus.dir.storage.mapper.replica = JDBCRC\n"
      "pegasus.dir.storage.mapper.replica.file = ./output.map\n"),
     "mapper.properties:2: unknown backend of the Replica output mapper"),
])
def test_a_replica_output_mapper_without_a_catalog_it_can_read_is_refused(work: Path, lines: str,
                                                                          said: str) -> None:
    (work / "output.map").write_text('(.*) file:///results/[0] site="local" regex="true"\n')
    (work / "mapper.properties").write_text(lines)
    refused = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                    "-o", "local", "--conf", "mapper.properties")
    assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (work / "submit").exists()


def test_development_mode_plans_no_retries_one_transfer_attempt_and_no_integrity_checks(work: Path) -> None:
    """pegasus.mode = development, as a Pegasus user's properties set it (the API's Properties):
    jobs are not retried, transfers try once, held jobs are removed after 30 s; the run delivers."""
    (work / "pegasus.properties").write_text("pegasus.mode = development\n")
    directory = _plan(work, "--output-dir", str(work / "out"))
    dag = (directory / "diamond.dag").read_text()  # the jobs' descriptions are in it
    assert "\nRETRY " not in dag
    assert "--attempts 1" in dag and "--integrity none" in dag
    assert "periodic_remove = (JobStatus == 5) && ((CurrentTime - EnteredCurrentStatus) > 30)" in dag
    _run(directory)
    assert (work / "out" / "f.d").exists()


def test_a_file_made_on_one_site_and_read_on_another_travels_by_inter_site_job(tmp_path: Path) -> None:
    from Pegasus.api import (
        Directory,
        File,
        FileServer,
        Job,
        Operation,
        Site,
        SiteCatalog,
        Transformation,
        TransformationCatalog,
        Workflow,
    )

    work = tmp_path / "w"
    work.mkdir()
    catalogs(work)
    exe = str(work / "tool.py")
    sites = SiteCatalog().add_sites(Site("local"))
    for name in ("one", "two"):
        sites.add_sites(Site(name).add_directories(Directory(Directory.SHARED_SCRATCH, str(work / name))
                                                   .add_file_servers(FileServer(f"file://{work / name}",
                                                                                Operation.ALL))))
    sites.write(str(work / "sites.yml"))
    tc = TransformationCatalog().add_transformations(
        Transformation("first", site="one", pfn=exe, is_stageable=False),
        Transformation("second", site="two", pfn=exe, is_stageable=False))
    tc.write(str(work / "transformations.yml"))
    wf = Workflow("two-sites")
    wf.add_jobs(Job("first", _id="a").add_args("-i", "f.a", "-o", "f.b").add_inputs(File("f.a"))
                .add_outputs(File("f.b"), stage_out=False, register_replica=False))
    wf.add_jobs(Job("second", _id="b").add_args("-i", "f.b", "-o", "f.c").add_inputs(File("f.b"))
                .add_outputs(File("f.c")))
    wf.write(str(work / "workflow.yml"))
    directory = plan_dir(sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "one,two",
                               "--output-dir", str(work / "out")))
    assert job_types(directory)["inter_site"] == 1
    (entry,) = _transfer_list(directory, "inter_site")
    assert entry["linkage"] == "inter" and entry["dest_urls"][0]["url"].startswith(f"file://{work}/two/")
    assert "CATEGORY stage_inter_one_two_1_0 stage-inter" in (directory / "two-sites.dag").read_text()
    _run(directory)
    assert (work / "out" / "f.c").read_text() == "A\nf.b\nf.c\n"
    assert [name for side in ("one", "two") for _, _, names in os.walk(work / side) for name in names] == []


@pytest.mark.parametrize("form", ["yaml", "dax"])
def test_automatic_clustering_with_data_staging_delivers_the_outputs(work: Path, form: str) -> None:
    """``--cluster auto`` on a staged plan, from the 5.0 YAML and from the same workflow as a 4.x DAX:
    the findrange level becomes clusters, the run delivers the output and leaves scratch clean."""
    from sheaf.formats import read_workflow
    from sheaf.formats._dax import write_dax

    width = 12
    diamond(work, width)
    name = "workflow.yml"
    if form == "dax":
        write_dax(read_workflow(work / "workflow.yml"), work / "workflow.dax")
        name = "workflow.dax"
    out = work / "out"
    done = sheaf(work, "plan", name, "--dir", str(work / "submit"), "-s", "condorpool", "--output-dir",
                 str(out), "--cluster", "auto", "--overhead", "30", "--slots", "3", "-D", "pegasus.runtime=1")
    directory = plan_dir(done)
    assert "auto clusters:" in done.stdout and "predicted makespan:" in done.stdout
    plan = plan_json(directory)
    chosen = plan["autocluster"]["groups"]  # type: ignore[index]
    assert any(group["tasks"] == width and 1 <= group["jobs"] < width for group in chosen)
    types = job_types(directory)
    assert types["cluster"] >= 1 and types["stage_in"] == 1 and types["stage_out"] == 1
    _run(directory)
    assert (out / "f.d").read_text() == "".join(f"A\nf.b{i}\nf.c{i}\n" for i in range(width)) + "f.d\n"
    assert os.listdir(directory / "scratch" / "condorpool") == []


def _site_configurations(work: Path, **configurations: str) -> None:
    """The site catalog with a ``data.configuration`` profile on each site named (others: none)."""
    from Pegasus.api import Site, SiteCatalog

    sites = [Site(name) for name in ("local", "condorpool", "other")]
    for site in sites:
        if site.name in configurations:
            site.add_pegasus_profile(data_configuration=configurations[site.name])
    SiteCatalog().add_sites(*sites).write(str(work / "sites.yml"))


def test_a_sites_data_configuration_profile_wins_over_the_property(work: Path) -> None:
    """Pegasus reads data.configuration from the site catalog too, over the property, for the site's
    jobs: condorpool's condorio plans (and runs) its jobs in sandboxes, the property saying sharedfs."""
    _site_configurations(work, condorpool="condorio")
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool",
                 "--output-dir", str(work / "out"), "-D", "pegasus.data.configuration=sharedfs")
    directory = plan_dir(done)
    assert "data.configuration" not in done.stderr
    (sub,) = [p.read_text() for p in directory.glob("jobs/*/tool_post.sub")]
    assert "should_transfer_files = YES\n" in sub and "transfer_output_files = f.d\n" in sub
    _run(directory)
    assert (work / "out" / "f.d").read_text() == "A\nf.b0\nf.c0\nA\nf.b1\nf.c1\nf.d\n"


def test_sites_of_different_data_configurations_are_planned_with_the_propertys_and_said_so(
        work: Path) -> None:
    from Pegasus.api import Transformation, TransformationCatalog, TransformationSite

    _site_configurations(work, condorpool="condorio", other="nonsharedfs")
    exe = str(work / "tool.py")
    tool = Transformation("tool", site="condorpool", pfn=exe, is_stageable=False)
    tool.add_sites(TransformationSite("other", exe, is_stageable=False))
    TransformationCatalog().add_transformations(tool).write(str(work / "transformations.yml"))
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool,other",
                 "-D", "pegasus.data.configuration=sharedfs", "-D", "pegasus.selector=RoundRobin")
    directory = plan_dir(done)
    assert ("the sites' data configurations differ (condorpool: condorio, other: nonsharedfs)"
            in done.stderr), done.stderr
    assert not any("should_transfer_files = YES" in p.read_text() for p in directory.glob("jobs/*/*.sub"))


def test_an_unknown_data_configuration_of_a_site_is_one_message(work: Path) -> None:
    _site_configurations(work, condorpool="shared")
    done = sheaf(work, "plan", "workflow.yml", "--dir", str(work / "submit"), "-s", "condorpool")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown data configuration of site condorpool" in done.stderr and "shared" in done.stderr
    assert not (work / "submit").exists()
