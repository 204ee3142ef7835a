"""What an audit with Pegasus's own test workflows (``test/core``) found, as those workflows write
their inputs -- through ``Pegasus.api`` -- planned and run for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from Pegasus.api import (
    Directory,
    File,
    FileServer,
    Job,
    Operation,
    Properties,
    ReplicaCatalog,
    Site,
    SiteCatalog,
    Transformation,
    TransformationCatalog,
    Workflow,
)
from pegasus_inputs import SHEAF, plan_into, recorder, run

from sheaf.formats import read_replica_catalog


def _clustered_pair(tmp: Path, site: Site) -> None:
    keg = recorder(tmp / "pegasus-keg")
    SiteCatalog().add_sites(site, Site("local")).write(str(tmp / "sites.yml"))
    keg_tr = Transformation("keg", site=site.name, pfn=str(keg)).add_pegasus_profile(clusters_size=2)
    TransformationCatalog().add_transformations(keg_tr).write(str(tmp / "transformations.yml"))
    Workflow("pair").add_jobs(Job(keg_tr).add_args("-a", "one"), Job(keg_tr).add_args("-a", "two")).write(
        str(tmp / "workflow.yml"))


def test_pegasus_home_of_another_machine_clusters_with_sheafs_own_aggregator(tmp_path: Path) -> None:
    """Site catalogs carry the Pegasus install of the machine they were written on
    (``PEGASUS_HOME: /usr`` in test/core's 019, 034 and 010): on a site the embedded engine runs,
    a ``bin/pegasus-cluster`` that is not there must not become the cluster's executable."""
    site = Site("condorpool").add_env(PEGASUS_HOME=str(tmp_path / "no-pegasus-here"))
    _clustered_pair(tmp_path, site)
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, clustering=["horizontal"])
    merge = next(job for job in exec_wf.jobs if job.type == "cluster")
    assert "pegasus-cluster" not in str(merge.executable)
    assert any("PEGASUS_HOME" in w and "no-pegasus-here" in w for w in exec_wf.warnings)
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr


def test_pegasus_home_with_pegasus_installed_is_still_used(tmp_path: Path) -> None:
    home = tmp_path / "pegasus"
    (home / "bin").mkdir(parents=True)
    tool = recorder(home / "bin" / "pegasus-cluster")
    _clustered_pair(tmp_path, Site("condorpool").add_env(PEGASUS_HOME=str(home)))
    _, exec_wf = plan_into(tmp_path, "workflow.yml", tmp_path / "plan", clustering=["horizontal"])
    merge = next(job for job in exec_wf.jobs if job.type == "cluster")
    assert merge.executable == str(tool)
    assert not any("PEGASUS_HOME" in w for w in exec_wf.warnings)


#: test/core 032's program: appends the next count to its checkpoint file, fails until the count is 3
COUNTER = f"""#!{sys.executable}
import os, shutil, sys
last = int(open("test.ckpt").read().split()[-1]) if os.path.isfile("test.ckpt") else 0
with open("test.ckpt", "a") as out:
    out.write(f"{{last + 1}}\\n")
if last + 1 < 3:
    sys.exit(1)
shutil.copy("test.ckpt", sys.argv[2])
"""


def _checkpoint_workflow(tmp_path: Path, configuration: str) -> None:
    """One job that counts to 3 over retries, keeping its count in the checkpoint file ``test.ckpt``."""
    program = tmp_path / "checkpoint_test.py"
    program.write_text(COUNTER)
    program.chmod(0o755)
    (tmp_path / "pegasus.properties").write_text(f"pegasus.data.configuration = {configuration}\n"
                                                 "dagman.retry 3\n")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    tr = Transformation("checkpoint", site="local", pfn=f"file://{program}", is_stageable=True)
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    result = File("f.b1")
    job = Job(tr, _id="j1").add_args("-o ", result).add_outputs(result).add_checkpoint(File("test.ckpt"))
    Workflow("chkpoint").add_jobs(job).write(str(tmp_path / "workflow.yml"))


def test_checkpoint_file_under_nonsharedfs_carries_over_to_the_retry(tmp_path: Path) -> None:
    """032-black-chkpoint: under nonsharedfs the checkpoint does not exist before the first attempt
    (its stage-in must not fail the job) and a failed attempt's checkpoint goes back to the staging
    site (the retry, in a fresh job directory, starts from it), as PegasusLite stages them."""
    _checkpoint_workflow(tmp_path, "nonsharedfs")
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 retries" in done.stdout, done.stdout
    staged = next(target.rglob("f.b1"))
    assert staged.read_text() == "1\n2\n3\n"


@pytest.mark.parametrize("configuration", ["condorio", "sharedfs", "nonsharedfs"])
def test_a_checkpoint_file_with_a_replica_is_staged_in(tmp_path: Path, configuration: str) -> None:
    """A checkpoint file is an optional input that is also an output: with a replica (a run resumed from
    an earlier checkpoint) it is staged in and the job starts from it; without one nothing is listed
    for it, and the job makes it -- under every data configuration."""
    _checkpoint_workflow(tmp_path, configuration)
    (tmp_path / "saved.ckpt").write_text("1\n2\n")  # an earlier run got this far
    ReplicaCatalog().add_replica("local", "test.ckpt", str(tmp_path / "saved.ckpt")).write(
        str(tmp_path / "replicas.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 retries" in done.stdout, done.stdout  # it started from the staged checkpoint
    assert next(target.rglob("f.b1")).read_text() == "1\n2\n3\n"
    (tmp_path / "replicas.yml").unlink()  # no replica: nothing to stage, the job starts from scratch
    fresh = tmp_path / "fresh"
    _, planned = plan_into(tmp_path, "workflow.yml", fresh, sites=["condorpool"])
    # under condorio a retry can only start from a checkpoint listed at planning: Pegasus requires one
    warned = [w for w in planned.warnings if "checkpoint file is moved into its job only when" in w]
    assert len(warned) == (configuration == "condorio") and all("test.ckpt of job j1" in w for w in warned)
    descriptions = "".join(path.read_text() for path in [*fresh.glob("*.dag"), *fresh.rglob("*.sub")])
    assert "test.ckpt" not in "".join(line for line in descriptions.splitlines(keepends=True)
                                      if line.strip().startswith("transfer_input_files"))
    if configuration != "condorio":  # HTCondor's sandbox keeps nothing from one attempt to the next
        done = run(fresh)
        assert done.returncode == 0, done.stdout + done.stderr
        assert next(fresh.rglob("f.b1")).read_text() == "1\n2\n3\n"


def test_selector_pfn_profile_names_the_executable_over_the_catalog(tmp_path: Path) -> None:
    """037-black-hints: the catalog names a fake executable on ``local``; each job's selector
    (Pegasus 4 ``hints``) profiles pin it to a site and name the real program there, which Pegasus's
    profile table says overrides any transformation-catalog entry."""
    keg = recorder(tmp_path / "pegasus-keg")
    SiteCatalog().add_sites(Site("fake-site"), Site("CCG"), Site("local")).write(str(tmp_path / "sites.yml"))
    fake = Transformation("preprocess", site="local", pfn=f"file://{tmp_path}/pegasus-keg-fake",
                          is_stageable=True)
    TransformationCatalog().add_transformations(fake).write(str(tmp_path / "transformations.yml"))
    job = Job(fake, _id="j1").add_args("-a", "preprocess")
    job.add_selector_profile(execution_site="CCG", pfn=str(keg), grid_job_type="auxillary")
    Workflow("hints").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    _, exec_wf = plan_into(tmp_path, "workflow.yml", target, sites=["fake-site", "CCG"])
    assert [(j.site, j.executable) for j in exec_wf.jobs if j.type == "compute"] == [("CCG", str(keg))]
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(next(target.rglob("argv.json")).read_text()) == ["-a", "preprocess"]


@pytest.mark.parametrize("configuration", ["condorio", "sharedfs", "nonsharedfs"])
def test_a_checkpoint_file_staged_in_and_changed_is_staged_out(tmp_path: Path, configuration: str) -> None:
    """The staged-in checkpoint file is changed by its job, so its stage-in keeps no integrity record
    (``"integrity": false``): the stage-out of the changed file is not held to the staged-in one's."""
    _checkpoint_workflow(tmp_path, configuration)
    (tmp_path / "saved.ckpt").write_text("1\n2\n")
    ReplicaCatalog().add_replica("local", "test.ckpt", str(tmp_path / "saved.ckpt")).write(
        str(tmp_path / "replicas.yml"))
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    argv = [SHEAF, "plan", "workflow.yml", "-s", "condorpool", "--output-dir", str(out), "--dir",
            str(tmp_path / "submit")]
    planned = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
                             check=False)
    assert planned.returncode == 0, planned.stderr
    target = Path(planned.stdout.split("submit directory: ", 1)[1].split()[0])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "f.b1").read_text() == "1\n2\n3\n" and (out / "test.ckpt").read_text() == "1\n2\n3\n"


def test_documented_keys_sheaf_does_not_honour_are_warned_about(tmp_path: Path) -> None:
    """042-kswrapper (a kickstart wrapper as gridstart.path, pegasus.gridstart.arguments), 053-profile-exp
    (queue.expr, memory.expr), 032 (pegasus.transfer.lite.arguments): Pegasus documents these, sheaf
    ignores them -- never in silence.  Keys sheaf honours are not warned about."""
    keg = recorder(tmp_path / "pegasus-keg")
    props = Properties()
    props["pegasus.gridstart.arguments"] = "-f"
    props["pegasus.transfer.lite.arguments"] = "-m 1"
    props["pegasus.dir.storage.deep"] = "true"
    props["pegasus.dir.storage.mapper"] = "Flat"  # the default: nothing to say
    props["pegasus.data.configuration"] = "sharedfs"  # a property sheaf honours
    props.write(str(tmp_path / "pegasus.properties"))
    pool = Site("condorpool").add_pegasus_profile(grid_start_path=f"{tmp_path}/ks-wrapper", style="condor",
                                                  data_configuration="sharedfs")  # honoured on a site
    SiteCatalog().add_sites(pool, Site("local")).write(str(tmp_path / "sites.yml"))
    tr = Transformation("preprocess", site="condorpool", pfn=str(keg))
    tr.add_pegasus_profile(queue="unknown", queue_expr='"scavenge" if job_retry > 0 else "unknown"')
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    job = Job(tr, _id="j1").add_pegasus_profile(memory="1 GB", memory_expr="pegasus_memory_mb * 2",
                                                data_configuration="condorio")  # Pegasus's scope: not a job
    Workflow("unhonoured").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    inputs, _ = plan_into(tmp_path, "workflow.yml", tmp_path / "plan")
    said = "\n".join(inputs.warnings)
    for key, where in (("gridstart.arguments", "the properties"), ("gridstart.path", "site condorpool"),
                       ("transfer.lite.arguments", "the properties"), ("memory.expr", "job j1"),
                       ("queue.expr", "transformation preprocess"),
                       ("data.configuration", "job j1")):
        assert f"'{key}' is not honoured" in said and where in said.split(f"'{key}'", 1)[1].split("\n")[0]
    assert "pegasus.dir.storage.deep = true" in said and "storage.mapper" not in said
    assert "'queue'" not in said and "'memory'" not in said and "'style'" not in said
    assert "site condorpool" not in said.split("'data.configuration'", 1)[1].split("\n")[0]


def test_pegasus_register_false_makes_no_register_jobs(tmp_path: Path) -> None:
    """pegasus.register = false turns registration off, whatever the outputs' flags say."""
    keg = recorder(tmp_path / "pegasus-keg")
    (tmp_path / "pegasus.properties").write_text("pegasus.register = false\n")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    tr = Transformation("keg", site="condorpool", pfn=str(keg))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    Workflow("noreg").add_jobs(Job(tr).add_args("-o", "argv.json").add_outputs(File("argv.json"),
                                                                               register_replica=True)) \
        .write(str(tmp_path / "workflow.yml"))
    done = subprocess.run([SHEAF, "plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p",
                           "--output-sites", "local"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    kinds = [job["type"] for job in json.loads((tmp_path / "runs" / "p" / "plan.json").read_text())["jobs"]]
    assert "stage_out" in kinds and "register" not in kinds


def test_every_output_site_gets_the_outputs(tmp_path: Path) -> None:
    """001-black-diamond-vanilla-condor-5.0API plans with output_sites=[local, the pool]: pegasus-plan
    transfers the outputs to each; cleanup (inplace) waits for every copy."""
    keg = recorder(tmp_path / "pegasus-keg")
    sites = []
    for name in ("local", "archive"):
        storage = Directory(Directory.LOCAL_STORAGE, str(tmp_path / f"{name}-out"))
        storage.add_file_servers(FileServer(f"file://{tmp_path}/{name}-out", Operation.ALL))
        sites.append(Site(name).add_directories(storage))
    SiteCatalog().add_sites(Site("condorpool"), *sites).write(str(tmp_path / "sites.yml"))
    tr = Transformation("keg", site="condorpool", pfn=str(keg))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    out = File("argv.json").add_metadata(color="red")  # registered with the file, as Pegasus does
    Workflow("two").add_jobs(Job(tr).add_args("x").add_outputs(out, register_replica=True)).write(
        str(tmp_path / "workflow.yml"))
    argv = ["plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", "--sites", "condorpool",
            "--output-sites", "local,archive"]
    planned = subprocess.run([SHEAF, *argv], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert planned.returncode == 0, planned.stderr
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("local", "archive"):
        assert json.loads((tmp_path / f"{name}-out" / "argv.json").read_text()) == ["x"]
    (catalog,) = (tmp_path / "runs" / "p").glob("*.replicas.yml")  # the submit directory's output catalog
    registered = catalog.read_text()
    assert "local-out/argv.json" in registered and "archive-out/argv.json" in registered
    assert [dict(r.metadata) for r in read_replica_catalog(catalog)] == [{"color": "red"}] * 2  # a site each
    for site, message in (("nosuchout", "the output site is not in the site catalog"),
                          ("condorpool", "the output site has no local storage directory")):
        refused = subprocess.run([SHEAF, *argv[:5], "q", *argv[6:-1], site], cwd=tmp_path,
                                 capture_output=True, text=True, check=False)
        assert refused.returncode == 2 and message in refused.stderr and site in refused.stderr


#: copies the file after -i to the file after -o (pegasus-keg's way of naming them)
COPY = f"""#!{sys.executable}
import shutil, sys
shutil.copy(sys.argv[sys.argv.index("-i") + 1], sys.argv[sys.argv.index("-o") + 1])
"""


def test_deep_lfns_under_condorio_keep_their_directories(tmp_path: Path) -> None:
    """048-black-deep-condorio-local: LFNs with directories (``deep/f.a``) under condorio; HTCondor
    places transferred files by base name unless told to keep their paths, as Pegasus has it do."""
    copy = tmp_path / "copy.py"
    copy.write_text(COPY)
    copy.chmod(0o755)
    (tmp_path / "pegasus.properties").write_text("pegasus.data.configuration = condorio\n")
    (tmp_path / "in" / "deep").mkdir(parents=True)
    (tmp_path / "in" / "deep" / "f.a").write_text("deep input\n")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    tr = Transformation("copy", site="condorpool", pfn=str(copy))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    ReplicaCatalog().add_replica("local", "deep/f.a", str(tmp_path / "in" / "deep" / "f.a")).write(
        str(tmp_path / "replicas.yml"))
    fa, fb, fc = File("deep/f.a"), File("deep/f.b"), File("f.c")
    Workflow("deep").add_jobs(
        Job(tr, _id="one").add_args("-i", fa, "-o", fb).add_inputs(fa).add_outputs(fb),
        Job(tr, _id="two").add_args("-i", fb, "-o", fc).add_inputs(fb).add_outputs(fc),
    ).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["condorpool"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    staging = target / "scratch" / "local"
    assert (staging / "deep" / "f.b").read_text() == (staging / "f.c").read_text() == "deep input\n"


def test_fully_reused_workflow_still_delivers_its_outputs(tmp_path: Path) -> None:
    """022-data-reuse-full-a: f.d is in the replica catalog, so every compute job is pruned; the
    workflow's output still goes to the output site (only stage-out and register jobs remain)."""
    keg = recorder(tmp_path / "pegasus-keg")
    storage = Directory(Directory.SHARED_STORAGE, str(tmp_path / "outputs"))
    storage.add_file_servers(FileServer(f"file://{tmp_path}/outputs", Operation.ALL))
    SiteCatalog().add_sites(Site("condorpool"), Site("local").add_directories(storage)).write(
        str(tmp_path / "sites.yml"))
    (tmp_path / "f.a").write_text("input\n")
    (tmp_path / "f.d").write_text("This is preexisting output file for the workflow")
    rc = ReplicaCatalog().add_replica("local", "f.a", str(tmp_path / "f.a"))
    rc.add_replica("local", "f.d", str(tmp_path / "f.d")).write(str(tmp_path / "replicas.yml"))
    tr = Transformation("keg", site="condorpool", pfn=str(keg))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    fa, fb, fd = File("f.a"), File("f.b"), File("f.d")
    Workflow("reused").add_jobs(
        Job(tr, _id="one").add_args(fa, fb).add_inputs(fa).add_outputs(fb, stage_out=False),
        Job(tr, _id="two").add_args(fb, fd).add_inputs(fb).add_outputs(fd, register_replica=True),
    ).write(str(tmp_path / "workflow.yml"))
    argv = ["plan", "workflow.yml", "--dir", "runs", "--relative-dir", "p", "--sites", "condorpool",
            "--output-sites", "local"]
    planned = subprocess.run([SHEAF, *argv], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads((tmp_path / "runs" / "p" / "plan.json").read_text())
    assert sorted(job["type"] for job in plan["jobs"]) == ["register", "stage_out"]
    done = run(tmp_path / "runs" / "p")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "outputs" / "f.d").read_text() == "This is preexisting output file for the workflow"
    # registered in the submit directory's output catalog; read as the input catalog, f.d is at the
    # output site already and nothing is left to stage out
    (catalog,) = (tmp_path / "runs" / "p").glob("*.replicas.yml")
    again = subprocess.run([SHEAF, *argv[:5], "q", *argv[6:], "--rc", str(catalog)], cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    assert "stage_out" not in (tmp_path / "runs" / "q" / "plan.json").read_text()


def test_pegasus_exitcode_options_in_dagman_post_arguments_do_not_fail_the_job(tmp_path: Path) -> None:
    """053-profile-exp sets ``dagman.post.arguments = -U`` (pegasus-exitcode's --update-submit-file);
    a job whose POST script is the exit-code check must still succeed."""
    keg = recorder(tmp_path / "pegasus-keg")
    (tmp_path / "pegasus.properties").write_text("dagman.post.arguments= -U -l exitcode.log\n")
    SiteCatalog().add_sites(Site("condorpool"), Site("local")).write(str(tmp_path / "sites.yml"))
    tr = Transformation("keg", site="condorpool", pfn=str(keg))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    job = Job(tr).add_args("-a", "x").add_pegasus_profile(exitcode_failure_msg="Traceback")
    Workflow("post").add_jobs(job).write(str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target)
    assert " -U " in next(target.glob("*.dag")).read_text()
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr


def test_sharedfs_jobs_work_in_scratch_whatever_file_transfer_the_site_asks(tmp_path: Path) -> None:
    """010-runtime-clustering's sharedfs site sets condor should_transfer_files = Yes: under sharedfs
    Pegasus's kickstart changes into the shared scratch anyway, so the job must find its inputs there
    rather than run in an empty sandbox."""
    copy = tmp_path / "copy.py"
    copy.write_text(COPY)
    copy.chmod(0o755)
    pool = Site("sharedfs").add_condor_profile(should_transfer_files="Yes", universe="vanilla",
                                                when_to_transfer_output="ON_EXIT")
    SiteCatalog().add_sites(pool, Site("local")).write(str(tmp_path / "sites.yml"))
    (tmp_path / "f.a").write_text("shared\n")
    replicas = ReplicaCatalog().add_replica("sharedfs", "f.a", str(tmp_path / "f.a"))
    replicas.write(str(tmp_path / "replicas.yml"))
    tr = Transformation("copy", site="sharedfs", pfn=str(copy))
    TransformationCatalog().add_transformations(tr).write(str(tmp_path / "transformations.yml"))
    fa, fb = File("f.a"), File("f.b")
    Workflow("inplace").add_jobs(Job(tr).add_args("-i", fa, "-o", fb).add_inputs(fa).add_outputs(fb)).write(
        str(tmp_path / "workflow.yml"))
    target = tmp_path / "plan"
    plan_into(tmp_path, "workflow.yml", target, sites=["sharedfs"])
    done = run(target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "scratch" / "sharedfs" / "f.b").read_text() == "shared\n"
    assert "should_transfer_files" not in "".join(p.read_text() for p in target.rglob("copy_*.sub"))
